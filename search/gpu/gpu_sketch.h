#pragma once
// Sketch rules for NVIDIA GPUs (Ansor's GPU sketches on tessel's schedule IR) and the checks
// every GPU schedule passes; gpu_sampler.h draws their parameters, gpu_sketch_schedule.h
// writes their steps, as sketch.h, sampler.h and sketch_schedule.h do for the CPU. The rules look at the same structure as the CPU ones
// (sketch.h: outputs, the reduction "anchor" each output applies its epilogue to):
//
//   gpu_tile       an output with an anchor: every axis is split into a block tile, the
//                  threads of a block and a register tile per thread (S S S); the block
//                  loops are fused and bound to blocks, the thread loops fused and bound to
//                  threads; the anchor is computed per thread, in registers, with its
//                  reduction split (R R) around the unrolled register tile (S).
//   gpu_warp_tile  an output with an anchor, one warp per block, operands staged in shared
//                  memory (gpu_warp_tile.h); offered beside gpu_tile.
//   gpu_split_k    an output with few elements and a long reduction: the reduction rfactored
//                  over a block's threads, partials in shared memory (gpu_split_k.h); offered
//                  beside gpu_tile, and the default where the output cannot fill the device.
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
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

/// "gpu_tile" when an output has an anchor (its other outputs injective), else
/// "gpu_injective". Never empty.
std::vector<Sketch> generate_gpu_sketches(const ComputeDesc &compute, const GpuTargetDesc &target);



/// What one launch of a scheduled kernel asks of the device, from the schedule tree.
struct GpuLaunchShape {
  int64_t kernels = 0;            ///< stages with block loops
  int64_t max_threads_per_block = 0;
  int64_t max_blocks = 0;
  int64_t max_shared_bytes = 0;   ///< gpu_shared buffers allocated inside one block
  int64_t max_register_bytes = 0; ///< register buffers allocated inside one thread
};
GpuLaunchShape gpu_launch_shape(const ScheduleTree &tree);

/// Registers per thread the driver may give the kernels of a launch of this shape: as many as
/// its largest block can hold in the register file (a multiple of 8, the allocation unit), at
/// most the device's per-thread limit. 64 for 1024-thread blocks, 255 for one warp.
int gpu_register_cap(const GpuLaunchShape &shape, const GpuTargetDesc &target);

/// The schedule replays, stays inside its regions, runs every output on the GPU and
/// respects `target`'s thread, shared-memory and register limits. Errors say which.
Result<ScheduleTree> check_gpu_schedule(const ComputeDesc &compute, const Schedule &schedule,
                                        const GpuTargetDesc &target);


}  // namespace tessel

// The sampler and the writer of these sketches.
#include "search/gpu/gpu_sampler.h"
#include "search/gpu/gpu_sketch_schedule.h"
