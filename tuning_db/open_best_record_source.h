#pragma once
// What `tessel compile --db FILE` / `--log FILE` deploys from: a tuning database or a
// tuning log, told apart by the file's content rather than its name.
#include <memory>
#include <string>

#include "base/result.h"
#include "tuning_db/best_record_source.h"

namespace tessel {

/// What the user said the file is: `--db` a database, `--log` a tuning log, or either.
enum class RecordFileKind { Either, Database, Log };

/// An SQLite file opens as a TuningDatabase (read-only: deploying never writes), anything
/// else is read as a tuning log. A file named as a database is opened as one, so that one
/// that is not says "file is not a database" rather than failing as a log would. Errors
/// name the file.
Result<std::unique_ptr<BestRecordSource>> open_best_record_source(const std::string &path,
                                                                  RecordFileKind kind = RecordFileKind::Either);

}  // namespace tessel
