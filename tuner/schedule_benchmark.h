#pragma once
// Measures a task under its default schedule and under random samples of its schedule space:
// the kernel micro-benchmark behind `tessel bench` and bench/bench_kernels.
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "task/task.h"
#include "tuner/kernel_timing.h"

namespace tessel {

struct ScheduleBenchmarkOptions {
  int samples = 64;
  uint64_t seed = 1;
  TimingOptions timing;
};

struct MeasuredSchedule {
  std::string schedule_text;  // empty for the built-in default
  double compile_seconds = 0;
  Timing timing;
};

struct ScheduleBenchmarkResult {
  int64_t flops = 0;             // per run of the task
  MeasuredSchedule builtin;      // the rules' own hand schedules (untuned execution)
  MeasuredSchedule sketch_default;  // default_cpu_schedule of the sketches
  std::vector<MeasuredSchedule> samples;  // those that compiled and matched
  int failed = 0;                // did not compile or run
  int wrong = 0;                 // ran, but differ from the built-in schedule's output
  const MeasuredSchedule *best() const;  // fastest sample by median, or null
  double median_compile_seconds() const;
};

Result<ScheduleBenchmarkResult> benchmark_schedules(const Task &task, const Target &target,
                                                    const ScheduleBenchmarkOptions &options);


}  // namespace tessel
