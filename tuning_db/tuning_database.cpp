#include "tuning_db/tuning_database.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <istream>
#include <ostream>
#include <thread>

#include "base/json.h"
#include "tuning_db/schema.h"
#include "tuning_db/sqlite_statement.h"
#include "tuning_db/tuning_log_line.h"

namespace tessel {

namespace {

// Every query that returns records selects these, in this order (see read_record).
#define TESSEL_RECORD_COLUMNS                                                                                   \
  "r.id, r.workload_key, t.text, t.machine, r.schedule_text, r.schedule_hash, r.status, r.error_message, "     \
  "r.median_seconds, r.timings, r.compile_seconds, r.tool_version, r.created_at, r.features "
#define TESSEL_RECORDS_WITH_TARGETS "FROM records r JOIN targets t ON t.id = r.target_id "

/// Features are stored as float32 little-endian, whatever the host, so a file can move.
std::vector<uint8_t> encode_features(const std::vector<float> &features) {
  std::vector<uint8_t> bytes(features.size() * 4);
  for (size_t i = 0; i < features.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &features[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
  return bytes;
}

Result<std::vector<float>> decode_features(const std::vector<uint8_t> &bytes) {
  if (bytes.size() % 4 != 0) return make_error("features blob of " + std::to_string(bytes.size()) + " bytes");
  std::vector<float> features(bytes.size() / 4);
  for (size_t i = 0; i < features.size(); ++i) {
    uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(bytes[i * 4 + b]) << (8 * b);
    std::memcpy(&features[i], &bits, 4);
  }
  return features;
}

/// The timings column: a JSON array of seconds, "[0.00121,0.00119]".
Result<std::vector<double>> read_timings(const std::string &text) {
  auto timings = parse_json(text);
  if (!timings.ok()) return timings.error();
  return json_numbers(timings.value(), "the timings column");
}

Result<TuningRecord> read_record(const SqliteStatement &row, const std::string &path) {
  TuningRecord record;
  record.id = row.integer(0);
  const std::string which = path + ": record " + std::to_string(record.id);
  record.workload_key = row.text(1);
  record.target = row.text(2);
  record.machine = row.text(3);
  record.schedule_text = row.text(4);
  record.schedule_hash = row.text(5);
  auto status = parse_record_status(row.text(6));
  if (!status.ok()) return make_error(which + ": " + status.error().message);
  record.status = status.value();
  record.error_message = row.text(7);
  if (!row.is_null(8)) record.median_seconds = row.real(8);
  auto timings = read_timings(row.text(9));
  if (!timings.ok()) return make_error(which + ": malformed timings: " + timings.error().message);
  record.timings_seconds = std::move(timings.value());
  record.compile_seconds = row.real(10);
  record.tool_version = row.text(11);
  record.created_at = row.text(12);
  if (!row.is_null(13)) {
    auto features = decode_features(row.blob(13));
    if (!features.ok()) return make_error(which + ": malformed " + features.error().message);
    record.features = std::move(features.value());
  }
  return record;
}

/// Steps `query` to the end, reading a record from each row.
Result<std::vector<TuningRecord>> collect_records(SqliteStatement &query, sqlite3 *db, const std::string &path) {
  std::vector<TuningRecord> records;
  while (true) {
    const int code = query.step();
    if (code == SQLITE_DONE) return records;
    if (code != SQLITE_ROW) return sqlite_error(db, code, path, "read records");
    auto record = read_record(query, path);
    if (!record.ok()) return record.error();
    records.push_back(std::move(record.value()));
  }
}

/// Runs a query whose one row holds one integer (counts).
Result<int64_t> query_count(sqlite3 *db, const std::string &path, const char *sql) {
  auto query = SqliteStatement::prepare(db, path, sql);
  if (!query.ok()) return query.error();
  const int code = query->step();
  if (code != SQLITE_ROW) return sqlite_error(db, code, path, "count records");
  return query->integer(0);
}

/// WAL: readers never block the writer and several processes can append records at once.
/// Switching a new file to WAL can report busy at once, without the busy handler (SQLite
/// avoids a deadlock when two connections convert it together), so it is retried here.
Result<void> enable_wal(sqlite3 *db, const std::string &path, int busy_timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  while (true) {
    auto journal = SqliteStatement::prepare(db, path, "PRAGMA journal_mode = WAL");
    if (!journal.ok()) return journal.error();
    const int code = journal->step();
    if (code == SQLITE_ROW) {
      if (journal->text(0) != "wal")
        return make_error(path + ": cannot use WAL mode (the journal mode stays " + journal->text(0) + ")");
      return {};
    }
    const bool busy = (code & 0xFF) == SQLITE_BUSY || (code & 0xFF) == SQLITE_LOCKED;
    if (!busy || std::chrono::steady_clock::now() >= deadline)
      return sqlite_error(db, code, path, "switch to WAL mode");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// A path as the path part of an SQLite file: URI (every byte but [A-Za-z0-9/._~-] escaped).
std::string uri_escape(const std::string &path) {
  std::string escaped;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '~' || c == '-') {
      escaped += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      escaped += hex;
    }
  }
  return escaped;
}

bool file_exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

}  // namespace

Result<TuningDatabase> TuningDatabase::open(const std::string &path, const DatabaseOpenOptions &options) {
  if (options.read_only && !file_exists(path)) return make_error(path + ": no such tuning database");
  auto database = connect(path, options, false);
  // Reading a WAL file needs its -shm file, which a user who may not write the directory
  // cannot create. With no -wal file every committed record is in the main file, so it can
  // be read as immutable; if that fails too, the first error says more.
  if (!database.ok() && options.read_only && !file_exists(path + "-wal")) {
    auto immutable = connect(path, options, true);
    if (immutable.ok()) return immutable;
  }
  return database;
}

Result<TuningDatabase> TuningDatabase::connect(const std::string &path, const DatabaseOpenOptions &options,
                                               bool immutable) {
  const int flags = options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3 *handle = nullptr;
  const int code = immutable ? sqlite3_open_v2(("file:" + uri_escape(path) + "?immutable=1").c_str(), &handle,
                                               flags | SQLITE_OPEN_URI, nullptr)
                             : sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  if (code != SQLITE_OK) {
    Error error = sqlite_error(handle, code, path, "open the database");
    sqlite3_close_v2(handle);
    return error;
  }
  TuningDatabase database(handle, path);  // closes the handle on every early return below
  sqlite3_busy_timeout(handle, std::max(0, options.busy_timeout_ms));
  // SQLite opens a file it may not write read-only without saying so; a tuner must know now.
  if (!options.read_only && sqlite3_db_readonly(handle, "main") == 1)
    return make_error(path + " is read-only: cannot record measurements in it (no write permission?)");

  auto version = read_schema_version(handle, path);  // the first read: finds non-databases
  if (!version.ok()) return version.error();
  if (version.value() > kTuningSchemaVersion)
    return make_error(path + " was written by a newer tessel (schema " + std::to_string(version.value()) +
                      "; this tessel reads up to schema " + std::to_string(kTuningSchemaVersion) + ")");
  auto foreign_keys = sqlite_exec(handle, path, "PRAGMA foreign_keys = ON", "enable foreign keys");
  if (!foreign_keys.ok()) return foreign_keys.error();

  if (options.read_only) {
    if (version.value() == 0) return make_error(path + " is not a tessel tuning database (it has no tessel schema)");
    if (version.value() < kTuningSchemaVersion)
      return make_error(path + " has the older schema " + std::to_string(version.value()) +
                        "; open it once where it can be written to migrate it");
    return database;
  }

  auto wal = enable_wal(handle, path, std::max(0, options.busy_timeout_ms));
  if (!wal.ok()) return wal.error();
  auto migrated = migrate_schema(handle, path);
  if (!migrated.ok()) return migrated.error();
  return database;
}

TuningDatabase::TuningDatabase(TuningDatabase &&other) noexcept
    : db_(other.db_), path_(std::move(other.path_)), warnings_(std::move(other.warnings_)) {
  other.db_ = nullptr;
}

TuningDatabase &TuningDatabase::operator=(TuningDatabase &&other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = other.db_;
    path_ = std::move(other.path_);
    warnings_ = std::move(other.warnings_);
    other.db_ = nullptr;
  }
  return *this;
}

TuningDatabase::~TuningDatabase() { sqlite3_close_v2(db_); }

Result<bool> TuningDatabase::insert_workload(const std::string &key, const std::string &workload_text) {
  if (key.empty()) return make_error("empty workload key");
  auto existing = SqliteStatement::prepare(db_, path_, "SELECT workload_text FROM workloads WHERE key = ?1");
  if (!existing.ok()) return existing.error();
  existing->bind(1, key);
  const int code = existing->step();
  if (code == SQLITE_ROW) {
    if (existing->text(0) != workload_text)
      return make_error(path_ + ": workload " + key +
                        " is already recorded with a different workload text (hash collision or damaged data)");
    return false;
  }
  if (code != SQLITE_DONE) return sqlite_error(db_, code, path_, "look up workload " + key);
  auto insert =
      SqliteStatement::prepare(db_, path_, "INSERT INTO workloads(key, workload_text, first_seen) VALUES(?1, ?2, ?3)");
  if (!insert.ok()) return insert.error();
  insert->bind(1, key).bind(2, workload_text).bind(3, utc_timestamp_now());
  auto inserted = insert->run("add workload " + key);
  if (!inserted.ok()) return inserted.error();
  return true;
}

Result<void> TuningDatabase::add_workload(const std::string &key, const std::string &workload_text) {
  auto transaction = WriteTransaction::begin(db_, path_);
  if (!transaction.ok()) return transaction.error();
  auto inserted = insert_workload(key, workload_text);
  if (!inserted.ok()) return inserted.error();
  return transaction->commit();
}

Result<std::optional<std::string>> TuningDatabase::workload_text(const std::string &key) const {
  auto query = SqliteStatement::prepare(db_, path_, "SELECT workload_text FROM workloads WHERE key = ?1");
  if (!query.ok()) return query.error();
  query->bind(1, key);
  const int code = query->step();
  if (code == SQLITE_ROW) return std::optional<std::string>(query->text(0));
  if (code == SQLITE_DONE) return std::optional<std::string>();
  return sqlite_error(db_, code, path_, "look up workload " + key);
}

Result<std::optional<int64_t>> TuningDatabase::find_target(const std::string &target) const {
  auto query = SqliteStatement::prepare(db_, path_, "SELECT id FROM targets WHERE text = ?1");
  if (!query.ok()) return query.error();
  query->bind(1, target);
  const int code = query->step();
  if (code == SQLITE_ROW) return std::optional<int64_t>(query->integer(0));
  if (code == SQLITE_DONE) return std::optional<int64_t>();
  return sqlite_error(db_, code, path_, "look up target '" + target + "'");
}

Result<int64_t> TuningDatabase::ensure_target(const std::string &target, const std::string &machine) {
  auto query = SqliteStatement::prepare(db_, path_, "SELECT id, machine FROM targets WHERE text = ?1");
  if (!query.ok()) return query.error();
  query->bind(1, target);
  const int code = query->step();
  if (code == SQLITE_ROW) {
    const int64_t id = query->integer(0);
    // The first record that knows the machine describes it; later ones do not overwrite.
    if (query->text(1).empty() && !machine.empty()) {
      auto update = SqliteStatement::prepare(db_, path_, "UPDATE targets SET machine = ?1 WHERE id = ?2");
      if (!update.ok()) return update.error();
      update->bind(1, machine).bind(2, id);
      auto updated = update->run("describe target '" + target + "'");
      if (!updated.ok()) return updated.error();
    }
    return id;
  }
  if (code != SQLITE_DONE) return sqlite_error(db_, code, path_, "look up target '" + target + "'");
  auto insert = SqliteStatement::prepare(db_, path_, "INSERT INTO targets(text, machine) VALUES(?1, ?2)");
  if (!insert.ok()) return insert.error();
  insert->bind(1, target).bind(2, machine);
  auto inserted = insert->run("add target '" + target + "'");
  if (!inserted.ok()) return inserted.error();
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Result<bool> TuningDatabase::insert_record(const TuningRecord &record) {
  auto valid = validate_record(record);
  if (!valid.ok()) return valid.error();
  auto workload = workload_text(record.workload_key);
  if (!workload.ok()) return workload.error();
  if (!workload.value())
    return make_error(path_ + ": workload " + record.workload_key + " is not recorded; add_workload comes first");
  auto target_id = ensure_target(record.target, record.machine);
  if (!target_id.ok()) return target_id.error();

  auto insert = SqliteStatement::prepare(db_, path_,
                                         "INSERT INTO records(workload_key, target_id, schedule_text, schedule_hash, "
                                         "status, error_message, median_seconds, timings, compile_seconds, "
                                         "tool_version, created_at, features) "
                                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
                                         "ON CONFLICT(workload_key, target_id, schedule_hash) DO NOTHING");
  if (!insert.ok()) return insert.error();
  insert->bind(1, record.workload_key)
      .bind(2, target_id.value())
      .bind(3, record.schedule_text)
      .bind(4, record.schedule_hash)
      .bind(5, std::string(to_text(record.status)))
      .bind(6, record.error_message)
      .bind(7, record.median_seconds)
      .bind(8, dump_json(Json(record.timings_seconds)))
      .bind(9, record.compile_seconds)
      .bind(10, record.tool_version.empty() ? current_tool_version() : record.tool_version)
      .bind(11, record.created_at.empty() ? utc_timestamp_now() : record.created_at);
  if (record.features) insert->bind_blob(12, encode_features(*record.features));
  else insert->bind_null(12);
  auto inserted = insert->run("add a record of workload " + record.workload_key);
  if (!inserted.ok()) return inserted.error();
  return sqlite3_changes(db_) > 0;
}

Result<bool> TuningDatabase::add_record(const TuningRecord &record) {
  auto transaction = WriteTransaction::begin(db_, path_);
  if (!transaction.ok()) return transaction.error();
  auto inserted = insert_record(record);
  if (!inserted.ok()) return inserted.error();
  auto committed = transaction->commit();
  if (!committed.ok()) return committed.error();
  return inserted.value();
}

Result<bool> TuningDatabase::has_record(const std::string &workload_key, const std::string &target,
                                        const std::string &schedule_hash) const {
  auto target_id = find_target(target);
  if (!target_id.ok()) return target_id.error();
  if (!target_id.value()) return false;
  auto query = SqliteStatement::prepare(
      db_, path_, "SELECT 1 FROM records WHERE workload_key = ?1 AND target_id = ?2 AND schedule_hash = ?3");
  if (!query.ok()) return query.error();
  query->bind(1, workload_key).bind(2, *target_id.value()).bind(3, schedule_hash);
  const int code = query->step();
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  return sqlite_error(db_, code, path_, "look up a record");
}

Result<std::vector<TuningRecord>> TuningDatabase::fastest_ok(const std::string &workload_key,
                                                             const std::string &target, int64_t limit) const {
  auto target_id = find_target(target);
  if (!target_id.ok()) return target_id.error();
  if (!target_id.value()) return std::vector<TuningRecord>();
  // `status = 'ok'` is spelled out (not bound) so the planner can use the partial index.
  auto query = SqliteStatement::prepare(db_, path_,
                                        "SELECT " TESSEL_RECORD_COLUMNS TESSEL_RECORDS_WITH_TARGETS
                                        "WHERE r.workload_key = ?1 AND r.target_id = ?2 AND r.status = 'ok' "
                                        "ORDER BY r.median_seconds, r.id");
  if (!query.ok()) return query.error();
  query->bind(1, workload_key).bind(2, *target_id.value());
  // One damaged row must not take the whole database down: it is skipped, named in a
  // warning, and the next fastest is used.
  std::vector<TuningRecord> records;
  while (static_cast<int64_t>(records.size()) < limit) {
    const int code = query->step();
    if (code == SQLITE_DONE) break;
    if (code != SQLITE_ROW) return sqlite_error(db_, code, path_, "read records");
    auto record = read_record(query.value(), path_);
    if (!record.ok()) {
      warnings_.push_back("skipped " + record.error().message);
      continue;
    }
    records.push_back(std::move(record.value()));
  }
  return records;
}

std::vector<std::string> TuningDatabase::take_warnings() const {
  std::vector<std::string> taken;
  taken.swap(warnings_);
  return taken;
}

Result<std::optional<TuningRecord>> TuningDatabase::best(const std::string &workload_key,
                                                         const std::string &target) const {
  auto fastest = fastest_ok(workload_key, target, 1);
  if (!fastest.ok()) return fastest.error();
  if (fastest->empty()) return std::optional<TuningRecord>();
  return std::optional<TuningRecord>(std::move(fastest->front()));
}

Result<std::vector<TuningRecord>> TuningDatabase::top_k(const std::string &workload_key, const std::string &target,
                                                        int k) const {
  if (k <= 0) return std::vector<TuningRecord>();
  return fastest_ok(workload_key, target, k);
}

Result<std::vector<TuningRecord>> TuningDatabase::records_for_target(const std::string &target, int64_t limit) const {
  auto target_id = find_target(target);
  if (!target_id.ok()) return target_id.error();
  if (!target_id.value()) return std::vector<TuningRecord>();
  auto query = SqliteStatement::prepare(
      db_, path_, "SELECT " TESSEL_RECORD_COLUMNS TESSEL_RECORDS_WITH_TARGETS "WHERE r.target_id = ?1 ORDER BY r.id DESC LIMIT ?2");
  if (!query.ok()) return query.error();
  query->bind(1, *target_id.value()).bind(2, limit < 0 ? int64_t{-1} : limit);  // SQLite: -1 = no limit
  auto records = collect_records(query.value(), db_, path_);
  if (records.ok()) std::reverse(records->begin(), records->end());
  return records;
}

Result<std::set<std::string>> TuningDatabase::measured_hashes(const std::string &workload_key,
                                                              const std::string &target) const {
  auto target_id = find_target(target);
  if (!target_id.ok()) return target_id.error();
  std::set<std::string> hashes;
  if (!target_id.value()) return hashes;
  auto query =
      SqliteStatement::prepare(db_, path_, "SELECT schedule_hash FROM records WHERE workload_key = ?1 AND target_id = ?2");
  if (!query.ok()) return query.error();
  query->bind(1, workload_key).bind(2, *target_id.value());
  while (true) {
    const int code = query->step();
    if (code == SQLITE_DONE) return hashes;
    if (code != SQLITE_ROW) return sqlite_error(db_, code, path_, "read measured schedule hashes");
    hashes.insert(query->text(0));
  }
}

Result<PruneSummary> TuningDatabase::prune(const PruneOptions &options) {
  auto transaction = WriteTransaction::begin(db_, path_);
  if (!transaction.ok()) return transaction.error();
  PruneSummary summary;
  if (options.failed) {
    auto remove = SqliteStatement::prepare(db_, path_, "DELETE FROM records WHERE status != 'ok'");
    if (!remove.ok()) return remove.error();
    if (auto ran = remove->run("prune failed records"); !ran.ok()) return ran.error();
    summary.removed += sqlite3_changes(db_);
  }
  if (options.keep_best > 0) {
    auto remove = SqliteStatement::prepare(
        db_, path_,
        "DELETE FROM records WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER "
        "(PARTITION BY workload_key, target_id ORDER BY median_seconds, id) AS rank FROM records "
        "WHERE status = 'ok') WHERE rank > ?)");
    if (!remove.ok()) return remove.error();
    remove->bind(1, static_cast<int64_t>(options.keep_best));
    if (auto ran = remove->run("prune all but the best records"); !ran.ok()) return ran.error();
    summary.removed += sqlite3_changes(db_);
  }
  auto remaining = query_count(db_, path_, "SELECT count(*) FROM records");
  if (!remaining.ok()) return remaining.error();
  summary.remaining = remaining.value();
  if (auto committed = transaction->commit(); !committed.ok()) return committed.error();
  return summary;
}

Result<DatabaseStats> TuningDatabase::stats() const {
  DatabaseStats stats;
  auto version = read_schema_version(db_, path_);
  if (!version.ok()) return version.error();
  stats.schema_version = version.value();
  auto workloads = query_count(db_, path_, "SELECT count(*) FROM workloads");
  if (!workloads.ok()) return workloads.error();
  auto targets = query_count(db_, path_, "SELECT count(*) FROM targets");
  if (!targets.ok()) return targets.error();
  auto records = query_count(db_, path_, "SELECT count(*) FROM records");
  if (!records.ok()) return records.error();
  stats.workloads = workloads.value();
  stats.targets = targets.value();
  stats.records = records.value();

  for (RecordStatus status : all_record_statuses()) stats.records_by_status[status] = 0;
  auto by_status = SqliteStatement::prepare(db_, path_, "SELECT status, count(*) FROM records GROUP BY status");
  if (!by_status.ok()) return by_status.error();
  while (true) {
    const int code = by_status->step();
    if (code == SQLITE_DONE) break;
    if (code != SQLITE_ROW) return sqlite_error(db_, code, path_, "count records by status");
    auto status = parse_record_status(by_status->text(0));
    if (!status.ok()) return make_error(path_ + ": " + status.error().message);
    stats.records_by_status[status.value()] = by_status->integer(1);
  }

  auto per_target = SqliteStatement::prepare(
      db_, path_,
      "SELECT t.text, t.machine, count(r.id), coalesce(sum(r.status = 'ok'), 0), count(DISTINCT r.workload_key) "
      "FROM targets t LEFT JOIN records r ON r.target_id = t.id GROUP BY t.id ORDER BY t.text");
  if (!per_target.ok()) return per_target.error();
  while (true) {
    const int code = per_target->step();
    if (code == SQLITE_DONE) break;
    if (code != SQLITE_ROW) return sqlite_error(db_, code, path_, "count records per target");
    TargetStats target;
    target.target = per_target->text(0);
    target.machine = per_target->text(1);
    target.records = per_target->integer(2);
    target.ok_records = per_target->integer(3);
    target.workloads = per_target->integer(4);
    stats.per_target.push_back(std::move(target));
  }
  return stats;
}

Result<int64_t> TuningDatabase::export_jsonl(std::ostream &out, const ExportFilter &filter) const {
  // One statement reads one snapshot: records committed meanwhile by a tuner are not half in.
  auto query = SqliteStatement::prepare(db_, path_,
                                        "SELECT " TESSEL_RECORD_COLUMNS
                                        ", w.workload_text " TESSEL_RECORDS_WITH_TARGETS
                                        "JOIN workloads w ON w.key = r.workload_key "
                                        "WHERE (?1 = '' OR t.text = ?1) AND (?2 = '' OR r.workload_key = ?2) "
                                        "AND (?3 = 0 OR r.status = 'ok') ORDER BY r.id");
  if (!query.ok()) return query.error();
  query->bind(1, filter.target).bind(2, filter.workload_key).bind(3, int64_t{filter.ok_only ? 1 : 0});
  int64_t written = 0;
  while (true) {
    const int code = query->step();
    if (code == SQLITE_DONE) break;
    if (code != SQLITE_ROW) return sqlite_error(db_, code, path_, "read records to export");
    auto record = read_record(query.value(), path_);
    if (!record.ok()) return record.error();
    out << to_log_line(record.value(), query->text(14)) << '\n';
    ++written;
  }
  out.flush();
  if (!out) return make_error("cannot write the tuning log (output stream failed after " + std::to_string(written) +
                              " records)");
  return written;
}

Result<ImportSummary> TuningDatabase::import_jsonl(std::istream &in, const std::string &source_name) {
  auto transaction = WriteTransaction::begin(db_, path_);
  if (!transaction.ok()) return transaction.error();
  ImportSummary summary;
  std::string line;
  int64_t line_number = 0;
  const auto at_line = [&](const std::string &message) {
    return make_error(source_name + ":" + std::to_string(line_number) + ": " + message);
  };
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a log edited on Windows
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    ++summary.lines;
    auto entry = parse_log_line(line);
    if (!entry.ok()) return at_line(entry.error().message);
    auto new_workload = insert_workload(entry->record.workload_key, entry->workload_text);
    if (!new_workload.ok()) return at_line(new_workload.error().message);
    if (new_workload.value()) ++summary.new_workloads;
    auto inserted = insert_record(entry->record);
    if (!inserted.ok()) return at_line(inserted.error().message);
    ++(inserted.value() ? summary.inserted : summary.duplicates);
  }
  if (in.bad()) return make_error(source_name + ": read error after line " + std::to_string(line_number));
  auto committed = transaction->commit();
  if (!committed.ok()) return committed.error();
  return summary;
}

}  // namespace tessel
