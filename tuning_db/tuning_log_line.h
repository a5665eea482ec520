#pragma once
// One line of the portable tuning log (JSON lines): every field of a record plus the
// workload's text, so a log alone can rebuild a database or deploy a model.
//
//   {"log_version":1,"workload_key":"...","workload_text":"...","target":"llvm",
//    "machine":"...","schedule_hash":"...","schedule_text":"...","status":"ok",
//    "error_message":"","median_seconds":0.00123,"timings_seconds":[...],
//    "compile_seconds":0.4,"tool_version":"tessel 0.1.0","created_at":"...Z","features":null}
//
// Database ids are local to a database and are not written.
#include <string>

#include "base/result.h"
#include "tuning_db/tuning_record.h"

namespace tessel {

/// The log format this tessel writes; lines with a higher log_version are refused.
constexpr int kTuningLogVersion = 1;

struct TuningLogEntry {
  TuningRecord record;
  std::string workload_text;
};

/// The record as one JSON object, without the newline.
std::string to_log_line(const TuningRecord &record, const std::string &workload_text);
/// Parses and validates one line; errors name the field (not the line number: callers know it).
/// Unknown keys are errors so a typo or a newer format is not silently dropped.
Result<TuningLogEntry> parse_log_line(const std::string &line);

}  // namespace tessel
