#pragma once
// `tessel worker`: the measuring side of remote tuning. Claims candidates of its target from
// the tuning database's work queue, rebuilds each task from its workload text (the queue
// carries schedule text and workload keys only, never code or paths), measures with the
// local Measurer's isolation and verification (its own reference output per task), and
// writes each record as it completes the candidate. A heartbeat process renews the
// worker's leases while it measures; when the worker dies, the heartbeat dies with it and
// the leases run out.
#include <cstdint>
#include <functional>
#include <string>

#include "codegen/target.h"
#include "tuner/measure.h"

namespace tessel {

struct QueueWorkerOptions {
  Target target;            // what it measures for; claims candidates of target.to_string()
  std::string name;         // empty: host:pid
  int claim_batch = 0;      // candidates per claim; 0: the measurer's parallel builders (cores)
  double lease_seconds = 60;
  double poll_seconds = 2;         // an idle worker looks again this often (new batches wake it at once on PostgreSQL)
  double idle_exit_seconds = 0;    // > 0: stop after this long with nothing to claim
  int64_t max_candidates = 0;      // > 0: stop after completing this many
  int max_attempts = 3;            // a candidate claimed this often (its workers died) is recorded as a crash
  double reconnect_seconds = 300;  // how long an unreachable database server is waited for
  MeasureOptions measure;
  std::function<void(const std::string &)> log;
};

struct QueueWorkerSummary {
  int64_t completed = 0;   // candidates this worker completed
  int64_t recorded = 0;    // of which it wrote the record (the rest were recorded already)
  int64_t failed = 0;      // records with a status other than ok
  int64_t claims = 0;      // claim queries that returned work
  double wall_seconds = 0;
};

/// Runs until idle_exit_seconds / max_candidates say stop (or forever); errors are the
/// database's (unreachable for good, schema), not a candidate's.
Result<QueueWorkerSummary> run_queue_worker(const std::string &db_location, const QueueWorkerOptions &options);

}  // namespace tessel
