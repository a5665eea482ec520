#pragma once
// A small, strict JSON reader and writer for flat objects, the shape of a tuning-log line:
// values are null, true/false, numbers, strings or arrays of numbers. Nothing nests
// deeper, which is all a record needs and keeps the parser short enough to trust (no JSON
// library is available). Strings must be valid UTF-8; the writer always produces it.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tessel {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, NumberArray };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<double> numbers;
};

/// "null", "boolean", "number", "string", "array of numbers".
const char *to_text(JsonValue::Kind kind);

/// Fields in the order they appear; the parser rejects a key given twice.
struct FlatJsonObject {
  std::vector<std::pair<std::string, JsonValue>> fields;
  const JsonValue *find(const std::string &key) const;
};

/// Parses one object; errors say what is wrong and at which column (1-based, in bytes).
Result<FlatJsonObject> parse_flat_json_object(const std::string &text);
/// Parses "[1, 2.5e-3]" (the database's timings column).
Result<std::vector<double>> parse_json_number_array(const std::string &text);

/// `text` as a JSON string literal, quotes included. Control characters are escaped;
/// bytes that are not valid UTF-8 become U+FFFD so the output is always valid JSON.
std::string json_quote(const std::string &text);
/// The shortest decimal that reads back as exactly `value`; "null" when not finite.
std::string json_number(double value);
/// The shortest decimal that reads back as exactly `value` as a float.
std::string json_number(float value);
/// "[a,b,c]" with json_number for each element.
std::string json_number_array(const std::vector<double> &values);

/// Writes one object on one line, fields in the order added.
class FlatJsonWriter {
 public:
  FlatJsonWriter &add_null(const std::string &key);
  FlatJsonWriter &add_bool(const std::string &key, bool value);
  FlatJsonWriter &add_string(const std::string &key, const std::string &value);
  FlatJsonWriter &add_number(const std::string &key, double value);
  FlatJsonWriter &add_integer(const std::string &key, int64_t value);
  FlatJsonWriter &add_number_array(const std::string &key, const std::vector<double> &values);
  FlatJsonWriter &add_float_array(const std::string &key, const std::vector<float> &values);
  /// The object, "{...}", without a newline.
  std::string str() const { return body_ + "}"; }

 private:
  void add_key(const std::string &key);
  std::string body_ = "{";
};

}  // namespace tessel
