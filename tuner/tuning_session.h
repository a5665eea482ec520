#pragma once
// One run of `tessel tune` over a model, in the steps tune_model takes: prepare_tasks (each
// task's reference output and built-in record), then rounds (the task scheduler picks a task,
// the search proposes a batch, the measurer times it, the records go into the database, the
// cost model retrains), then finish (the best record of every task).
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/schedule_space.h"
#include "tuner/cost_model.h"
#include "tuner/search_policy.h"
#include "tuner/evolutionary_search.h"
#include "tuner/candidate_measurer.h"
#include "tuner/measure.h"
#include "tuner/task_scheduler.h"
#include "tuner/tune_model.h"

namespace tessel {

class TuningSession {
 public:
  TuningSession(const Graph &graph, const Target &target, TuningDatabase &db, const TuneOptions &options);

  /// Makes the model's tasks concrete, measures each built-in schedule as its reference
  /// (and records it); a task that cannot be built or measured is skipped, with the reason.
  Result<void> prepare_tasks();
  /// One round on the task the scheduler picks. false when the budget is spent or every
  /// task's space is used up.
  Result<bool> run_round();
  /// The summary with every task's best record after the run.
  TuneSummary finish();

 private:
  struct TaskState {
    Task task;
    std::unique_ptr<CandidateMeasurer> measurer;
    size_t summary_row = 0;
    /// Remote tuning: the signature of the machine that measured the reference. Latencies
    /// of the task compare within it only (workers on other machines still add records and
    /// train the cost model). Empty: everything is measured here.
    std::string machine;
    /// Schedules fitted from relatives, measured first (see TuneOptions::transfer).
    std::vector<Schedule> transferred;
  };
  /// Round timings for the progress line.
  struct RoundClock {
    std::chrono::steady_clock::time_point search, measure, train, end;
  };

  /// The task's row and state; its measurer has its reference already (or the reason not).
  Result<void> prepare_task(const Workload &workload, const Result<Task> &task,
                            std::unique_ptr<CandidateMeasurer> measurer);
  /// Each task's measurer, its reference measured (all at once): here, or by the queue's workers.
  Result<std::vector<std::unique_ptr<CandidateMeasurer>>> prepare_measurers(const std::vector<Workload> &workloads,
                                                                           const std::vector<Result<Task>> &tasks);
  Result<void> record_builtin(const TaskState &state, const MeasureResult &baseline);
  /// A task with no tuned record of its own gets its relatives' schedules (TuneOptions::transfer).
  Result<void> transfer_schedules(TaskState &state, TaskTuneSummary &row);
  /// The batch to measure: the search's proposals, the sketch default first while it is
  /// unmeasured, so tuning never ends worse than it.
  Result<std::vector<Candidate>> propose(const TaskState &state, int batch);
  /// Records every result; returns the round's best median (0: none ok).
  Result<double> record_results(const TaskState &state, const std::vector<Candidate> &candidates,
                                const std::vector<MeasureResult> &results);
  void retrain();
  static bool same_machine(const TaskState &state, const MeasureResult &result);
  /// The task's best time among records of the reference's machine (0: none yet).
  Result<double> best_on_reference_machine(const TaskState &state) const;
  /// The measurers' phases summed over the tasks.
  MeasurePhaseSeconds measured_phases() const;
  void log_round(int t, const RoundClock &clock);

  std::shared_ptr<const Graph> graph_;
  const Target target_;
  const std::string target_text_;
  const std::string machine_;
  TuningDatabase &db_;
  const TuneOptions &options_;
  const ScheduleSpace space_;
  std::shared_ptr<CostModel> model_;
  size_t trained_on_ = 0;            // samples the model was last trained on
  size_t measured_at_training_ = 0;  // summary_.measured then
  std::shared_ptr<SearchPolicy> policy_;
  std::mt19937_64 rng_;
  std::vector<TaskState> states_;
  std::vector<TaskProgress> progress_;
  std::optional<TaskScheduler> scheduler_;
  int budget_ = 0;
  TuneSummary summary_;
  MeasurePhaseSeconds reference_phases_;  // what prepare_tasks spent measuring references
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tessel
