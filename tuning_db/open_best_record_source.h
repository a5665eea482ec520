#pragma once
// What `tessel compile --db FILE` / `--log FILE` deploys from: a tuning database or a
// tuning log, told apart by the file's content rather than its name.
#include <memory>
#include <string>

#include "base/result.h"
#include "tuning_db/best_record_source.h"

namespace tessel {

/// An SQLite file opens as a TuningDatabase (read-only: deploying never writes), anything
/// else is read as a tuning log. Errors name the file.
Result<std::unique_ptr<BestRecordSource>> open_best_record_source(const std::string &path);

}  // namespace tessel
