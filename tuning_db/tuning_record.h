#pragma once
// One measurement of one schedule of one workload on one target: the unit the tuner
// writes, the database keeps and the tuning log carries.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace tessel {

/// How a measured candidate ended. Only Ok records have a time and can be "best".
enum class RecordStatus { Ok, CompileError, RuntimeError, WrongResult, Timeout, Crash };

/// "ok", "compile_error", "runtime_error", "wrong_result", "timeout", "crash".
const char *to_text(RecordStatus status);
Result<RecordStatus> parse_record_status(const std::string &text);
/// Every status, in declaration order (for stats tables).
const std::vector<RecordStatus> &all_record_statuses();

/// Appended to a record's machine when it was timed with the task's weights evicted from the
/// caches before every run (`tessel tune --cold-weights`). Its times do not compare with warm
/// ones; where a workload has such records, deployment picks among them only (fastest first),
/// since they predict the time inside a model whose weights do not stay in cache.
#define TESSEL_COLD_WEIGHTS_SUFFIX " [weights cold]"
inline constexpr const char *kColdWeightsMachineSuffix = TESSEL_COLD_WEIGHTS_SUFFIX;

struct TuningRecord {
  int64_t id = 0;  // the database's row id (0 before insertion); a log's line number
  std::string workload_key;
  std::string target;   // Target::to_string(), e.g. "llvm -mcpu=znver4"
  std::string machine;  // what the target ran on (CPU model, GPU); kept with the target
  std::string schedule_text;
  std::string schedule_hash;  // schedule_hash(): identifies the candidate within (workload, target)
  RecordStatus status = RecordStatus::Ok;
  std::string error_message;            // empty for ok records
  std::optional<double> median_seconds;  // required for ok records, absent when nothing ran
  std::vector<double> timings_seconds;   // every timed run, in the order measured
  double compile_seconds = 0;
  std::string tool_version;  // filled with current_tool_version() on insert when empty
  std::string created_at;    // ISO 8601 UTC; filled on insert when empty
  std::optional<std::vector<float>> features;  // the cost model's feature vector, if the tuner kept it
};

/// What a database or log accepts: keys, hash and target present, ok records timed,
/// numbers finite and non-negative. The message names the field.
Result<void> validate_record(const TuningRecord &record);

/// Whether the record was timed with cold weights (its machine ends in kColdWeightsMachineSuffix).
bool timed_cold(const TuningRecord &record);

/// The version string stamped into records ("tessel 0.1.0").
std::string current_tool_version();
/// Now, as ISO 8601 UTC with seconds ("2024-05-01T12:34:56Z").
std::string utc_timestamp_now();

}  // namespace tessel
