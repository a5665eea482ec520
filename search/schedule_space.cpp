#include "search/schedule_space.h"

#include "schedule/schedule_tree.h"
#include "search/cpu/mutation.h"
#include "search/cpu/sampler.h"
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

Result<Schedule> ScheduleSpace::mutate(const ComputeDesc &compute, const Schedule &schedule,
                                       std::mt19937_64 &rng) const {
  if (!gpu_) return mutate_schedule(compute, schedule, *cpu_, rng);
  // The step-level mutation knows CPU register files; a GPU thread's accumulator budget
  // stands in for them, and the device's limits are checked afterwards.
  const CpuTargetDesc proxy{1, 512, gpu_->accumulator_budget() + 4};
  std::string last = "no mutation tried";
  for (int attempt = 0; attempt < 16; ++attempt) {
    Result<Schedule> mutated = mutate_schedule(compute, schedule, proxy, rng);
    if (!mutated.ok()) return mutated;
    if (auto ok = admits(compute, mutated.value()); ok.ok()) return mutated;
    else last = ok.error().message;
  }
  return make_error("no mutation fits the GPU: " + last);
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
  return {};
}

int ScheduleSpace::parallelism() const { return gpu_ ? gpu_->multiprocessors : cpu_->threads; }

}  // namespace tessel
