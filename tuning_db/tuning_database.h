#pragma once
// The tuning database: every measurement the tuner makes (DESIGN.md, tuning_db/), in an
// SQLite file (the default; WAL mode and a busy timeout let several tuner processes on one
// machine write at once) or on a PostgreSQL server (postgresql://..., shared by machines).
// Every query is written once here, over the backend's SqlConnection. Each record is its
// own short transaction, so whatever was measured is stored the moment it returns.
// One TuningDatabase is one connection: use it from one thread at a time.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "tuning_db/best_record_source.h"
#include "tuning_db/retry_unreachable.h"
#include "tuning_db/sql_connection.h"
#include "tuning_db/tuning_record.h"

namespace tessel {

struct DatabaseOpenOptions {
  /// Queries only; the file must exist and have the current schema (nothing is migrated).
  bool read_only = false;
  /// SQLite: how long a write waits for another process's transaction before giving up.
  int busy_timeout_ms = 10000;
  /// PostgreSQL: seconds to wait for the server when neither the URL nor PGCONNECT_TIMEOUT says.
  int connect_timeout_s = 10;
  /// After opening: a query that fails because the server became unreachable (restarted,
  /// network cut) is tried again for up to this long, the line below said once per outage.
  /// Only server errors of that kind are retried, never inside a caller's transaction.
  double reconnect_seconds = 300;
  std::function<void(const std::string &)> reconnect_log;
};

struct TargetStats {
  std::string target;
  std::string machine;
  int64_t records = 0;
  int64_t ok_records = 0;
  int64_t workloads = 0;  // distinct workloads with a record on this target
};

struct DatabaseStats {
  int schema_version = 0;
  int64_t workloads = 0;
  int64_t targets = 0;
  int64_t records = 0;
  std::map<RecordStatus, int64_t> records_by_status;  // every status present, zero when none
  std::vector<TargetStats> per_target;                // ordered by target text
  /// Per machine signature that measured (workers on many machines share a database);
  /// ordered by target, then machine.
  std::vector<TargetStats> per_machine;
};

/// Which records export_jsonl writes; empty fields do not filter.
struct ExportFilter {
  std::string target;
  std::string workload_key;
  bool ok_only = false;
};

struct ImportSummary {
  int64_t lines = 0;        // non-blank lines read
  int64_t inserted = 0;     // new records
  int64_t duplicates = 0;   // records already present (same workload, target, schedule hash)
  int64_t new_workloads = 0;
};

/// What prune() removes. Pruned schedules may be measured again by a later tuning run.
struct PruneOptions {
  bool failed = false;  // every record whose status is not ok
  int keep_best = 0;    // > 0: only the keep_best fastest ok records per (workload, target) stay
};

struct PruneSummary {
  int64_t removed = 0;
  int64_t remaining = 0;
};

class TuningDatabase : public BestRecordSource {
 public:
  /// Opens `location` (a file path, or a postgresql:// URL), creating the file and the
  /// schema when missing and migrating an older schema. Errors name the database: not a
  /// database, newer schema, locked, read-only, server unreachable, ...
  static Result<TuningDatabase> open(const std::string &location, const DatabaseOpenOptions &options = {});

  TuningDatabase(TuningDatabase &&other) noexcept;
  TuningDatabase &operator=(TuningDatabase &&other) noexcept;
  TuningDatabase(const TuningDatabase &) = delete;
  TuningDatabase &operator=(const TuningDatabase &) = delete;
  ~TuningDatabase() override;

  /// The file path, or the server URL with its password masked: fit to print.
  const std::string &location() const;

  /// Records the workload's text under its key (idempotent). A different text under a key
  /// already present is an error: keys are hashes of the text, so it means a collision or
  /// a damaged file.
  Result<void> add_workload(const std::string &key, const std::string &workload_text);
  Result<std::optional<std::string>> workload_text(const std::string &key) const;

  /// Adds a measured record (its workload must have been added). Returns false, and
  /// changes nothing, when the same (workload, target, schedule_hash) is already recorded:
  /// a schedule is never measured twice. Fills tool_version and created_at when empty.
  Result<bool> add_record(const TuningRecord &record);
  Result<bool> has_record(const std::string &workload_key, const std::string &target,
                          const std::string &schedule_hash) const;

  /// The record of one schedule (any status); nullopt when it was never measured.
  Result<std::optional<TuningRecord>> find_record(const std::string &workload_key, const std::string &target,
                                                  const std::string &schedule_hash) const;

  Result<std::optional<TuningRecord>> best(const std::string &workload_key, const std::string &target) const override;
  std::vector<std::string> take_warnings() const override;
  /// The k fastest ok records, fastest first (the tuner's seeds).
  Result<std::vector<TuningRecord>> top_k(const std::string &workload_key, const std::string &target, int k) const;
  Result<std::vector<TuningRecord>> fastest(const std::string &workload_key, const std::string &target,
                                            int k) const override {
    return top_k(workload_key, target, k);
  }
  /// Every record of the target, any status, oldest first; with limit >= 0 only the newest
  /// `limit` of them (the cost model's training set).
  Result<std::vector<TuningRecord>> records_for_target(const std::string &target, int64_t limit = -1) const;
  /// Every workload with at least one ok record on the target, as (key, text): where a
  /// new task looks for relatives to transfer schedules from.
  Result<std::vector<std::pair<std::string, std::string>>> tuned_workloads(const std::string &target) const;
  /// Schedule hashes already measured (any status) for the workload on the target.
  Result<std::set<std::string>> measured_hashes(const std::string &workload_key, const std::string &target) const;

  Result<DatabaseStats> stats() const;

  /// Deletes records as `options` say, in one transaction.
  Result<PruneSummary> prune(const PruneOptions &options);

  /// Writes the tuning log (one JSON line per record, oldest first); returns the count.
  Result<int64_t> export_jsonl(std::ostream &out, const ExportFilter &filter = {}) const;
  /// Reads a tuning log in one transaction: a malformed line is an error naming
  /// `source_name` and the line number, and then nothing of the log is applied.
  Result<ImportSummary> import_jsonl(std::istream &in, const std::string &source_name = "tuning log");

 private:
  friend class WorkQueue;  // the queue's statements share this connection and its transactions
  explicit TuningDatabase(std::unique_ptr<SqlConnection> connection);
  /// Writers for use inside an open transaction.
  Result<bool> insert_workload(const std::string &key, const std::string &workload_text);
  Result<int64_t> ensure_target(const std::string &target, const std::string &machine);
  Result<bool> insert_record(const TuningRecord &record);
  /// nullopt when the target was never recorded.
  Result<std::optional<int64_t>> find_target(const std::string &target) const;
  Result<std::vector<TuningRecord>> fastest_ok(const std::string &workload_key, const std::string &target,
                                               int64_t limit) const;

  /// attempt() with retry_ when not inside a transaction.
  template <typename Attempt>
  auto retrying(Attempt attempt) const -> decltype(attempt());

  std::unique_ptr<SqlConnection> connection_;
  RetryWindow retry_;
  /// Records fastest_ok() skipped because they could not be read, until take_warnings().
  mutable std::vector<std::string> warnings_;
};

}  // namespace tessel
