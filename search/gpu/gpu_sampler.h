#pragma once
// Values for the GPU sketches' parameters that respect the device's limits, and the
// schedules they give (gpu_sketch.h has the rules, gpu_sketch_schedule.h the steps).
#include <random>
#include <vector>

#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/sampler.h"
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

/// Random values for every parameter of a GPU sketch that respect the device's limits:
/// at least a warp and at most the block limit of threads (fewer when the register tile is
/// large), a register tile within the accumulator budget, tiles inside each axis.
SketchChoices sample_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                                 std::mt19937_64 &rng);
/// One deterministic, reasonable set of values: 256 threads in 32 x 8 (or along the
/// innermost axis), a register tile of 4 x 2 where the axes are long enough.
SketchChoices default_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target);

/// A valid schedule of `sketch` (the default schedule after 64 failed draws).
Schedule sample_gpu_schedule(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                             std::mt19937_64 &rng, SamplerStats *stats = nullptr);
/// `count` schedules, each from a GPU sketch drawn uniformly.
std::vector<Schedule> sample_gpu_schedules(const ComputeDesc &compute, const GpuTargetDesc &target, int count,
                                           std::mt19937_64 &rng, SamplerStats *stats = nullptr);
/// default_gpu_choices of the first GPU sketch: the untuned GPU baseline. Every output is
/// bound to the GPU; the schedule is empty only for a task with no output axes.
Schedule default_gpu_schedule(const ComputeDesc &compute, const GpuTargetDesc &target);
/// The default choices of every GPU sketch that builds and fits: the tuner measures each
/// once before it relies on its cost model (a staged warp tile is rarely drawn whole).
std::vector<Schedule> default_gpu_sketch_schedules(const ComputeDesc &compute, const GpuTargetDesc &target);

}  // namespace tessel
