#include "tuning_db/tuning_log_line.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "base/json.h"

namespace tessel {

namespace {

/// The double nearest the shortest decimal that reads back as `value`: a float feature is
/// written as "0.1", not as the float's exact binary value "0.10000000149011612".
double shortest_double(float value) {
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, value);
  double nearest = value;
  std::from_chars(text, written.ptr, nearest);
  return nearest;
}

Json features_json(const std::optional<std::vector<float>> &features) {
  if (!features) return nullptr;
  Json array = Json::array();
  for (float f : *features) array.push_back(shortest_double(f));
  return array;
}

}  // namespace

std::string to_log_line(const TuningRecord &record, const std::string &workload_text) {
  Json line;
  line["log_version"] = kTuningLogVersion;
  line["workload_key"] = record.workload_key;
  line["workload_text"] = workload_text;
  line["target"] = record.target;
  line["machine"] = record.machine;
  line["schedule_hash"] = record.schedule_hash;
  line["schedule_text"] = record.schedule_text;
  line["status"] = to_text(record.status);
  line["error_message"] = record.error_message;
  line["median_seconds"] = record.median_seconds ? Json(*record.median_seconds) : Json(nullptr);
  line["timings_seconds"] = record.timings_seconds;
  line["compile_seconds"] = record.compile_seconds;
  line["tool_version"] = record.tool_version;
  line["created_at"] = record.created_at;
  line["features"] = features_json(record.features);
  return dump_json(line);
}

namespace {

/// Typed access to the fields of one parsed line, with errors naming the key.
class LogLineFields {
 public:
  explicit LogLineFields(const Json &object) : object_(object) {}

  const Json *get(const std::string &key, bool required) {
    known_.insert(key);
    const Json *value = json_find(object_, key);
    if (!value && required) fail(json_field_error(quoted(key), "present", nullptr));
    return value;
  }
  std::string string(const std::string &key, bool required = true) {
    const Json *value = get(key, required);
    if (!value) return "";
    require(key, value->is_string(), "a string", *value);
    return value->get<std::string>();
  }
  double number(const std::string &key) {
    const Json *value = get(key, true);
    require(key, value->is_number(), "a number", *value);
    return value->get<double>();
  }
  std::optional<double> number_or_null(const std::string &key) {
    const Json *value = get(key, true);
    if (value->is_null()) return std::nullopt;
    return number(key);
  }
  std::vector<double> numbers(const std::string &key) {
    auto numbers = json_numbers(*get(key, true), quoted(key));
    if (!numbers.ok()) fail(numbers.error());
    return std::move(numbers.value());
  }
  std::optional<std::vector<double>> numbers_or_null(const std::string &key) {
    const Json *value = get(key, false);
    if (!value || value->is_null()) return std::nullopt;
    return numbers(key);
  }
  void reject_unknown_keys() const {
    for (const auto &field : object_.items())
      if (!known_.count(field.key())) throw TesselException("unknown key " + quoted(field.key()));
  }

 private:
  static std::string quoted(const std::string &key) { return dump_json(Json(key)); }
  [[noreturn]] static void fail(const Error &error) { throw TesselException(error.message); }
  static void require(const std::string &key, bool is_expected_kind, const char *expected, const Json &value) {
    if (!is_expected_kind) fail(json_field_error(quoted(key), expected, &value));
  }
  const Json &object_;
  std::set<std::string> known_;
};

}  // namespace

Result<TuningLogEntry> parse_log_line(const std::string &line) {
  auto object = parse_json(line);
  if (!object.ok()) return object.error();
  if (!object->is_object())
    return make_error(ErrorKind::InvalidInput,
                      std::string("a log line must be an object, not ") + json_kind_name(*object));
  LogLineFields fields(object.value());
  TuningLogEntry entry;
  TuningRecord &record = entry.record;
  try {
    const double version = fields.number("log_version");
    if (version != std::floor(version) || version < 1)
      return make_error(ErrorKind::InvalidInput, "\"log_version\" must be a positive integer");
    if (version > kTuningLogVersion)
      return make_error(ErrorKind::Unsupported,
                        "log_version " + dump_json(object->at("log_version")) + " was written by a newer tessel (this one reads " +
                        std::to_string(kTuningLogVersion) + ")");
    record.workload_key = fields.string("workload_key");
    entry.workload_text = fields.string("workload_text");
    record.target = fields.string("target");
    record.machine = fields.string("machine", false);
    record.schedule_hash = fields.string("schedule_hash");
    record.schedule_text = fields.string("schedule_text");
    auto status = parse_record_status(fields.string("status"));
    if (!status.ok()) return status.error();
    record.status = status.value();
    record.error_message = fields.string("error_message", false);
    record.median_seconds = fields.number_or_null("median_seconds");
    record.timings_seconds = fields.numbers("timings_seconds");
    record.compile_seconds = fields.number("compile_seconds");
    record.tool_version = fields.string("tool_version");
    record.created_at = fields.string("created_at");
    if (auto features = fields.numbers_or_null("features")) {
      record.features.emplace();
      for (double f : *features) {
        if (std::fabs(f) > std::numeric_limits<float>::max())
          return make_error(ErrorKind::InvalidInput,
                            "\"features\" holds " + dump_json(Json(f)) + ", beyond the float range");
        record.features->push_back(static_cast<float>(f));
      }
    }
    fields.reject_unknown_keys();
  } catch (const TesselException &e) {
    return make_error(ErrorKind::InvalidInput, e.what());
  }
  if (entry.workload_text.empty()) return make_error(ErrorKind::InvalidInput, "\"workload_text\" is empty");
  auto valid = validate_record(record);
  if (!valid.ok()) return valid.error();
  return entry;
}

}  // namespace tessel
