#include "tuning_db/schema.h"

#include "tuning_db/sqlite_statement.h"

namespace tessel {

namespace {

// kMigrations[v] brings a database from version v to v + 1. A shipped migration is never
// edited (databases out there already ran it); a change is a new one appended here.
const char *const kMigrations[] = {
    // 0 -> 1: the first schema. Statuses are kept as words so the file reads well in sqlite3.
    R"sql(
CREATE TABLE workloads(
  key TEXT PRIMARY KEY,
  workload_text TEXT NOT NULL,
  first_seen TEXT NOT NULL
);
CREATE TABLE targets(
  id INTEGER PRIMARY KEY,
  text TEXT NOT NULL UNIQUE,
  machine TEXT NOT NULL DEFAULT ''
);
CREATE TABLE records(
  id INTEGER PRIMARY KEY,
  workload_key TEXT NOT NULL REFERENCES workloads(key),
  target_id INTEGER NOT NULL REFERENCES targets(id),
  schedule_text TEXT NOT NULL,
  schedule_hash TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK(status IN ('ok', 'compile_error', 'runtime_error', 'wrong_result', 'timeout', 'crash')),
  error_message TEXT NOT NULL DEFAULT '',
  median_seconds REAL,
  timings TEXT NOT NULL DEFAULT '[]',
  compile_seconds REAL NOT NULL DEFAULT 0,
  tool_version TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE(workload_key, target_id, schedule_hash)
);
CREATE INDEX records_by_time ON records(workload_key, target_id, status, median_seconds);
)sql",
    // 1 -> 2: the tuner may keep each candidate's feature vector (float32, little-endian).
    // best/top-k read only ok records, so a partial index serves them with fewer rows;
    // the cost model scans whole targets.
    R"sql(
ALTER TABLE records ADD COLUMN features BLOB;
DROP INDEX records_by_time;
CREATE INDEX records_best ON records(workload_key, target_id, median_seconds) WHERE status = 'ok';
CREATE INDEX records_by_target ON records(target_id, id);
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kTuningSchemaVersion,
              "one migration per schema version");

Error newer_schema_error(const std::string &path, int version) {
  return make_error(path + " was written by a newer tessel (schema " + std::to_string(version) +
                    "; this tessel reads up to schema " + std::to_string(kTuningSchemaVersion) + ")");
}

/// A version-0 file with tables in it is some other program's database: do not add ours.
Result<bool> has_foreign_tables(sqlite3 *db, const std::string &path) {
  auto query = SqliteStatement::prepare(db, path, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
  if (!query.ok()) return query.error();
  const int code = query->step();
  if (code != SQLITE_ROW) return sqlite_error(db, code, path, "read the schema");
  return query->integer(0) > 0;
}

}  // namespace

Result<int> read_schema_version(sqlite3 *db, const std::string &path) {
  auto query = SqliteStatement::prepare(db, path, "PRAGMA user_version");
  if (!query.ok()) return query.error();
  const int code = query->step();
  if (code != SQLITE_ROW) return sqlite_error(db, code, path, "read the schema version");
  return static_cast<int>(query->integer(0));
}

Result<void> migrate_schema(sqlite3 *db, const std::string &path) {
  auto version = read_schema_version(db, path);
  if (!version.ok()) return version.error();
  if (version.value() > kTuningSchemaVersion) return newer_schema_error(path, version.value());
  if (version.value() == kTuningSchemaVersion) return {};

  auto transaction = WriteTransaction::begin(db, path);
  if (!transaction.ok()) return transaction.error();
  // Another process may have migrated while we waited for the lock.
  version = read_schema_version(db, path);
  if (!version.ok()) return version.error();
  if (version.value() > kTuningSchemaVersion) return newer_schema_error(path, version.value());
  if (version.value() == 0) {
    auto foreign = has_foreign_tables(db, path);
    if (!foreign.ok()) return foreign.error();
    if (foreign.value()) return make_error(path + " is an SQLite database but not a tessel tuning database");
  }
  for (int v = version.value(); v < kTuningSchemaVersion; ++v) {
    auto migrated = sqlite_exec(db, path, kMigrations[v],
                                "migrate the schema from version " + std::to_string(v) + " to " + std::to_string(v + 1));
    if (!migrated.ok()) return migrated.error();
  }
  const std::string set_version = "PRAGMA user_version = " + std::to_string(kTuningSchemaVersion);
  auto stamped = sqlite_exec(db, path, set_version.c_str(), "record the schema version");
  if (!stamped.ok()) return stamped.error();
  return transaction->commit();
}

}  // namespace tessel
