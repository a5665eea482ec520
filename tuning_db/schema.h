#pragma once
// The tuning database's schema, the same tables in SQLite and PostgreSQL, versioned, and
// the migrations that bring an older database up to date.
#include <string>

#include "base/result.h"
#include "tuning_db/sql_connection.h"

namespace tessel {

/// The schema this tessel writes. Version 1: workloads, targets, records. Version 2: the
/// records' features column and indexes for best/top-k (partial, ok records only) and
/// per-target scans. Version 3: each record's machine signature, and the work queue of
/// remote tuning (tuning_db/work_queue.h).
constexpr int kTuningSchemaVersion = 3;

/// "<location> was written by a newer tessel (schema N; ...)".
Error newer_schema_error(const std::string &location, int version);

/// Creates the schema in a new database or migrates an older one, in one write
/// transaction (another process migrating at once waits, then finds it done). A newer
/// schema is an error; so is a database that holds someone else's tables.
Result<void> migrate_schema(SqlConnection &connection);

}  // namespace tessel
