#pragma once
// The tuning database's schema, versioned in PRAGMA user_version, and the migrations that
// bring an older database up to date.
#include <sqlite3.h>

#include <string>

#include "base/result.h"

namespace tessel {

/// The schema this tessel writes. Version 1: workloads, targets, records. Version 2: the
/// records' features column and indexes for best/top-k (partial, ok records only) and
/// per-target scans.
constexpr int kTuningSchemaVersion = 2;

/// PRAGMA user_version: 0 for a new, empty file.
Result<int> read_schema_version(sqlite3 *db, const std::string &path);

/// Creates the schema in a new file or migrates an older one, in one write transaction
/// (another process opening the same file at once waits, then finds it done). A newer
/// schema is an error; so is an SQLite file that holds someone else's tables.
Result<void> migrate_schema(sqlite3 *db, const std::string &path);

}  // namespace tessel
