#pragma once
// The work queue of remote tuning, in the tuning database itself (schema 3's queue table):
// a coordinator (`tessel tune --remote`) enqueues each batch's candidates; workers (`tessel
// worker`, on any machine) claim them under a lease, measure them, and complete each one by
// writing its record and marking it done in one transaction. A worker that dies stops
// renewing its lease; when the lease runs out (the database's clock) the candidate is
// claimable again. A record is written at most once per (workload, target, schedule hash)
// whatever happens, by the records table's uniqueness. On PostgreSQL claims skip rows other
// workers hold (FOR UPDATE SKIP LOCKED), so workers never wait on each other; on SQLite the
// file's write lock serializes them (one machine).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

/// One candidate in the queue: what a worker needs to rebuild and measure it (the workload
/// text is in the workloads table), never code or paths.
struct QueuedCandidate {
  int64_t id = 0;
  std::string batch;
  std::string workload_key;
  std::string target;
  std::string schedule_text;  // empty: the task's built-in schedule
  std::string schedule_hash;
  std::optional<std::vector<float>> features;  // the coordinator's cost-model features, kept in the record
  int attempts = 0;  // claims so far, this one included
};

struct QueueStats {
  int64_t queued = 0;
  int64_t claimed = 0;  // leases running
  int64_t expired = 0;  // claimed, lease run out: claimable again
  int64_t done = 0;
};

class WorkQueue {
 public:
  /// Uses the database's connection (one thread at a time, as the database itself).
  explicit WorkQueue(TuningDatabase &db) : db_(db) {}

  /// Adds a batch's candidates in one transaction (their workloads must be recorded).
  /// A candidate already in the batch is not added twice.
  Result<void> enqueue(const std::string &batch, const std::vector<QueuedCandidate> &candidates);

  /// Claims up to `limit` candidates of `target`, oldest first: queued ones and claimed
  /// ones whose lease ran out. Each gets a lease of `lease_seconds` held by `worker`.
  Result<std::vector<QueuedCandidate>> claim(const std::string &target, const std::string &worker, int limit,
                                             double lease_seconds);
  /// The heartbeat: renews every lease the worker holds; returns how many.
  Result<int64_t> renew_leases(const std::string &worker, double lease_seconds);
  /// Writes the candidate's record and marks it done, in one transaction. false when the
  /// record was there already (another worker finished it after this one's lease ran out).
  Result<bool> complete(const QueuedCandidate &candidate, const TuningRecord &record);

  /// Waits up to `timeout_seconds` for a coordinator to enqueue work (PostgreSQL wakes the
  /// waiter at once; on SQLite it is a short sleep, and the caller polls).
  void wait_for_work(double timeout_seconds);
  /// Waits up to `timeout_seconds` for a worker to complete a candidate (likewise).
  void wait_for_progress(double timeout_seconds);

  /// Candidates of the batch not done yet.
  Result<int64_t> unfinished(const std::string &batch);
  /// Removes a finished batch's rows (the records stay).
  Result<void> forget(const std::string &batch);
  Result<QueueStats> stats();

 private:
  TuningDatabase &db_;
};

/// A batch name no other coordinator picks: 16 random hex digits.
std::string new_batch_name();

}  // namespace tessel
