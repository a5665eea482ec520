#include "deploy/json_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

namespace tessel::deploy {

JsonValue JsonValue::boolean(bool b) {
  JsonValue v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::number_text(std::string text) {
  JsonValue v;
  v.kind_ = Kind::Number;
  v.text_ = std::move(text);
  return v;
}

JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.kind_ = Kind::String;
  v.text_ = std::move(s);
  return v;
}

JsonValue JsonValue::array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = Kind::Array;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::object(std::vector<Member> members) {
  JsonValue v;
  v.kind_ = Kind::Object;
  v.members_ = std::move(members);
  return v;
}

double JsonValue::as_double() const {
  double d = 0;
  // from_chars, not strtod: strtod follows the C locale's decimal point.
  auto r = std::from_chars(text_.data(), text_.data() + text_.size(), d);
  if (r.ec == std::errc::result_out_of_range) return text_[0] == '-' ? -HUGE_VAL : HUGE_VAL;
  return d;
}

std::optional<int64_t> JsonValue::as_int64() const {
  if (kind_ != Kind::Number || text_.find_first_of(".eE") != std::string::npos) return std::nullopt;
  int64_t n = 0;
  auto r = std::from_chars(text_.data(), text_.data() + text_.size(), n);
  if (r.ec != std::errc() || r.ptr != text_.data() + text_.size()) return std::nullopt;
  return n;
}

const JsonValue *JsonValue::find(const std::string &key) const {
  for (const Member &m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const char *JsonValue::kind_name(Kind kind) {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return "a boolean";
    case Kind::Number: return "a number";
    case Kind::String: return "a string";
    case Kind::Array: return "an array";
    case Kind::Object: return "an object";
  }
  return "?";
}

namespace {

// Deep enough for any manifest, shallow enough that hostile input cannot exhaust the stack.
constexpr int kMaxDepth = 256;

class Reader {
 public:
  explicit Reader(const std::string &text) : s_(text) {}

  Result<JsonValue> document() {
    skip_space();
    Result<JsonValue> v = value(0);
    if (!v.ok()) return v;
    skip_space();
    if (pos_ != s_.size()) return fail("unexpected text after the JSON value");
    return v;
  }

 private:
  Error fail(const std::string &what) const { return fail_at(pos_, what); }
  Error fail_at(size_t at, const std::string &what) const {
    return make_error("JSON error at byte " + std::to_string(at) + ": " + what);
  }
  static std::string describe(char c) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned char>(c));
      return std::string("byte ") + buf;
    }
    return std::string("'") + c + "'";
  }
  Error expected(const std::string &what) const {
    if (pos_ >= s_.size()) return fail("expected " + what + ", found the end of the text");
    return fail("expected " + what + ", found " + describe(s_[pos_]));
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume_word(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Result<JsonValue> value(int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos_ >= s_.size()) return expected("a value");
    char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      Result<std::string> s = string();
      if (!s.ok()) return s.error();
      return JsonValue::string(std::move(s).value());
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (consume_word("true")) return JsonValue::boolean(true);
    if (consume_word("false")) return JsonValue::boolean(false);
    if (consume_word("null")) return JsonValue::null();
    return expected("a value");
  }

  Result<JsonValue> object(int depth) {
    ++pos_;  // '{'
    std::vector<JsonValue::Member> members;
    std::set<std::string> keys;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return JsonValue::object(std::move(members));
    }
    for (;;) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') return expected("a string key");
      size_t key_at = pos_;
      Result<std::string> key = string();
      if (!key.ok()) return key.error();
      if (!keys.insert(key.value()).second) return fail_at(key_at, "duplicate key " + json_quote(key.value()));
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return expected("':'");
      ++pos_;
      skip_space();
      Result<JsonValue> v = value(depth + 1);
      if (!v.ok()) return v;
      members.emplace_back(std::move(key).value(), std::move(v).value());
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; break; }
      return expected("',' or '}'");
    }
    return JsonValue::object(std::move(members));
  }

  Result<JsonValue> array(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> items;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return JsonValue::array(std::move(items));
    }
    for (;;) {
      skip_space();
      Result<JsonValue> v = value(depth + 1);
      if (!v.ok()) return v;
      items.push_back(std::move(v).value());
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; break; }
      return expected("',' or ']'");
    }
    return JsonValue::array(std::move(items));
  }

  bool digit() const { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; }

  Result<JsonValue> number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (!digit()) return expected("a digit");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit()) return fail("a number may not have a leading zero");
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digit()) return expected("a digit after '.'");
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit()) return expected("a digit in the exponent");
      while (digit()) ++pos_;
    }
    return JsonValue::number_text(s_.substr(start, pos_ - start));
  }

  // Four hex digits of a \u escape.
  Result<uint32_t> hex4() {
    if (pos_ + 4 > s_.size()) return fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_];
      uint32_t d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return expected("a hex digit in a \\u escape");
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  static void append_utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Result<std::string> string() {
    size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) return fail_at(start, "unterminated string");
      char c = s_[pos_];
      if (c == '"') { ++pos_; return out; }
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character " + describe(c) + " in a string (must be escaped)");
      if (c != '\\') { out += c; ++pos_; continue; }
      size_t escape_at = pos_;
      ++pos_;
      if (pos_ >= s_.size()) return fail_at(start, "unterminated string");
      char e = s_[pos_++];
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
          Result<uint32_t> cp = hex4();
          if (!cp.ok()) return cp.error();
          uint32_t code = cp.value();
          if (code >= 0xDC00 && code <= 0xDFFF) return fail_at(escape_at, "unpaired low surrogate in a \\u escape");
          if (code >= 0xD800 && code <= 0xDBFF) {
            // UTF-16 pair: the low half must follow as another \u escape.
            if (s_.compare(pos_, 2, "\\u") != 0) return fail_at(escape_at, "high surrogate without its low surrogate");
            pos_ += 2;
            Result<uint32_t> low = hex4();
            if (!low.ok()) return low.error();
            if (low.value() < 0xDC00 || low.value() > 0xDFFF)
              return fail_at(escape_at, "high surrogate without its low surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low.value() - 0xDC00);
          }
          append_utf8(out, code);
          break;
        }
        default: return fail_at(escape_at, "invalid escape '\\" + std::string(1, e) + "'");
      }
    }
  }

  const std::string &s_;
  size_t pos_ = 0;
};

}  // namespace

Result<JsonValue> parse_json(const std::string &text) { return Reader(text).document(); }

std::string json_quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  // Shortest round-trip form, independent of the C locale.
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace tessel::deploy
