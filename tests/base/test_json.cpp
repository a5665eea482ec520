// base/json.h: nlohmann's JSON with tessel's strictness (a key given twice is an error),
// errors as values that say where, exact integers past 2^53, and output that is always valid
// JSON (U+FFFD for bytes that are not UTF-8, null for NaN and infinity).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "base/json.h"

using namespace tessel;

namespace {

std::string parse_error_of(const std::string &text) {
  auto parsed = parse_json(text);
  return parsed.ok() ? std::string("parsed") : parsed.error().message;
}

}  // namespace

TEST_CASE("json: values, nesting, key order, exact integers", "[base][json]") {
  auto v = parse_json(R"( {"a": [1, -2.5e3, true, false, null, {"b": []}], "c": {}, "big": 9007199254740993} )");
  REQUIRE(v.ok());
  const Json &root = v.value();
  REQUIRE(root.is_object());
  CHECK(root.size() == 3);
  CHECK(root.begin().key() == "a");  // key order kept
  const Json &a = *json_find(root, "a");
  REQUIRE(a.size() == 6);
  CHECK(json_int64(a[0]) == 1);
  CHECK(a[1].get<double>() == -2500.0);
  CHECK_FALSE(json_int64(a[1]).has_value());  // written with an exponent: not an integer
  CHECK(a[2].get<bool>());
  CHECK(a[3].is_boolean());
  CHECK(a[4].is_null());
  CHECK(json_find(a[5], "b")->is_array());
  CHECK(json_find(root, "c")->empty());
  CHECK(json_int64(*json_find(root, "big")) == int64_t{9007199254740993});
  CHECK(json_find(root, "nope") == nullptr);
  CHECK(json_find(a, "a") == nullptr);  // not an object
  CHECK(parse_json("0").ok());
  CHECK(parse_json("\"\"").value().get<std::string>().empty());

  CHECK(json_int64(parse_json("-9223372036854775808").value()) == std::numeric_limits<int64_t>::min());
  CHECK(json_int64(parse_json("9223372036854775807").value()) == std::numeric_limits<int64_t>::max());
  CHECK_FALSE(json_int64(parse_json("9223372036854775808").value()).has_value());
  CHECK_FALSE(json_int64(parse_json("1.0").value()).has_value());
  CHECK_FALSE(json_int64(parse_json("\"1\"").value()).has_value());

  // Written and read back, a count beyond 2^53 stays exact.
  const int64_t flops = (int64_t{1} << 60) + 1;
  CHECK(json_int64(parse_json(dump_json(Json(flops))).value()) == flops);
}

TEST_CASE("json: string escapes, \\u and surrogate pairs", "[base][json]") {
  auto v = parse_json(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \u65E5 \ud83d\ude00 \u0000")");
  REQUIRE(v.ok());
  CHECK(v.value().get<std::string>() ==
        std::string("q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80 ") + std::string(1, '\0'));
  // What dump_json writes reads back to the same bytes, on one line.
  const std::string odd = std::string("quote \" backslash \\ slash / newline \n tab \t cr \r nul ") + std::string(1, '\0') +
                          " bell \x07 del \x7f unicode \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  const std::string quoted = dump_json(Json(odd));
  CHECK(quoted.find('\n') == std::string::npos);
  CHECK(quoted.find("\\u0000") != std::string::npos);
  CHECK(quoted.find("\\u0007") != std::string::npos);
  auto back = parse_json(quoted);
  REQUIRE(back.ok());
  CHECK(back.value().get<std::string>() == odd);
}

TEST_CASE("json: bytes that are not UTF-8 are refused on reading and replaced on writing", "[base][json]") {
  CHECK_THAT(parse_error_of("{\"a\":\"\xff\"}"), Catch::Contains("UTF-8"));
  // U+FFFD in place of the bad bytes: the output stays valid JSON.
  CHECK(dump_json(Json("bad \xff byte")) == "\"bad \xef\xbf\xbd byte\"");
  const std::string cut = dump_json(Json("cut \xe2\x82"));
  CHECK_THAT(cut, Catch::StartsWith("\"cut \xef\xbf\xbd"));
  CHECK(parse_json(cut).ok());
  Json object;
  object["key \xc0"] = "value \xfe";
  CHECK(parse_json(dump_json(object, 2)).ok());
}

TEST_CASE("json: numbers are written as the shortest text that reads back exactly", "[base][json]") {
  CHECK(dump_json(Json(0.1)) == "0.1");
  CHECK(dump_json(Json(0.00061)) == "0.00061");
  CHECK(dump_json(Json(int64_t{42})) == "42");
  // JSON has no NaN or infinity.
  CHECK(dump_json(Json(std::nan(""))) == "null");
  CHECK(dump_json(Json(std::numeric_limits<double>::infinity())) == "null");
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> exponent(-300, 300);
  for (int i = 0; i < 2000; ++i) {
    const double d = std::pow(10.0, exponent(random)) * (i % 2 ? -1 : 1);
    CHECK(std::strtod(dump_json(Json(d)).c_str(), nullptr) == d);
    CHECK(parse_json(dump_json(Json(d))).value().get<double>() == d);
  }
}

TEST_CASE("json: a key given twice in one object is an error", "[base][json]") {
  CHECK_THAT(parse_error_of(R"({"a": 1, "a": 2})"), Catch::Contains("key \"a\" appears twice"));
  CHECK_THAT(parse_error_of(R"({"x": [{"b": 1, "b": 1}]})"), Catch::Contains("key \"b\" appears twice"));
  // The same key in different objects is fine.
  CHECK(parse_json(R"({"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]})").ok());
}

TEST_CASE("json: errors say where and what", "[base][json]") {
  // One-line text (a log line): the column, 1-based.
  CHECK_THAT(parse_error_of(R"({"a":1,})"), Catch::StartsWith("column 8: ") && Catch::Contains("object key"));
  CHECK_THAT(parse_error_of(R"({"a": })"), Catch::StartsWith("column 7: "));
  CHECK_THAT(parse_error_of(R"([1, 2)"), Catch::StartsWith("column 6: ") && Catch::Contains("end of input"));
  CHECK_THAT(parse_error_of(R"({"a" 1})"), Catch::StartsWith("column 6: ") && Catch::Contains("':'"));
  CHECK_THAT(parse_error_of(R"({"a": 1} x)"), Catch::StartsWith("column 10: ") && Catch::Contains("end of input"));
  CHECK_THAT(parse_error_of("\x7f" "ELF"), Catch::StartsWith("column 1: "));
  CHECK_THAT(parse_error_of(""), Catch::StartsWith("column 1: "));
  // Text on several lines (a manifest): the line too.
  CHECK_THAT(parse_error_of("{\n  \"a\": 1,\n  \"b\": \n}\n"), Catch::StartsWith("line 4, column 1: "));
  CHECK_THAT(parse_error_of("{\n  \"a\": tru\n}"), Catch::StartsWith("line 2, column "));

  // What each kind of mistake says.
  CHECK_THAT(parse_error_of(R"([01])"), Catch::Contains("expected ']'"));
  CHECK_THAT(parse_error_of(R"([1.])"), Catch::Contains("digit after '.'"));
  CHECK_THAT(parse_error_of(R"([+1])"), Catch::Contains("invalid literal"));
  CHECK_THAT(parse_error_of(R"([1e999])"), Catch::Contains("number overflow"));
  CHECK_THAT(parse_error_of(R"(["\x"])"), Catch::Contains("after backslash"));
  CHECK_THAT(parse_error_of(R"(["\ud83d"])"), Catch::Contains("surrogate"));
  CHECK_THAT(parse_error_of(R"(["\u12G4"])"), Catch::Contains("4 hex digits"));
  CHECK_THAT(parse_error_of("[\"a\nb\"]"), Catch::Contains("control character"));
  CHECK_THAT(parse_error_of(R"(["abc)"), Catch::Contains("missing closing quote"));
  CHECK_THAT(parse_error_of(R"(tru)"), Catch::Contains("invalid literal"));
  CHECK_THAT(parse_error_of(R"([nul])"), Catch::Contains("invalid literal"));
  // nlohmann's own prefix ("[json.exception.parse_error.101] parse error at ...") is gone.
  CHECK_THAT(parse_error_of(R"({"a":1,})"), !Catch::Contains("json.exception") && !Catch::Contains("parse error at"));

  // Deep nesting neither crashes the reader nor is refused.
  CHECK(parse_json(std::string(100000, '[') + std::string(100000, ']')).ok());
}

TEST_CASE("json: field errors name the field and what it should have been", "[base][json]") {
  const Json text = "x";
  CHECK(json_field_error("\"compile_seconds\"", "a number", &text).message ==
        "\"compile_seconds\" must be a number, not a string");
  CHECK(json_field_error("manifest field \"files\"", "an object", nullptr).message == "missing manifest field \"files\"");
  CHECK(std::string(json_kind_name(Json())) == "null");
  CHECK(std::string(json_kind_name(Json::array())) == "an array");
  CHECK(std::string(json_kind_name(Json::object())) == "an object");
  CHECK(std::string(json_kind_name(Json(3u))) == "a number");

  CHECK(json_numbers(parse_json("[1, 2.5, -3e-2]").value(), "t").value() == std::vector<double>{1, 2.5, -3e-2});
  CHECK(json_numbers(Json::array(), "t").value().empty());
  CHECK(json_numbers(Json("[1]"), "\"t\"").error().message == "\"t\" must be an array of numbers, not a string");
  CHECK(json_numbers(parse_json(R"([1, "2"])").value(), "\"t\"").error().message ==
        "\"t\" must be an array of numbers, not an array holding a string");
}
