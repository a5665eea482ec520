#include "tuner/schedule_benchmark.h"

#include <chrono>
#include <random>

#include "graph/infer/model_stats.h"
#include "search/cpu/sampler.h"

namespace tessel {

const MeasuredSchedule *ScheduleBenchmarkResult::best() const {
  const MeasuredSchedule *best = nullptr;
  for (const MeasuredSchedule &s : samples)
    if (!best || s.timing.median < best->timing.median) best = &s;
  return best;
}

double ScheduleBenchmarkResult::median_compile_seconds() const {
  std::vector<double> seconds;
  for (const MeasuredSchedule &s : samples) seconds.push_back(s.compile_seconds);
  return median_of(seconds);
}

namespace {

/// Compiles (timed), runs and checks one schedule; an error when it does not compile or run.
Result<MeasuredSchedule> measure(const Task &task, const Schedule *schedule, const Target &target,
                                 const std::vector<Tensor> &inputs, const std::vector<Tensor> *reference,
                                 const TimingOptions &timing_options, bool *wrong) {
  MeasuredSchedule m;
  if (schedule) m.schedule_text = to_text(*schedule);
  const auto start = std::chrono::steady_clock::now();
  auto kernel = compile_task(task, schedule, target);
  m.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!kernel.ok()) return kernel.error();
  if (reference) {
    auto out = run_task(kernel.value(), task, inputs);
    if (!out.ok()) return out.error();
    *wrong = !(max_relative_difference(out.value(), *reference) < 1e-4);
    if (*wrong) return m;
  }
  auto timing = time_task(kernel.value(), task, inputs, timing_options);
  if (!timing.ok()) return timing.error();
  m.timing = timing.value();
  return m;
}

}  // namespace

Result<ScheduleBenchmarkResult> benchmark_schedules(const Task &task, const Target &target,
                                                    const ScheduleBenchmarkOptions &options) {
  ScheduleBenchmarkResult result;
  result.flops = task.flops;
  const std::vector<Tensor> inputs = task_inputs(task, options.seed);
  auto reference_kernel = compile_task(task, nullptr, target);
  if (!reference_kernel.ok()) return reference_kernel.error();
  auto reference = run_task(reference_kernel.value(), task, inputs);
  if (!reference.ok()) return reference.error();
  bool wrong = false;
  auto builtin = measure(task, nullptr, target, inputs, nullptr, options.timing, &wrong);
  if (!builtin.ok()) return builtin.error();
  result.builtin = builtin.value();

  const CpuTargetDesc cpu = cpu_target_desc(target);
  const Schedule sketch_default = default_cpu_schedule(task.compute, cpu);
  auto measured_default = measure(task, &sketch_default, target, inputs, &reference.value(), options.timing, &wrong);
  if (!measured_default.ok()) return measured_default.error();
  if (wrong)
    return make_error(ErrorKind::Internal,
                      "the sketch default schedule computes a different result:\n" + to_text(sketch_default));
  result.sketch_default = measured_default.value();

  std::mt19937_64 rng(options.seed);
  for (const Schedule &schedule : sample_schedules(task.compute, cpu, options.samples, rng)) {
    wrong = false;
    auto m = measure(task, &schedule, target, inputs, &reference.value(), options.timing, &wrong);
    if (!m.ok()) ++result.failed;
    else if (wrong) ++result.wrong;
    else result.samples.push_back(m.value());
  }
  return result;
}

}  // namespace tessel
