#include "search/schedule_space.h"

#include <algorithm>
#include <variant>

#include "schedule/schedule_tree.h"
#include "search/exact_cover.h"
#include "search/cpu/mutation.h"
#include "search/cpu/sampler.h"
#include "search/cpu/unrolled_body.h"
#include "search/gpu/gpu_sketch.h"

namespace tessel {

ScheduleSpace ScheduleSpace::for_cpu(const CpuTargetDesc &cpu) {
  ScheduleSpace space;
  space.cpu_ = cpu;
  return space;
}

ScheduleSpace ScheduleSpace::for_gpu(const GpuTargetDesc &gpu) {
  ScheduleSpace space;
  space.gpu_ = gpu;
  return space;
}

std::vector<Schedule> ScheduleSpace::sample(const ComputeDesc &compute, int count, std::mt19937_64 &rng) const {
  return gpu_ ? sample_gpu_schedules(compute, *gpu_, count, rng) : sample_schedules(compute, *cpu_, count, rng);
}

std::vector<SampledSchedule> ScheduleSpace::sample_with_trees(const ComputeDesc &compute, int count,
                                                             std::mt19937_64 &rng) const {
  if (!gpu_) return sample_schedules_with_trees(compute, *cpu_, count, rng);
  std::vector<SampledSchedule> samples;
  for (Schedule &s : sample_gpu_schedules(compute, *gpu_, count, rng)) samples.push_back({std::move(s), nullptr});
  return samples;
}

Result<CoveredSchedule> ScheduleSpace::mutate_replayed(const ComputeDesc &compute, const Schedule &schedule,
                                                       const ScheduleTree &tree, std::mt19937_64 &rng) const {
  if (!gpu_) return mutate_replayed_schedule(compute, schedule, tree, *cpu_, rng);
  // The step-level mutation knows CPU register files; a GPU thread's accumulator budget
  // stands in for them, and the device's limits are checked afterwards.
  const CpuTargetDesc proxy{1, 512, gpu_->accumulator_budget() + 4};
  std::string last = "no mutation tried";
  for (int attempt = 0; attempt < 16; ++attempt) {
    Result<CoveredSchedule> mutated = mutate_replayed_schedule(compute, schedule, tree, proxy, rng);
    if (!mutated.ok()) return mutated;
    if (auto fits = check_gpu_schedule(compute, mutated->schedule, *gpu_); fits.ok())
      return CoveredSchedule{std::move(mutated->schedule), std::move(fits.value())};
    else last = fits.error().message;
  }
  return make_error("no mutation fits the GPU: " + last);
}

Result<Schedule> ScheduleSpace::mutate(const ComputeDesc &compute, const Schedule &schedule,
                                       std::mt19937_64 &rng) const {
  Result<ScheduleTree> tree = validate_and_replay(compute, schedule);
  if (!tree) return make_error(tree.error().kind, "the schedule to mutate does not replay: " + tree.error().message);
  TESSEL_TRY(auto mutated, mutate_replayed(compute, schedule, *tree, rng));
  return std::move(mutated.schedule);
}

Schedule ScheduleSpace::default_schedule(const ComputeDesc &compute) const {
  return gpu_ ? default_gpu_schedule(compute, *gpu_) : default_cpu_schedule(compute, *cpu_);
}

std::vector<Schedule> ScheduleSpace::starting_points(const ComputeDesc &compute) const {
  if (gpu_) return default_gpu_sketch_schedules(compute, *gpu_);
  return {default_cpu_schedule(compute, *cpu_)};
}

Result<void> ScheduleSpace::admits(const ComputeDesc &compute, const Schedule &schedule) const {
  if (gpu_) {
    auto tree = check_gpu_schedule(compute, schedule, *gpu_);
    if (!tree.ok()) return tree.error();
    return {};
  }
  auto tree = validate_and_replay(compute, schedule);
  if (!tree.ok()) return tree.error();
  return check_unrolled_body(tree.value(), *cpu_);
}

Result<void> ScheduleSpace::admits_replayed(const ComputeDesc &compute, const Schedule &schedule,
                                            const ScheduleTree &tree) const {
  if (gpu_) return admits(compute, schedule);
  return check_unrolled_body(tree, *cpu_);
}

namespace {

/// Halves the factor of a split-like step (a factor written for a larger shape is the usual
/// reason a schedule does not replay at a smaller one); false when it has none above 1.
bool halve_factor(ScheduleStep &step) {
  auto halve = [](int64_t &factor) {
    if (factor <= 1) return false;
    factor = std::max<int64_t>(1, factor / 2);
    return true;
  };
  if (auto *split = std::get_if<SplitStep>(&step)) return halve(split->factor);
  if (auto *tile = std::get_if<TileStep>(&step)) return halve(tile->x_factor) | halve(tile->y_factor);
  if (auto *vectorize = std::get_if<VectorizeStep>(&step); vectorize && vectorize->width)
    return halve(*vectorize->width);
  if (auto *unroll = std::get_if<UnrollStep>(&step); unroll && unroll->factor) return halve(*unroll->factor);
  return false;
}

}  // namespace

Result<Schedule> ScheduleSpace::adapt(const ComputeDesc &compute, const Schedule &schedule) const {
  Schedule fitted = schedule;
  // Factors larger than the new shape's loops come down, one halving at a time, until the
  // schedule replays (a bounded number of times: each halving shrinks a factor).
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::optional<size_t> step = failing_step(compute, fitted);
    if (!step || !halve_factor(fitted.steps[*step])) break;
  }
  if (gpu_) {
    TESSEL_TRY_VOID(admits(compute, fitted));
    return fitted;
  }
  // On a CPU, the exact-cover check replays the schedule: it is admits() and more.
  TESSEL_TRY(fitted, repair_exact_cover(compute, fitted));
  Result<ScheduleTree> tree = validate_exact_cover(compute, fitted);
  if (!tree.ok()) return tree.error();
  TESSEL_TRY_VOID(check_unrolled_body(tree.value(), *cpu_));
  return fitted;
}

int ScheduleSpace::parallelism() const { return gpu_ ? gpu_->multiprocessors : cpu_->threads; }

}  // namespace tessel
