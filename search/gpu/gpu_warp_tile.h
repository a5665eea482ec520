#pragma once
// The "gpu_warp_tile" sketch: one warp per block, operands staged in shared memory.
//
// An output with an anchor is tiled so that a block is a single warp: 32 lanes along the
// output's first axis that 32 divides (axes are listed innermost first), each lane with a
// register tile (up to 4 along the lane axis, up to 32 along the next axis with more than
// one element, up to 16 along a third). The anchor is computed once per block and kept in
// registers (Halide 14 promotes a block-level buffer to registers only when it is indexed
// by gpu_lanes, one stripe per lane: hence one warp per block; with several warps, bound to
// a second thread dimension, the buffer lands in local memory). Its reduction's outermost
// variable is split into stages of KT; at each stage every operand tile the block reads is
// copied into shared memory by the block's threads together (cache_inputs, float4 loads),
// stored with its reduction-only dimensions outermost so that one reduction step's operand
// words sit side by side (a matmul's A column is read by ld.shared.v4 broadcasts), then
// the lanes run the stage's FMAs from shared memory and registers. Halide inserts the block
// barriers: the copies are bound to gpu_threads, which it fences, not gpu_lanes.
//
// Parameters (names as the features see them): OUT.warp.register.AXIS for the lane axis and
// two others, ANCHOR.warp.reduce.R (KT) for the outermost reduction variable R,
// ANCHOR.warp.vector (1: the lane axis' register tile is a vector, float2/float4 loads and
// stores), ANCHOR.warp.load_vector (elements per thread in the cooperative loads) and
// ANCHOR.warp.unroll_k (reduction steps unrolled within a stage). The writer also takes
// ANCHOR.warp.warps (warps along the second register axis), which the search does not draw.
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

/// Lanes of the warp a gpu_warp_tile block is.
constexpr int64_t kWarpTileLanes = 32;

/// The sketch for `out` and its `anchor`, or nullopt where the rule does not apply: no axis
/// that 32 divides, or a reduction whose outermost variable cannot be staged (extent < 4).
std::optional<Sketch> make_warp_tile_sketch(const ComputeDesc &compute, const std::string &out,
                                            const std::string &anchor);

/// Values for the sketch's parameters within the register budget (128 accumulators); the
/// default (no rng): a 4-wide lane tile, 32 along the next axis, KT 8, vectors on, float4
/// cooperative loads, the stage's steps not unrolled.
SketchChoices choose_warp_tile(const Sketch &sketch, const GpuTargetDesc &target, std::mt19937_64 *rng);

/// The steps of the sketch for `out` (rule GpuWarpTiledOutput) and its anchor.
Result<std::vector<ScheduleStep>> write_warp_tile(const FuncDesc &out, const FuncDesc &anchor,
                                                  const SketchChoices &choices);

}  // namespace tessel
