#include "tuning_db/tuning_record.h"

#include <cmath>
#include <ctime>

#include "base/version.h"

namespace tessel {

const char *to_text(RecordStatus status) {
  switch (status) {
    case RecordStatus::Ok: return "ok";
    case RecordStatus::CompileError: return "compile_error";
    case RecordStatus::RuntimeError: return "runtime_error";
    case RecordStatus::WrongResult: return "wrong_result";
    case RecordStatus::Timeout: return "timeout";
    case RecordStatus::Crash: return "crash";
  }
  return "?";
}

const std::vector<RecordStatus> &all_record_statuses() {
  static const std::vector<RecordStatus> statuses = {RecordStatus::Ok,          RecordStatus::CompileError,
                                                     RecordStatus::RuntimeError, RecordStatus::WrongResult,
                                                     RecordStatus::Timeout,     RecordStatus::Crash};
  return statuses;
}

Result<RecordStatus> parse_record_status(const std::string &text) {
  for (RecordStatus status : all_record_statuses())
    if (text == to_text(status)) return status;
  return make_error(ErrorKind::InvalidInput,
                    "unknown record status '" + text +
                    "' (expected ok, compile_error, runtime_error, wrong_result, timeout or crash)");
}

static bool is_valid_seconds(double seconds) { return std::isfinite(seconds) && seconds >= 0; }

Result<void> validate_record(const TuningRecord &record) {
  if (record.workload_key.empty()) return make_error(ErrorKind::InvalidInput, "record has an empty workload_key");
  if (record.target.empty())
    return make_error(ErrorKind::InvalidInput, "record of workload " + record.workload_key + " has an empty target");
  if (record.schedule_hash.empty())
    return make_error(ErrorKind::InvalidInput,
                      "record of workload " + record.workload_key + " has an empty schedule_hash");
  const std::string which = "record " + record.schedule_hash + " of workload " + record.workload_key;
  if (record.status == RecordStatus::Ok && !record.median_seconds)
    return make_error(ErrorKind::InvalidInput, which + " has status ok but no median_seconds");
  if (record.median_seconds && !is_valid_seconds(*record.median_seconds))
    return make_error(ErrorKind::InvalidInput, which + " has an invalid median_seconds (must be finite and >= 0)");
  for (double t : record.timings_seconds)
    if (!is_valid_seconds(t))
      return make_error(ErrorKind::InvalidInput, which + " has an invalid timing (must be finite and >= 0)");
  if (!is_valid_seconds(record.compile_seconds))
    return make_error(ErrorKind::InvalidInput, which + " has an invalid compile_seconds (must be finite and >= 0)");
  if (record.features)
    for (float f : *record.features)
      if (!std::isfinite(f)) return make_error(ErrorKind::InvalidInput, which + " has a non-finite feature value");
  return {};
}

bool timed_cold(const TuningRecord &record) {
  const std::string suffix = kColdWeightsMachineSuffix;
  const std::string &m = record.machine;
  return m.size() >= suffix.size() && m.compare(m.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string current_tool_version() { return std::string("tessel ") + TESSEL_VERSION; }

std::string utc_timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace tessel
