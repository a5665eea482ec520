#pragma once
// Moving records in and out of a tuning database (`tessel db export|import|copy`), with the
// guarantees a user relies on: a failed export leaves no truncated log, a failed import
// leaves no new empty database and applies nothing, a copy lands in one transaction.
#include <string>

#include "base/result.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

/// Opens a database for queries only: never creates one, and works on a file the user may
/// not write. A missing file is an error; a server needs the current schema (read-only
/// sessions migrate nothing).
Result<TuningDatabase> open_existing_database(const std::string &location);

/// Writes the records `filter` selects to `path` as a tuning log, written aside and renamed
/// into place. Returns how many were written.
Result<int64_t> export_log_file(const TuningDatabase &db, const ExportFilter &filter, const std::string &path);

/// Adds a tuning log's records to the database at `location`, created when missing (and
/// removed again when the import fails).
Result<ImportSummary> import_log_file(const std::string &location, const std::string &log_path);

struct CopySummary {
  int64_t exported = 0;  // records read from the source
  ImportSummary imported;
  std::string from, to;  // both locations, fit to print
};

/// Every record of `from` into `to` (created when missing), through the tuning log in
/// memory: each record is checked the way an import checks it, duplicates are skipped.
Result<CopySummary> copy_database(const std::string &from, const std::string &to);

}  // namespace tessel
