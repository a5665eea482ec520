#pragma once
// Timing a compiled task: warm-up, then repeated runs until both a minimum measured time and
// a minimum run count are reached; the median is what gets reported.
#include <vector>

#include "base/result.h"
#include "task/task.h"

namespace tessel {

struct TimingOptions {
  int warmup_runs = 2;
  int min_runs = 10;
  double min_seconds = 0.1;
  int max_runs = 10000;
  /// Stop early, once min_runs are taken, when the median so far is above this (0: never):
  /// a candidate clearly slower than the task's best needs no precise figure.
  double stop_above_seconds = 0;
  /// Stop at half of min_seconds when the median so far is above this (0: never): a
  /// candidate that is not the best needs a figure only as precise as the cost model uses.
  double shorten_above_seconds = 0;
  /// (Both are checked at min_runs, then each time the runs grow by a quarter.)
  /// Evict the task's constant inputs (weights) from the caches before every run, untimed:
  /// inside a model, the layers between two calls of a kernel push its weights out.
  bool cold_constants = false;
};

struct Timing {
  std::vector<double> seconds;  // every timed run, in order
  double median = 0;
  double min = 0;
};

/// Times `kernel` on `inputs` (outputs are allocated once, reused by every run).
Result<Timing> time_task(const JitKernel &kernel, const Task &task, const std::vector<Tensor> &inputs,
                         const TimingOptions &options = {});

/// Median of values (0 when empty).
double median_of(std::vector<double> values);

}  // namespace tessel
