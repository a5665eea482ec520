#include "base/json.h"

#include <algorithm>
#include <limits>
#include <set>

namespace tessel {

namespace {

/// Thrown out of the parser's callback: nlohmann itself lets a repeated key overwrite the first.
struct RepeatedKey {
  std::string key;
};

/// "column C" for one-line text, "line L, column C" otherwise (both 1-based). `byte` is
/// nlohmann's count of bytes read when it failed: the offending byte's 1-based position.
std::string position_text(const std::string &text, size_t byte) {
  const size_t offset = std::min(byte == 0 ? 0 : byte - 1, text.size());
  const size_t line_start = offset == 0 ? 0 : text.rfind('\n', offset - 1) + 1;  // npos + 1 == 0
  const std::string column = "column " + std::to_string(offset - line_start + 1);
  if (text.find('\n') == std::string::npos) return column;
  const auto lines_before = std::count(text.begin(), text.begin() + offset, '\n');
  return "line " + std::to_string(lines_before + 1) + ", " + column;
}

/// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
/// column 8: " prefix, which names the position in its own way.
std::string reason_of(const Json::exception &error) {
  std::string message = error.what();
  const size_t after_id = message.find("] ");
  if (after_id != std::string::npos) message.erase(0, after_id + 2);
  if (dynamic_cast<const Json::parse_error *>(&error)) {
    const size_t after_position = message.find(": ");
    if (after_position != std::string::npos) message.erase(0, after_position + 2);
  }
  return message;
}

}  // namespace

Result<Json> parse_json(const std::string &text) {
  std::vector<std::set<std::string>> keys_of_open_objects;
  const auto reject_repeated_keys = [&](int, Json::parse_event_t event, Json &parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys_of_open_objects.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      keys_of_open_objects.pop_back();
    } else if (event == Json::parse_event_t::key) {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!keys_of_open_objects.back().insert(key).second) throw RepeatedKey{key};
    }
    return true;
  };
  try {
    return Json::parse(text, reject_repeated_keys);
  } catch (const Json::parse_error &error) {
    return make_error(ErrorKind::InvalidInput, position_text(text, error.byte) + ": " + reason_of(error));
  } catch (const Json::exception &error) {  // a number beyond a double's range
    return make_error(ErrorKind::InvalidInput, reason_of(error));
  } catch (const RepeatedKey &repeated) {
    return make_error(ErrorKind::InvalidInput, "key " + dump_json(Json(repeated.key)) + " appears twice in one object");
  }
}

std::string dump_json(const Json &value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

const char *json_kind_name(const Json &value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::binary: return "binary data";
    case Json::value_t::discarded: return "nothing";
  }
  return "?";
}

std::optional<int64_t> json_int64(const Json &value) {
  if (value.is_number_unsigned()) {
    const uint64_t n = value.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(n);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

const Json *json_find(const Json &object, const std::string &key) {
  if (!object.is_object()) return nullptr;
  const auto member = object.find(key);
  return member == object.end() ? nullptr : &*member;
}

Error json_field_error(const std::string &field, const std::string &expected, const Json *found) {
  if (!found) return make_error(ErrorKind::InvalidInput, "missing " + field);
  return make_error(ErrorKind::InvalidInput, field + " must be " + expected + ", not " + json_kind_name(*found));
}

Result<std::vector<double>> json_numbers(const Json &value, const std::string &field) {
  if (!value.is_array()) return json_field_error(field, "an array of numbers", &value);
  std::vector<double> numbers;
  numbers.reserve(value.size());
  for (const Json &item : value) {
    if (!item.is_number())
      return make_error(ErrorKind::InvalidInput,
                        field + " must be an array of numbers, not an array holding " + json_kind_name(item));
    numbers.push_back(item.get<double>());
  }
  return numbers;
}

}  // namespace tessel
