#pragma once
// Splits a model's trial budget over its tasks (Ansor's task scheduler): a warm-up round
// for every task, the heaviest first (weight x latency before tuning), then each round goes
// to the task whose next batch promises the largest drop in the model's latency: weight x
// current best latency x recent relative gain.
#include <vector>

namespace tessel {

struct TaskProgress {
  int weight = 1;                 // occurrences in the model
  int trials = 0;                 // candidates measured so far
  double best_seconds = 0;        // best measured latency (0: nothing measured yet)
  double baseline_seconds = 0;    // the built-in schedule's latency, measured before tuning (0: unknown)
  std::vector<double> history;    // best_seconds after each round of this task
  bool retired = false;           // its schedule space is used up: never picked again
};

class TaskScheduler {
 public:
  explicit TaskScheduler(std::vector<TaskProgress> tasks) : tasks_(std::move(tasks)) {}

  /// The task to tune next, or -1 when `budget_left` < 1 or every task is retired.
  int next_task(int budget_left) const;
  /// How many candidates the task's next round measures, at most `batch`: a warm-up round of
  /// a task holding under kLightShare of the model's latency measures a quarter of it (at
  /// least 2), so that a short budget is not spent evenly on tasks of a few microseconds.
  int round_size(int task, int batch) const;
  static constexpr double kLightShare = 0.02;
  /// Takes a task out of the rotation (nothing left to measure); the others share the budget.
  void retire(int task) { tasks_.at(task).retired = true; }
  /// Records a finished round of `task`: `measured` trials, best latency now.
  void record_round(int task, int measured, double best_seconds);

  /// Estimated model latency: sum of weight x best latency over tasks with a measurement.
  double estimated_latency() const;
  const std::vector<TaskProgress> &tasks() const { return tasks_; }

 private:
  std::vector<TaskProgress> tasks_;
};

}  // namespace tessel
