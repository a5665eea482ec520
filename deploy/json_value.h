#pragma once
// A small JSON reader (and string/number writers) for manifest.json: the deploy runtime links
// no JSON library. Objects keep their key order; numbers keep their text so integers read
// back exactly (byte counts and flops can exceed 2^53).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tessel::deploy {

class JsonValue {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;
  static JsonValue null() { return JsonValue(); }
  static JsonValue boolean(bool b);
  /// `text` must be a JSON number's lexeme (the reader guarantees it).
  static JsonValue number_text(std::string text);
  static JsonValue string(std::string s);
  static JsonValue array(std::vector<JsonValue> items);
  static JsonValue object(std::vector<Member> members);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }

  bool as_bool() const { return bool_; }
  /// The number as a double (nearest).
  double as_double() const;
  /// The number as an int64 if it is written as an integer (no fraction or exponent) in range.
  std::optional<int64_t> as_int64() const;
  /// For strings: the decoded text; for numbers: the lexeme.
  const std::string &text() const { return text_; }
  const std::vector<JsonValue> &items() const { return items_; }
  const std::vector<Member> &members() const { return members_; }
  /// The member named `key` of an object, or null when absent (or not an object).
  const JsonValue *find(const std::string &key) const;

  /// Name of the kind for messages: "an object", "a string" ...
  static const char *kind_name(Kind kind);

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<Member> members_;
};

/// Parses one JSON document (RFC 8259; surrounding whitespace allowed, nothing else after
/// it). Errors say what was expected and the byte offset: "at byte 17: expected ':'".
/// Duplicate keys in one object are an error.
Result<JsonValue> parse_json(const std::string &text);

/// `s` as a JSON string literal with quotes (control characters escaped; UTF-8 passes through).
std::string json_quote(const std::string &s);
/// Shortest text that reads back as exactly `v` ("null" if not finite: JSON has no NaN).
std::string json_number(double v);

}  // namespace tessel::deploy
