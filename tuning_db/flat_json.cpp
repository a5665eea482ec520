#include "tuning_db/flat_json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tessel {

const char *to_text(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::Null: return "null";
    case JsonValue::Kind::Bool: return "boolean";
    case JsonValue::Kind::Number: return "number";
    case JsonValue::Kind::String: return "string";
    case JsonValue::Kind::NumberArray: return "array of numbers";
  }
  return "?";
}

const JsonValue *FlatJsonObject::find(const std::string &key) const {
  for (const auto &field : fields)
    if (field.first == key) return &field.second;
  return nullptr;
}

namespace {

/// Length of the UTF-8 sequence starting at text[i] if it is valid (shortest form, no
/// surrogates, at most U+10FFFF), else 0.
size_t valid_utf8_length(const std::string &text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length;
  uint32_t code;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2, code = lead & 0x1F;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3, code = lead & 0x0F;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4, code = lead & 0x07;
  else return 0;
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

void append_utf8(std::string &out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

/// Recursive descent over one flat object; throws ParseFailure, caught at the entry points.
class FlatJsonParser {
 public:
  struct ParseFailure {
    size_t position;
    std::string message;
  };

  explicit FlatJsonParser(const std::string &text) : text_(text) {}

  FlatJsonObject parse_object() {
    FlatJsonObject object;
    skip_space();
    expect('{', "expected '{' at the start of the object");
    skip_space();
    if (peek() == '}') {
      ++pos_;
    } else {
      while (true) {
        skip_space();
        if (peek() != '"') fail("expected a string key");
        const size_t key_position = pos_;
        std::string key = parse_string();
        if (object.find(key)) fail_at(key_position, "key \"" + key + "\" appears twice");
        skip_space();
        expect(':', "expected ':' after key \"" + key + "\"");
        skip_space();
        JsonValue value = parse_value();
        object.fields.emplace_back(std::move(key), std::move(value));
        skip_space();
        if (peek() == ',') { ++pos_; continue; }
        expect('}', "expected ',' or '}'");
        break;
      }
    }
    finish();
    return object;
  }

  std::vector<double> parse_array_only() {
    skip_space();
    if (peek() != '[') fail("expected '['");
    std::vector<double> numbers = parse_number_array();
    finish();
    return numbers;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }
  [[noreturn]] void fail(const std::string &message) const { fail_at(pos_, message); }
  [[noreturn]] void fail_at(size_t position, const std::string &message) const {
    throw ParseFailure{position, at_end() && position == pos_ ? message + " (the text ends early)" : message};
  }
  void expect(char c, const std::string &message) {
    if (peek() != c || at_end()) fail(message);
    ++pos_;
  }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\n')) ++pos_;
  }
  void finish() {
    skip_space();
    if (!at_end()) fail("unexpected text after the JSON value");
  }

  JsonValue parse_value() {
    JsonValue value;
    const char c = peek();
    if (at_end()) fail("expected a value");
    if (c == '"') {
      value.kind = JsonValue::Kind::String;
      value.text = parse_string();
    } else if (c == '[') {
      value.kind = JsonValue::Kind::NumberArray;
      value.numbers = parse_number_array();
    } else if (c == '{') {
      fail("nested objects are not allowed in a flat record");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      value.kind = JsonValue::Kind::Number;
      value.number = parse_number();
    } else if (match_word("null")) {
      value.kind = JsonValue::Kind::Null;
    } else if (match_word("true")) {
      value.kind = JsonValue::Kind::Bool;
      value.boolean = true;
    } else if (match_word("false")) {
      value.kind = JsonValue::Kind::Bool;
    } else {
      fail("expected a value (string, number, array, true, false or null)");
    }
    return value;
  }

  bool match_word(const char *word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  std::vector<double> parse_number_array() {
    expect('[', "expected '['");
    std::vector<double> numbers;
    skip_space();
    if (peek() == ']') { ++pos_; return numbers; }
    while (true) {
      skip_space();
      const char c = peek();
      if (!(c == '-' || (c >= '0' && c <= '9')) || at_end()) fail("arrays may only hold numbers");
      numbers.push_back(parse_number());
      skip_space();
      if (peek() == ',' && !at_end()) { ++pos_; continue; }
      expect(']', "expected ',' or ']' in array");
      return numbers;
    }
  }

  // JSON's grammar exactly (no leading '+', no leading zeros, no bare '.'), then strtod.
  double parse_number() {
    const size_t start = pos_;
    const auto is_digit = [&] { return !at_end() && peek() >= '0' && peek() <= '9'; };
    if (peek() == '-') ++pos_;
    if (!is_digit()) fail("expected a digit");
    if (peek() == '0') ++pos_;
    else while (is_digit()) ++pos_;
    if (!at_end() && peek() == '.') {
      ++pos_;
      if (!is_digit()) fail("expected a digit after '.'");
      while (is_digit()) ++pos_;
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      ++pos_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      if (!is_digit()) fail("expected a digit in the exponent");
      while (is_digit()) ++pos_;
    }
    const std::string token = text_.substr(start, pos_ - start);
    errno = 0;
    const double value = std::strtod(token.c_str(), nullptr);
    if (!std::isfinite(value)) fail_at(start, "number " + token + " is out of range");
    return value;
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("expected 4 hex digits after \\u");
    uint32_t code = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= h - '0';
      else if (h >= 'a' && h <= 'f') code |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') code |= h - 'A' + 10;
      else fail_at(pos_ - 1, "expected a hex digit after \\u");
    }
    return code;
  }

  std::string parse_string() {
    expect('"', "expected '\"'");
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') { ++pos_; return out; }
      if (c < 0x20) fail("control character in a string (must be escaped)");
      if (c == '\\') {
        ++pos_;
        if (at_end()) fail("unterminated string");
        const char e = text_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            const size_t escape_position = pos_ - 2;
            uint32_t code = parse_hex4();
            if (code >= 0xDC00 && code <= 0xDFFF) fail_at(escape_position, "lone low surrogate in \\u escape");
            if (code >= 0xD800 && code <= 0xDBFF) {
              if (text_.compare(pos_, 2, "\\u") != 0) fail_at(escape_position, "high surrogate without its low half");
              pos_ += 2;
              const uint32_t low = parse_hex4();
              if (low < 0xDC00 || low > 0xDFFF) fail_at(escape_position, "high surrogate without its low half");
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            }
            append_utf8(out, code);
            break;
          }
          default: fail_at(pos_ - 2, std::string("invalid escape \\") + e);
        }
        continue;
      }
      const size_t length = valid_utf8_length(text_, pos_);
      if (length == 0) fail("invalid UTF-8 in a string");
      out.append(text_, pos_, length);
      pos_ += length;
    }
  }

  const std::string &text_;
  size_t pos_ = 0;
};

}  // namespace

Result<FlatJsonObject> parse_flat_json_object(const std::string &text) {
  try {
    return FlatJsonParser(text).parse_object();
  } catch (const FlatJsonParser::ParseFailure &failure) {
    return make_error("column " + std::to_string(failure.position + 1) + ": " + failure.message);
  }
}

Result<std::vector<double>> parse_json_number_array(const std::string &text) {
  try {
    return FlatJsonParser(text).parse_array_only();
  } catch (const FlatJsonParser::ParseFailure &failure) {
    return make_error("column " + std::to_string(failure.position + 1) + ": " + failure.message);
  }
}

std::string json_quote(const std::string &text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20 || c == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else if (c >= 0x80) {
      const size_t length = valid_utf8_length(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
        continue;
      }
      out.append(text, i, length);
      i += length;
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
  return out;
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  // %g drops trailing zeros, and a double's error is below half a unit of the 15th digit,
  // so when 15 digits read back they already are the shortest form.
  char text[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string json_number(float value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  for (int precision = 6; precision <= 9; ++precision) {  // 6: as 15 is for doubles
    std::snprintf(text, sizeof(text), "%.*g", precision, static_cast<double>(value));
    if (std::strtof(text, nullptr) == value) break;
  }
  return text;
}

std::string json_number_array(const std::vector<double> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + json_number(values[i]);
  return out + "]";
}

void FlatJsonWriter::add_key(const std::string &key) {
  if (body_.size() > 1) body_ += ',';
  body_ += json_quote(key);
  body_ += ':';
}

FlatJsonWriter &FlatJsonWriter::add_null(const std::string &key) {
  add_key(key);
  body_ += "null";
  return *this;
}

FlatJsonWriter &FlatJsonWriter::add_bool(const std::string &key, bool value) {
  add_key(key);
  body_ += value ? "true" : "false";
  return *this;
}

FlatJsonWriter &FlatJsonWriter::add_string(const std::string &key, const std::string &value) {
  add_key(key);
  body_ += json_quote(value);
  return *this;
}

FlatJsonWriter &FlatJsonWriter::add_number(const std::string &key, double value) {
  add_key(key);
  body_ += json_number(value);
  return *this;
}

FlatJsonWriter &FlatJsonWriter::add_integer(const std::string &key, int64_t value) {
  add_key(key);
  body_ += std::to_string(value);
  return *this;
}

FlatJsonWriter &FlatJsonWriter::add_number_array(const std::string &key, const std::vector<double> &values) {
  add_key(key);
  body_ += json_number_array(values);
  return *this;
}

FlatJsonWriter &FlatJsonWriter::add_float_array(const std::string &key, const std::vector<float> &values) {
  add_key(key);
  body_ += '[';
  for (size_t i = 0; i < values.size(); ++i) body_ += (i ? "," : "") + json_number(values[i]);
  body_ += ']';
  return *this;
}

}  // namespace tessel
