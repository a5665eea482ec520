#include "tuning_db/tuning_database.h"

#include <algorithm>
#include <cstring>
#include <istream>
#include <ostream>

#include "base/json.h"
#include "tuning_db/database_location.h"
#include "tuning_db/feature_blob.h"
#include "tuning_db/postgres_connection.h"
#include "tuning_db/retry_unreachable.h"
#include "tuning_db/schema.h"
#include "tuning_db/sqlite_connection.h"
#include "tuning_db/tuning_log_line.h"

namespace tessel {

namespace {

// Every query that returns records selects these, in this order (see read_record).
#define TESSEL_RECORD_COLUMNS                                                                                   \
  "r.id, r.workload_key, t.text, coalesce(nullif(r.machine, ''), t.machine), r.schedule_text, r.schedule_hash, r.status, r.error_message, "     \
  "r.median_seconds, r.timings, r.compile_seconds, r.tool_version, r.created_at, r.features "
#define TESSEL_RECORDS_WITH_TARGETS "FROM records r JOIN targets t ON t.id = r.target_id "
// Records timed with cold weights rank before warm ones of the same workload.
#define TESSEL_COLD_RECORDS_FIRST "(CASE WHEN r.machine LIKE '%" TESSEL_COLD_WEIGHTS_SUFFIX "' THEN 0 ELSE 1 END), "

/// The timings column: a JSON array of seconds, "[0.00121,0.00119]".
Result<std::vector<double>> read_timings(const std::string &text) {
  auto timings = parse_json(text);
  if (!timings.ok()) return timings.error();
  return json_numbers(timings.value(), "the timings column");
}

Result<TuningRecord> read_record(const SqlQuery &row, const std::string &location) {
  TuningRecord record;
  record.id = row.integer(0);
  const std::string which = location + ": record " + std::to_string(record.id);
  record.workload_key = row.text(1);
  record.target = row.text(2);
  record.machine = row.text(3);
  record.schedule_text = row.text(4);
  record.schedule_hash = row.text(5);
  auto status = parse_record_status(row.text(6));
  if (!status.ok()) return make_error(ErrorKind::InvalidInput, which + ": " + status.error().message);
  record.status = status.value();
  record.error_message = row.text(7);
  if (!row.is_null(8)) record.median_seconds = row.real(8);
  auto timings = read_timings(row.text(9));
  if (!timings.ok())
    return make_error(ErrorKind::InvalidInput, which + ": malformed timings: " + timings.error().message);
  record.timings_seconds = std::move(timings.value());
  record.compile_seconds = row.real(10);
  record.tool_version = row.text(11);
  record.created_at = row.text(12);
  if (!row.is_null(13)) {
    auto features = decode_features(row.blob(13));
    if (!features.ok()) return make_error(ErrorKind::InvalidInput, which + ": malformed " + features.error().message);
    record.features = std::move(features.value());
  }
  return record;
}

/// Runs `query` to the end, reading a record from each row.
Result<std::vector<TuningRecord>> collect_records(SqlQuery &query, const std::string &location) {
  std::vector<TuningRecord> records;
  while (true) {
    auto row = query.next();
    if (!row.ok()) return row.error();
    if (!row.value()) return records;
    auto record = read_record(query, location);
    if (!record.ok()) return record.error();
    records.push_back(std::move(record.value()));
  }
}

/// The first row's first column as an integer (counts, ids); nullopt when there is no row.
Result<std::optional<int64_t>> first_integer(SqlQuery &query) {
  auto row = query.next();
  if (!row.ok()) return row.error();
  if (!row.value()) return std::optional<int64_t>();
  return std::optional<int64_t>(query.integer(0));
}

/// Runs a query whose one row holds one integer (counts).
Result<int64_t> query_count(SqlConnection &connection, const char *sql) {
  auto query = connection.prepare(sql, "count records");
  if (!query.ok()) return query.error();
  auto count = first_integer(*query.value());
  if (!count.ok()) return count.error();
  return count.value().value_or(0);
}

}  // namespace

Result<TuningDatabase> TuningDatabase::open(const std::string &location, const DatabaseOpenOptions &options) {
  Result<std::unique_ptr<SqlConnection>> connection = make_error("unopened");
  if (is_postgres_url(location)) {
    PostgresOpenOptions postgres;
    postgres.read_only = options.read_only;
    postgres.connect_timeout_s = options.connect_timeout_s;
    connection = open_postgres(location, postgres);
  } else {
    SqliteOpenOptions sqlite;
    sqlite.read_only = options.read_only;
    sqlite.busy_timeout_ms = options.busy_timeout_ms;
    connection = open_sqlite(location, sqlite);
  }
  if (!connection.ok()) return connection.error();
  TuningDatabase database(std::move(connection.value()));
  database.retry_.seconds = options.reconnect_seconds;
  database.retry_.log = options.reconnect_log;
  SqlConnection &opened = *database.connection_;
  if (options.read_only) {
    auto version = opened.schema_version();
    if (!version.ok()) return version.error();
    if (version.value() > kTuningSchemaVersion) return newer_schema_error(opened.location(), version.value());
    if (version.value() == 0)
      return make_error(ErrorKind::InvalidInput,
                        opened.location() + " is not a tessel tuning database (it has no tessel schema)");
    if (version.value() < kTuningSchemaVersion)
      return make_error(ErrorKind::Unsupported,
                        opened.location() + " has the older schema " + std::to_string(version.value()) +
                        "; open it once where it can be written to migrate it");
    return database;
  }
  auto migrated = migrate_schema(opened);
  if (!migrated.ok()) return migrated.error();
  return database;
}

TuningDatabase::TuningDatabase(std::unique_ptr<SqlConnection> connection) : connection_(std::move(connection)) {}
TuningDatabase::TuningDatabase(TuningDatabase &&other) noexcept = default;
TuningDatabase &TuningDatabase::operator=(TuningDatabase &&other) noexcept = default;
TuningDatabase::~TuningDatabase() = default;

const std::string &TuningDatabase::location() const { return connection_->location(); }

template <typename Attempt>
auto TuningDatabase::retrying(Attempt attempt) const -> decltype(attempt()) {
  // Inside a transaction a lost connection lost the transaction too: the caller that
  // began it retries it as a whole.
  if (retry_.seconds <= 0 || connection_->in_transaction()) return attempt();
  return retry_unreachable(attempt, retry_);
}

Result<bool> TuningDatabase::insert_workload(const std::string &key, const std::string &workload_text) {
  if (key.empty()) return make_error(ErrorKind::InvalidInput, "empty workload key");
  // Insert first, then compare: two tuners adding the same workload at once both succeed.
  auto insert = connection_->prepare(
      "INSERT INTO workloads(key, workload_text, first_seen) VALUES(?1, ?2, ?3) ON CONFLICT(key) DO NOTHING "
      "RETURNING key",
      "add workload " + key);
  if (!insert.ok()) return insert.error();
  insert.value()->bind(1, key).bind(2, workload_text).bind(3, utc_timestamp_now());
  auto inserted = insert.value()->next();
  if (!inserted.ok()) return inserted.error();
  if (inserted.value()) {
    auto finished = insert.value()->run();
    if (!finished.ok()) return finished.error();
    return true;
  }
  auto existing = this->workload_text(key);
  if (!existing.ok()) return existing.error();
  if (!existing.value() || *existing.value() != workload_text)
    return make_error(ErrorKind::InvalidInput,
                      location() + ": workload " + key +
                      " is already recorded with a different workload text (hash collision or damaged data)");
  return false;
}

Result<void> TuningDatabase::add_workload(const std::string &key, const std::string &workload_text) {
  return retrying([&]() -> Result<void> {
    auto transaction = SqlTransaction::begin(*connection_);
    if (!transaction.ok()) return transaction.error();
    auto inserted = insert_workload(key, workload_text);
    if (!inserted.ok()) return inserted.error();
    return transaction->commit();
  });
}

Result<std::optional<std::string>> TuningDatabase::workload_text(const std::string &key) const {
  return retrying([&]() -> Result<std::optional<std::string>> {
    auto query = connection_->prepare("SELECT workload_text FROM workloads WHERE key = ?1", "look up workload " + key);
    if (!query.ok()) return query.error();
    query.value()->bind(1, key);
    auto row = query.value()->next();
    if (!row.ok()) return row.error();
    if (!row.value()) return std::optional<std::string>();
    return std::optional<std::string>(query.value()->text(0));
  });
}

Result<std::optional<int64_t>> TuningDatabase::find_target(const std::string &target) const {
  auto query = connection_->prepare("SELECT id FROM targets WHERE text = ?1", "look up target '" + target + "'");
  if (!query.ok()) return query.error();
  query.value()->bind(1, target);
  return first_integer(*query.value());
}

Result<int64_t> TuningDatabase::ensure_target(const std::string &target, const std::string &machine) {
  const std::string doing = "add target '" + target + "'";
  // Every record insert passes here: one lookup when the target is known and described.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto query = connection_->prepare("SELECT id, machine FROM targets WHERE text = ?1", doing);
    if (!query.ok()) return query.error();
    query.value()->bind(1, target);
    auto row = query.value()->next();
    if (!row.ok()) return row.error();
    if (row.value()) {
      const int64_t id = query.value()->integer(0);
      // The first record that knows the machine describes it; later ones do not overwrite.
      if (query.value()->text(1).empty() && !machine.empty()) {
        auto describe = connection_->prepare("UPDATE targets SET machine = ?1 WHERE id = ?2 AND machine = ''", doing);
        if (!describe.ok()) return describe.error();
        describe.value()->bind(1, machine).bind(2, id);
        if (auto ran = describe.value()->run(); !ran.ok()) return ran.error();
      }
      return id;
    }
    // New: insert, tolerating another process inserting it at the same moment, then look again.
    auto insert = connection_->prepare("INSERT INTO targets(text, machine) VALUES(?1, ?2) ON CONFLICT(text) DO NOTHING",
                                       doing);
    if (!insert.ok()) return insert.error();
    insert.value()->bind(1, target).bind(2, machine);
    if (auto ran = insert.value()->run(); !ran.ok()) return ran.error();
  }
  return make_error(ErrorKind::Internal, location() + ": cannot " + doing + ": it is missing right after insertion");
}

Result<bool> TuningDatabase::insert_record(const TuningRecord &record) {
  auto valid = validate_record(record);
  if (!valid.ok()) return valid.error();
  auto workload = workload_text(record.workload_key);
  if (!workload.ok()) return workload.error();
  if (!workload.value())
    return make_error(ErrorKind::NotFound,
                      location() + ": workload " + record.workload_key + " is not recorded; add_workload comes first");
  auto target_id = ensure_target(record.target, record.machine);
  if (!target_id.ok()) return target_id.error();

  auto insert = connection_->prepare("INSERT INTO records(workload_key, target_id, schedule_text, schedule_hash, "
                                     "status, error_message, median_seconds, timings, compile_seconds, "
                                     "tool_version, created_at, features, machine) "
                                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) "
                                     "ON CONFLICT(workload_key, target_id, schedule_hash) DO NOTHING",
                                     "add a record of workload " + record.workload_key);
  if (!insert.ok()) return insert.error();
  SqlQuery &query = *insert.value();
  query.bind(1, record.workload_key)
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
  if (record.features) query.bind_blob(12, encode_features(*record.features));
  else query.bind_null(12);
  query.bind(13, record.machine);
  auto inserted = query.run();
  if (!inserted.ok()) return inserted.error();
  return inserted.value() > 0;
}

Result<bool> TuningDatabase::add_record(const TuningRecord &record) {
  return retrying([&]() -> Result<bool> {
    auto transaction = SqlTransaction::begin(*connection_);
    if (!transaction.ok()) return transaction.error();
    auto inserted = insert_record(record);
    if (!inserted.ok()) return inserted.error();
    auto committed = transaction->commit();
    if (!committed.ok()) return committed.error();
    return inserted.value();
  });
}

Result<bool> TuningDatabase::has_record(const std::string &workload_key, const std::string &target,
                                        const std::string &schedule_hash) const {
  return retrying([&]() -> Result<bool> {
    auto target_id = find_target(target);
    if (!target_id.ok()) return target_id.error();
    if (!target_id.value()) return false;
    auto query = connection_->prepare(
        "SELECT 1 FROM records WHERE workload_key = ?1 AND target_id = ?2 AND schedule_hash = ?3", "look up a record");
    if (!query.ok()) return query.error();
    query.value()->bind(1, workload_key).bind(2, *target_id.value()).bind(3, schedule_hash);
    return query.value()->next();
  });
}

Result<std::optional<TuningRecord>> TuningDatabase::find_record(const std::string &workload_key,
                                                                const std::string &target,
                                                                const std::string &schedule_hash) const {
  return retrying([&]() -> Result<std::optional<TuningRecord>> {
    auto query = connection_->prepare("SELECT " TESSEL_RECORD_COLUMNS TESSEL_RECORDS_WITH_TARGETS
                                      "WHERE r.workload_key = ?1 AND t.text = ?2 AND r.schedule_hash = ?3",
                                      "look up a record");
    if (!query.ok()) return query.error();
    query.value()->bind(1, workload_key).bind(2, target).bind(3, schedule_hash);
    auto records = collect_records(*query.value(), location());
    if (!records.ok()) return records.error();
    if (records->empty()) return std::optional<TuningRecord>();
    return std::optional<TuningRecord>(std::move(records->front()));
  });
}

Result<std::vector<TuningRecord>> TuningDatabase::fastest_ok(const std::string &workload_key,
                                                             const std::string &target, int64_t limit) const {
  return retrying([&]() -> Result<std::vector<TuningRecord>> {
    auto target_id = find_target(target);
    if (!target_id.ok()) return target_id.error();
    if (!target_id.value()) return std::vector<TuningRecord>();
    // `status = 'ok'` is spelled out (not bound) so the planner can use the partial index.
    const std::string sql = "SELECT " TESSEL_RECORD_COLUMNS TESSEL_RECORDS_WITH_TARGETS
                            "WHERE r.workload_key = ?1 AND r.target_id = ?2 AND r.status = 'ok' "
                            "ORDER BY " TESSEL_COLD_RECORDS_FIRST "r.median_seconds, r.id LIMIT ?3 OFFSET ?4";
    // One damaged row must not take the whole database down: it is skipped, named in a
    // warning, and the next fastest is used. Rows come in pages, a few more than wanted,
    // so a server sends little more than `limit` rows unless some are damaged.
    const int64_t page = limit + 8;
    std::vector<TuningRecord> records;
    for (int64_t offset = 0; static_cast<int64_t>(records.size()) < limit; offset += page) {
      auto query = connection_->prepare(sql, "read records");
      if (!query.ok()) return query.error();
      query.value()->bind(1, workload_key).bind(2, *target_id.value()).bind(3, page).bind(4, offset);
      int64_t rows = 0;
      while (static_cast<int64_t>(records.size()) < limit) {
        auto row = query.value()->next();
        if (!row.ok()) return row.error();
        if (!row.value()) break;
        ++rows;
        auto record = read_record(*query.value(), location());
        if (!record.ok()) {
          warnings_.push_back("skipped " + record.error().message);
          continue;
        }
        records.push_back(std::move(record.value()));
      }
      if (rows < page) break;
    }
    return records;
  });
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

Result<std::vector<std::pair<std::string, std::string>>> TuningDatabase::tuned_workloads(
    const std::string &target) const {
  return retrying([&]() -> Result<std::vector<std::pair<std::string, std::string>>> {
    std::vector<std::pair<std::string, std::string>> workloads;
    auto target_id = find_target(target);
    if (!target_id.ok()) return target_id.error();
    if (!target_id.value()) return workloads;
    auto query = connection_->prepare(
        "SELECT w.key, w.workload_text FROM workloads w WHERE EXISTS (SELECT 1 FROM records r "
        "WHERE r.workload_key = w.key AND r.target_id = ?1 AND r.status = 'ok') ORDER BY w.key",
        "list tuned workloads");
    if (!query.ok()) return query.error();
    query.value()->bind(1, *target_id.value());
    for (;;) {
      auto row = query.value()->next();
      if (!row.ok()) return row.error();
      if (!row.value()) break;
      workloads.emplace_back(query.value()->text(0), query.value()->text(1));
    }
    return workloads;
  });
}

Result<std::vector<TuningRecord>> TuningDatabase::top_k(const std::string &workload_key, const std::string &target,
                                                        int k) const {
  if (k <= 0) return std::vector<TuningRecord>();
  return fastest_ok(workload_key, target, k);
}

Result<std::vector<TuningRecord>> TuningDatabase::records_for_target(const std::string &target, int64_t limit) const {
  return retrying([&]() -> Result<std::vector<TuningRecord>> {
    auto target_id = find_target(target);
    if (!target_id.ok()) return target_id.error();
    if (!target_id.value()) return std::vector<TuningRecord>();
    // SQLite reads LIMIT -1 as no limit, PostgreSQL refuses it: the clause is left out instead.
    const std::string sql = std::string("SELECT " TESSEL_RECORD_COLUMNS TESSEL_RECORDS_WITH_TARGETS
                                        "WHERE r.target_id = ?1 ORDER BY r.id DESC") +
                            (limit >= 0 ? " LIMIT ?2" : "");
    auto query = connection_->prepare(sql, "read records");
    if (!query.ok()) return query.error();
    query.value()->bind(1, *target_id.value());
    if (limit >= 0) query.value()->bind(2, limit);
    auto records = collect_records(*query.value(), location());
    if (records.ok()) std::reverse(records->begin(), records->end());
    return records;
  });
}

Result<std::set<std::string>> TuningDatabase::measured_hashes(const std::string &workload_key,
                                                              const std::string &target) const {
  return retrying([&]() -> Result<std::set<std::string>> {
    auto target_id = find_target(target);
    if (!target_id.ok()) return target_id.error();
    std::set<std::string> hashes;
    if (!target_id.value()) return hashes;
    auto query = connection_->prepare("SELECT schedule_hash FROM records WHERE workload_key = ?1 AND target_id = ?2",
                                      "read measured schedule hashes");
    if (!query.ok()) return query.error();
    query.value()->bind(1, workload_key).bind(2, *target_id.value());
    while (true) {
      auto row = query.value()->next();
      if (!row.ok()) return row.error();
      if (!row.value()) return hashes;
      hashes.insert(query.value()->text(0));
    }
  });
}

Result<PruneSummary> TuningDatabase::prune(const PruneOptions &options) {
  return retrying([&]() -> Result<PruneSummary> {
    auto transaction = SqlTransaction::begin(*connection_);
    if (!transaction.ok()) return transaction.error();
    PruneSummary summary;
    if (options.failed) {
      auto remove = connection_->prepare("DELETE FROM records WHERE status != 'ok'", "prune failed records");
      if (!remove.ok()) return remove.error();
      auto removed = remove.value()->run();
      if (!removed.ok()) return removed.error();
      summary.removed += removed.value();
    }
    if (options.keep_best > 0) {
      auto remove = connection_->prepare(
          "DELETE FROM records WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER "
          "(PARTITION BY workload_key, target_id ORDER BY median_seconds, id) AS rank FROM records "
          "WHERE status = 'ok') AS ranked WHERE rank > ?1)",
          "prune all but the best records");
      if (!remove.ok()) return remove.error();
      remove.value()->bind(1, static_cast<int64_t>(options.keep_best));
      auto removed = remove.value()->run();
      if (!removed.ok()) return removed.error();
      summary.removed += removed.value();
    }
    auto remaining = query_count(*connection_, "SELECT count(*) FROM records");
    if (!remaining.ok()) return remaining.error();
    summary.remaining = remaining.value();
    if (auto committed = transaction->commit(); !committed.ok()) return committed.error();
    return summary;
  });
}

Result<DatabaseStats> TuningDatabase::stats() const {
  return retrying([&]() -> Result<DatabaseStats> {
    DatabaseStats stats;
    auto version = connection_->schema_version();
    if (!version.ok()) return version.error();
    stats.schema_version = version.value();
    auto workloads = query_count(*connection_, "SELECT count(*) FROM workloads");
    if (!workloads.ok()) return workloads.error();
    auto targets = query_count(*connection_, "SELECT count(*) FROM targets");
    if (!targets.ok()) return targets.error();
    auto records = query_count(*connection_, "SELECT count(*) FROM records");
    if (!records.ok()) return records.error();
    stats.workloads = workloads.value();
    stats.targets = targets.value();
    stats.records = records.value();

    for (RecordStatus status : all_record_statuses()) stats.records_by_status[status] = 0;
    auto by_status =
        connection_->prepare("SELECT status, count(*) FROM records GROUP BY status", "count records by status");
    if (!by_status.ok()) return by_status.error();
    while (true) {
      auto row = by_status.value()->next();
      if (!row.ok()) return row.error();
      if (!row.value()) break;
      auto status = parse_record_status(by_status.value()->text(0));
      if (!status.ok()) return make_error(ErrorKind::InvalidInput, location() + ": " + status.error().message);
      stats.records_by_status[status.value()] = by_status.value()->integer(1);
    }

    auto per_target = connection_->prepare(
        "SELECT t.text, t.machine, count(r.id), coalesce(sum(CASE WHEN r.status = 'ok' THEN 1 ELSE 0 END), 0), "
        "count(DISTINCT r.workload_key) "
        "FROM targets t LEFT JOIN records r ON r.target_id = t.id GROUP BY t.id ORDER BY t.text",
        "count records per target");
    if (!per_target.ok()) return per_target.error();
    SqlQuery &rows = *per_target.value();
    while (true) {
      auto row = rows.next();
      if (!row.ok()) return row.error();
      if (!row.value()) break;
      TargetStats target;
      target.target = rows.text(0);
      target.machine = rows.text(1);
      target.records = rows.integer(2);
      target.ok_records = rows.integer(3);
      target.workloads = rows.integer(4);
      stats.per_target.push_back(std::move(target));
    }

    auto per_machine = connection_->prepare(
        "SELECT t.text, r.machine, count(r.id), sum(CASE WHEN r.status = 'ok' THEN 1 ELSE 0 END), "
        "count(DISTINCT r.workload_key) "
        "FROM records r JOIN targets t ON t.id = r.target_id GROUP BY t.text, r.machine ORDER BY t.text, r.machine",
        "count records per machine");
    if (!per_machine.ok()) return per_machine.error();
    SqlQuery &machine_rows = *per_machine.value();
    while (true) {
      auto row = machine_rows.next();
      if (!row.ok()) return row.error();
      if (!row.value()) break;
      TargetStats machine;
      machine.target = machine_rows.text(0);
      machine.machine = machine_rows.text(1);
      machine.records = machine_rows.integer(2);
      machine.ok_records = machine_rows.integer(3);
      machine.workloads = machine_rows.integer(4);
      stats.per_machine.push_back(std::move(machine));
    }
    return stats;
  });
}

Result<int64_t> TuningDatabase::export_jsonl(std::ostream &out, const ExportFilter &filter) const {
  // One statement reads one snapshot: records committed meanwhile by a tuner are not half in.
  auto prepared = connection_->prepare("SELECT " TESSEL_RECORD_COLUMNS
                                       ", w.workload_text " TESSEL_RECORDS_WITH_TARGETS
                                       "JOIN workloads w ON w.key = r.workload_key "
                                       "WHERE (?1 = '' OR t.text = ?1) AND (?2 = '' OR r.workload_key = ?2) "
                                       "AND (?3 = 0 OR r.status = 'ok') ORDER BY r.id",
                                       "read records to export");
  if (!prepared.ok()) return prepared.error();
  SqlQuery &query = *prepared.value();
  query.bind(1, filter.target).bind(2, filter.workload_key).bind(3, int64_t{filter.ok_only ? 1 : 0});
  int64_t written = 0;
  while (true) {
    auto row = query.next();
    if (!row.ok()) return row.error();
    if (!row.value()) break;
    auto record = read_record(query, location());
    if (!record.ok()) return record.error();
    out << to_log_line(record.value(), query.text(14)) << '\n';
    ++written;
  }
  out.flush();
  if (!out) return make_error(ErrorKind::Io,
                              "cannot write the tuning log (output stream failed after " + std::to_string(written) +
                              " records)");
  return written;
}

Result<ImportSummary> TuningDatabase::import_jsonl(std::istream &in, const std::string &source_name) {
  auto transaction = SqlTransaction::begin(*connection_);
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
  if (in.bad())
    return make_error(ErrorKind::Io, source_name + ": read error after line " + std::to_string(line_number));
  auto committed = transaction->commit();
  if (!committed.ok()) return committed.error();
  return summary;
}

}  // namespace tessel
