#pragma once
// The "gpu_split_k" sketch: a reduction too long for the threads its output offers is split
// over the threads of a block (Ansor's cross-thread rfactor on tessel's schedule IR).
//
// A batch-1 convolution deep in a network has few outputs and long reductions: ResNet-18's
// 3x3 convs at 7x7 have 25,088 outputs of 4,608 products each. One thread per output (or
// per register tile) leaves most of an H100's 132 multiprocessors idle and every thread a
// long serial chain. Here the outermost-largest reduction variable (a conv's input channels,
// a matmul's k) is split into CHUNKS parts and rfactored: the intermediate, one partial per
// output element and chunk, is computed at the output's block loop in shared memory by
// (block tile x CHUNKS) threads, each keeping its partial in a register until it stores it;
// after the barrier Halide puts there, the output's threads fold their CHUNKS partials and
// apply the epilogue. One kernel, no atomics, the same result order on every run.
//
// Parameters (names as the features see them): OUT.splitk.thread.AXIS, the block tile along
// each output axis (one output element per thread); ANCHOR.splitk.chunks, the parts of the
// split reduction variable; ANCHOR.splitk.unroll (1: the innermost reduction variable of a
// partial is unrolled when it has at most 8 points).
#include <optional>
#include <random>
#include <string>

#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

/// The sketch for `out` and its `anchor`, or nullopt where splitting the reduction cannot
/// pay: fewer than 256 products per output, a split variable under 16 points, or an output
/// large enough (over 2^18 elements) to fill the device by itself.
std::optional<Sketch> make_split_k_sketch(const ComputeDesc &compute, const std::string &out,
                                          const std::string &anchor);

/// Whether the sketch's default should be the task's default GPU schedule: an output of at
/// most 256 elements per multiprocessor, too few for one thread each to fill the device
/// (measured on an H200: ResNet-18's 7x7x512 convs took 0.19 ms with the gpu_tile default
/// and 0.08 ms with this one; at 14x14x256 the gpu_tile default was faster).
bool split_k_is_default(const Sketch &sketch, const ComputeDesc &compute, const GpuTargetDesc &target);

/// Values for the sketch's parameters within the block's thread limit; the default (no
/// rng): up to 128 threads along the output's innermost axes, 8 chunks (or the most below).
SketchChoices choose_split_k(const Sketch &sketch, const ComputeDesc &compute, const GpuTargetDesc &target,
                             std::mt19937_64 *rng);

/// The steps of the sketch for `out` (rule GpuSplitKOutput) and its anchor; the intermediate
/// is named `ANCHOR_rf` (or _rf2, ... where the task has a Func of that name).
Result<std::vector<ScheduleStep>> write_split_k(const ComputeDesc &compute, const FuncDesc &out,
                                                const FuncDesc &anchor, const SketchChoices &choices,
                                                const GpuTargetDesc &target);

}  // namespace tessel
