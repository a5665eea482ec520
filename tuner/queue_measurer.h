#pragma once
// The coordinator's side of remote tuning (`tessel tune --remote`): each batch goes into the
// tuning database's work queue, `tessel worker`s measure it wherever they run and write the
// records, and the coordinator reads the results back from those records. The reference
// (the built-in schedule) is queued the same way, so every time of a task comes from the
// workers' machines.
#include <functional>
#include <string>
#include <vector>

#include "task/task.h"
#include "tuner/candidate_measurer.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

struct QueueMeasureOptions {
  /// How often the coordinator looks whether a batch is finished, at the latest (each
  /// completion wakes it at once on PostgreSQL; on SQLite it polls every 50 ms).
  double poll_seconds = 1;
  /// A line while a batch waits on no progress this long (no worker running?); repeated.
  double patience_seconds = 60;
  /// > 0: a batch that makes no progress this long is an error (0: wait for workers).
  double give_up_seconds = 0;
  /// How long an unreachable database server (restarted, network cut) is waited for.
  double reconnect_seconds = 300;
  std::function<void(const std::string &)> log;
};

class QueueMeasurer : public CandidateMeasurer {
 public:
  /// The task's workload must be in `db` (the workers rebuild the task from its text).
  QueueMeasurer(Task task, std::string target_text, TuningDatabase &db, QueueMeasureOptions options);

  Result<MeasureResult> prepare_reference() override;
  Result<std::vector<MeasureResult>> measure(const std::vector<Candidate> &candidates) override;

  /// prepare_reference() of many tasks in one queued batch, so workers measure them side by side.
  static Result<void> prepare_references(const std::vector<QueueMeasurer *> &measurers);

 private:
  /// Queues one batch of (measurer, candidate) pairs and waits until workers finished it;
  /// the results come from the records, in order.
  static Result<std::vector<MeasureResult>> run_batch(TuningDatabase &db, const QueueMeasureOptions &options,
                                                      const std::vector<std::pair<const QueueMeasurer *, const Candidate *>> &items);

  Task task_;
  std::string target_text_;
  TuningDatabase &db_;
  QueueMeasureOptions options_;
  std::optional<Result<MeasureResult>> reference_;
};

/// A record read back as the result of its measurement.
MeasureResult result_of_record(const TuningRecord &record);

}  // namespace tessel
