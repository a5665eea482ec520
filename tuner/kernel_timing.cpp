#include "tuner/kernel_timing.h"

#include <algorithm>
#include <chrono>

#include "base/spin_pool.h"

namespace tessel {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Result<Timing> time_task(const JitKernel &kernel, const Task &task, const std::vector<Tensor> &inputs,
                         const TimingOptions &options) {
  std::vector<const Tensor *> pointers;
  for (const Tensor &t : inputs) pointers.push_back(&t);
  std::vector<Tensor> outputs;
  for (int t : task.signature.outputs) outputs.emplace_back(task.signature.types[t].dtype, task.signature.types[t].shape);
  // Bound once: on a GPU, transfers stay outside the timed runs.
  Result<JitKernel::Bound> bound = kernel.bind(pointers, outputs);
  if (!bound.ok()) return bound.error();
  // Placed as a deployed artifact's runs are: this thread on its CPU, the workers on theirs.
  SpinPoolCallerPin pinned;
  auto prepare_run = [&] {
    if (options.cold_constants) evict_task_constants(task, inputs);
  };
  for (int i = 0; i < options.warmup_runs; ++i) {
    prepare_run();
    if (auto ran = bound->run(); !ran.ok()) return ran.error();
  }
  Timing timing;
  double total = 0;
  size_t next_check = static_cast<size_t>(std::max(1, options.min_runs));
  using clock = std::chrono::steady_clock;
  while (static_cast<int>(timing.seconds.size()) < options.max_runs &&
         (static_cast<int>(timing.seconds.size()) < options.min_runs || total < options.min_seconds)) {
    prepare_run();
    const auto start = clock::now();
    if (auto ran = bound->run(); !ran.ok()) return ran.error();
    const double s = std::chrono::duration<double>(clock::now() - start).count();
    timing.seconds.push_back(s);
    total += s;
    if (timing.seconds.size() == next_check && (options.stop_above_seconds > 0 || options.shorten_above_seconds > 0)) {
      const double median = median_of(timing.seconds);
      if (options.stop_above_seconds > 0 && median > options.stop_above_seconds) break;
      if (options.shorten_above_seconds > 0 && total >= 0.5 * options.min_seconds &&
          median > options.shorten_above_seconds)
        break;
      next_check += std::max<size_t>(1, next_check / 4);
    }
  }
  if (auto copied = bound->finish(); !copied.ok()) return copied.error();
  timing.median = median_of(timing.seconds);
  timing.min = *std::min_element(timing.seconds.begin(), timing.seconds.end());
  return timing;
}

}  // namespace tessel
