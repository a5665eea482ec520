#pragma once
// The schedules a search explores for one kind of machine: fresh samples, mutations of
// measured ones, the default and the check a proposal must pass. The CPU space is
// sketch.h/sampler.h/mutation.h; the GPU space is gpu_sketch.h, with mutations checked
// against the device's limits.
#include <optional>
#include <random>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/cpu_target.h"
#include "search/cpu/sampler.h"
#include "search/exact_cover.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

class ScheduleSpace {
 public:
  static ScheduleSpace for_cpu(const CpuTargetDesc &cpu);
  static ScheduleSpace for_gpu(const GpuTargetDesc &gpu);

  bool gpu() const { return gpu_.has_value(); }
  /// `count` valid schedules drawn from the sketches.
  std::vector<Schedule> sample(const ComputeDesc &compute, int count, std::mt19937_64 &rng) const;
  /// sample, each with the tree the sampler's check replayed where it kept one (on a CPU;
  /// null trees elsewhere): the same schedules as sample() from the same generator.
  std::vector<SampledSchedule> sample_with_trees(const ComputeDesc &compute, int count, std::mt19937_64 &rng) const;
  /// A schedule differing from `schedule` in one choice that this space admits.
  Result<Schedule> mutate(const ComputeDesc &compute, const Schedule &schedule, std::mt19937_64 &rng) const;
  /// mutate, from the parent's replayed tree (validate_and_replay of `schedule`), with the
  /// child's replayed tree: a search that keeps trees replays neither again.
  Result<CoveredSchedule> mutate_replayed(const ComputeDesc &compute, const Schedule &schedule,
                                          const ScheduleTree &tree, std::mt19937_64 &rng) const;
  /// The untuned baseline of this kind of machine.
  Schedule default_schedule(const ComputeDesc &compute) const;
  /// Schedules worth measuring before any search: the default, and on a GPU each other
  /// sketch's default choices.
  std::vector<Schedule> starting_points(const ComputeDesc &compute) const;
  /// Whether `schedule` may be proposed here (it replays; on a CPU: within the unrolling cap,
  /// search/cpu/unrolled_body.h; on a GPU: binds every output and fits the device's limits,
  /// tiles dividing their axes).
  Result<void> admits(const ComputeDesc &compute, const Schedule &schedule) const;
  /// admits, given the schedule's replayed tree (on a CPU nothing is replayed again).
  Result<void> admits_replayed(const ComputeDesc &compute, const Schedule &schedule, const ScheduleTree &tree) const;
  /// `schedule`, written for another shape of the same computation (same Funcs and loop
  /// names), fitted to this one: on a CPU, split factors that would leave a Func's region
  /// shrink to divisors (exact cover); then it must be admitted. An error when it cannot be.
  Result<Schedule> adapt(const ComputeDesc &compute, const Schedule &schedule) const;
  /// The parallelism the features compare loop extents with: CPU threads, or GPU
  /// multiprocessors.
  int parallelism() const;

 private:
  std::optional<CpuTargetDesc> cpu_;
  std::optional<GpuTargetDesc> gpu_;
};

}  // namespace tessel
