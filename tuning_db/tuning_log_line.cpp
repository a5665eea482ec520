#include "tuning_db/tuning_log_line.h"

#include <cmath>
#include <limits>
#include <set>

#include "tuning_db/flat_json.h"

namespace tessel {

std::string to_log_line(const TuningRecord &record, const std::string &workload_text) {
  FlatJsonWriter json;
  json.add_integer("log_version", kTuningLogVersion)
      .add_string("workload_key", record.workload_key)
      .add_string("workload_text", workload_text)
      .add_string("target", record.target)
      .add_string("machine", record.machine)
      .add_string("schedule_hash", record.schedule_hash)
      .add_string("schedule_text", record.schedule_text)
      .add_string("status", to_text(record.status))
      .add_string("error_message", record.error_message);
  if (record.median_seconds) json.add_number("median_seconds", *record.median_seconds);
  else json.add_null("median_seconds");
  json.add_number_array("timings_seconds", record.timings_seconds)
      .add_number("compile_seconds", record.compile_seconds)
      .add_string("tool_version", record.tool_version)
      .add_string("created_at", record.created_at);
  if (record.features) json.add_float_array("features", *record.features);
  else json.add_null("features");
  return json.str();
}

namespace {

/// Typed access to the fields of one parsed line, with errors naming the key.
class LogLineFields {
 public:
  explicit LogLineFields(const FlatJsonObject &object) : object_(object) {}

  const JsonValue *get(const std::string &key, bool required) {
    known_.insert(key);
    const JsonValue *value = object_.find(key);
    if (!value && required) throw TesselException("missing \"" + key + "\"");
    return value;
  }
  std::string string(const std::string &key, bool required = true) {
    const JsonValue *value = get(key, required);
    if (!value) return "";
    require_kind(key, *value, JsonValue::Kind::String);
    return value->text;
  }
  double number(const std::string &key) {
    const JsonValue *value = get(key, true);
    require_kind(key, *value, JsonValue::Kind::Number);
    return value->number;
  }
  std::optional<double> number_or_null(const std::string &key) {
    const JsonValue *value = get(key, true);
    if (value->kind == JsonValue::Kind::Null) return std::nullopt;
    require_kind(key, *value, JsonValue::Kind::Number);
    return value->number;
  }
  std::vector<double> numbers(const std::string &key) {
    const JsonValue *value = get(key, true);
    require_kind(key, *value, JsonValue::Kind::NumberArray);
    return value->numbers;
  }
  std::optional<std::vector<double>> numbers_or_null(const std::string &key) {
    const JsonValue *value = get(key, false);
    if (!value || value->kind == JsonValue::Kind::Null) return std::nullopt;
    require_kind(key, *value, JsonValue::Kind::NumberArray);
    return value->numbers;
  }
  void reject_unknown_keys() const {
    for (const auto &field : object_.fields)
      if (!known_.count(field.first)) throw TesselException("unknown key \"" + field.first + "\"");
  }

 private:
  static void require_kind(const std::string &key, const JsonValue &value, JsonValue::Kind kind) {
    if (value.kind != kind)
      throw TesselException("\"" + key + "\" must be a " + to_text(kind) + ", not a " + to_text(value.kind));
  }
  const FlatJsonObject &object_;
  std::set<std::string> known_;
};

}  // namespace

Result<TuningLogEntry> parse_log_line(const std::string &line) {
  auto object = parse_flat_json_object(line);
  if (!object.ok()) return object.error();
  LogLineFields fields(object.value());
  TuningLogEntry entry;
  TuningRecord &record = entry.record;
  try {
    const double version = fields.number("log_version");
    if (version != std::floor(version) || version < 1)
      return make_error("\"log_version\" must be a positive integer");
    if (version > kTuningLogVersion)
      return make_error("log_version " + json_number(version) + " was written by a newer tessel (this one reads " +
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
          return make_error("\"features\" holds " + json_number(f) + ", beyond the float range");
        record.features->push_back(static_cast<float>(f));
      }
    }
    fields.reject_unknown_keys();
  } catch (const TesselException &e) {
    return make_error(e.what());
  }
  if (entry.workload_text.empty()) return make_error("\"workload_text\" is empty");
  auto valid = validate_record(record);
  if (!valid.ok()) return valid.error();
  return entry;
}

}  // namespace tessel
