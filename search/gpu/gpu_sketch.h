#pragma once
// Sketch generation, sampling and the default schedule for NVIDIA GPUs (Ansor's GPU
// sketches on tessel's schedule IR). The rules look at the same structure as the CPU ones
// (sketch.h: outputs, the reduction "anchor" each output applies its epilogue to):
//
//   gpu_tile       an output with an anchor: every axis is split into a block tile, the
//                  threads of a block and a register tile per thread (S S S); the block
//                  loops are fused and bound to blocks, the thread loops fused and bound to
//                  threads; the anchor is computed per thread, in registers, with its
//                  reduction split (R R) around the unrolled register tile (S).
//   gpu_injective  an output without anchor: all axes fused, an optional vector of
//                  elements per thread, split into blocks of threads.
//
// Stages inside a task that no schedule names (softmax or layer-norm statistics, pooling
// windows) are placed by the GPU pipeline builder (group_pipeline.h): one thread per
// output element of the statistic, and a reduction over 64 or more elements first split
// into 8-32 interleaved partials (an rfactor stage) so that many threads share it.
#include <random>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "schedule/schedule_tree.h"
#include "search/cpu/sampler.h"
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

/// "gpu_tile" when an output has an anchor (its other outputs injective), else
/// "gpu_injective". Never empty.
std::vector<Sketch> generate_gpu_sketches(const ComputeDesc &compute, const GpuTargetDesc &target);

/// Random values for every parameter of a GPU sketch that respect the device's limits:
/// at least a warp and at most the block limit of threads (fewer when the register tile is
/// large), a register tile within the accumulator budget, tiles inside each axis.
SketchChoices sample_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                                 std::mt19937_64 &rng);
/// One deterministic, reasonable set of values: 256 threads in 32 x 8 (or along the
/// innermost axis), a register tile of 4 x 2 where the axes are long enough.
SketchChoices default_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target);

/// The steps of a GPU sketch with `choices`; errors name the parameter the sketch cannot use.
Result<Schedule> build_gpu_sketch_schedule(const ComputeDesc &compute, const Sketch &sketch,
                                           const GpuTargetDesc &target, const SketchChoices &choices);

/// What one launch of a scheduled kernel asks of the device, from the schedule tree.
struct GpuLaunchShape {
  int64_t kernels = 0;            ///< stages with block loops
  int64_t max_threads_per_block = 0;
  int64_t max_blocks = 0;
  int64_t max_shared_bytes = 0;   ///< gpu_shared buffers allocated inside one block
  int64_t max_register_bytes = 0; ///< register buffers allocated inside one thread
};
GpuLaunchShape gpu_launch_shape(const ScheduleTree &tree);

/// The schedule replays, stays inside its regions, runs every output on the GPU and
/// respects `target`'s thread, shared-memory and register limits. Errors say which.
Result<ScheduleTree> check_gpu_schedule(const ComputeDesc &compute, const Schedule &schedule,
                                        const GpuTargetDesc &target);

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
