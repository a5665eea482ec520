#pragma once
// The SQLite backend of the tuning database: one file, WAL mode and a busy timeout so that
// several tuner processes on one machine can write at once.
#include <memory>
#include <string>

#include "base/result.h"
#include "tuning_db/sql_connection.h"

namespace tessel {

struct SqliteOpenOptions {
  bool read_only = false;
  int busy_timeout_ms = 10000;
};

/// Opens (and, unless read-only, creates) the file; the schema is not looked at here
/// beyond the first read, which tells a non-database apart. Read-only opens of a file the
/// user cannot write fall back to an immutable open when no -wal file holds records.
Result<std::unique_ptr<SqlConnection>> open_sqlite(const std::string &path, const SqliteOpenOptions &options);

}  // namespace tessel
