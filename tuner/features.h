#pragma once
// Features of a scheduled task for the cost model (Ansor-style, computed without compiling):
// a fixed-length vector read off the schedule tree (loop extents and kinds, storage) and the
// compute description (axes, element sizes, FLOPs per point). Magnitudes are log2(1 + x) so
// that tasks of very different sizes share one model.
//
// Layout (feature_count() floats; feature_names() spells every slot):
//
//   task.*              kTaskFeatureCount task-level slots (below)
//   anchor.*            the stage block of the stage with the most executions
//   rest_sum.*          the stage blocks of every other stage, summed slot by slot
//   rest_max.*          the stage blocks of every other stage, slot-wise maximum
//
// Task slots:
//   stage_count         compute nodes in the tree (raw count)
//   func_count          Funcs that are computed (not inlined) (raw count)
//   output_points       log2(1 + points of the outputs' pure domains, summed)
//   output_bytes        log2(1 + bytes of the outputs)
//   reduction_points    log2(1 + product of the reduction extents of the largest reduction stage)
//   natural_flops       log2(1 + FLOPs of the task when every point is computed once)
//   total_executions    log2(1 + executions of all stages, recomputation included)
//   realize_bytes       log2(1 + bytes of every intermediate buffer, summed)
//
// Stage slots ("path" = every loop enclosing the stage's compute node, consumer loops too;
// "innermost reduction body" = the loops inside the innermost reduction loop; every slot
// that reads the reduction body is 0 for a stage without reduction loops):
//   executions            log2(1 + times the stage's body runs)
//   recompute_ratio       executions / points of the stage's own domain (1 = no recomputation)
//   loops                 loops on the path (raw)
//   serial_loops          serial loops on the path (raw)
//   serial_product        log2(1 + product of serial extents)
//   parallel_loops        parallel loops on the path (raw)
//   parallel_product      log2(1 + product of parallel extents)
//   vector_loops          vectorized loops on the path (raw)
//   vector_width          log2(1 + extent of the innermost vectorized loop)
//   unroll_loops          unrolled loops on the path (raw)
//   unroll_product        log2(1 + product of unrolled extents)
//   parallel_per_thread   log2(1 + parallel product / threads)
//   thread_balance        parallel product / (ceil(product / threads) * threads): the share of
//                         thread slots used; 0 without parallel loops
//   innermost_extent      log2(1 + extent of the innermost loop)
//   innermost_vectorized  1 when the innermost loop is vectorized
//   vector_contiguous     1 when a vectorized loop walks the Func's innermost storage axis
//   reduction_loops       reduction loops on the path (raw)
//   reduction_product     log2(1 + product of reduction extents on the path)
//   loops_in_reduction    loops inside the innermost reduction loop (raw)
//   register_tile_points  log2(1 + points of the innermost reduction body)
//   register_tile_vectors log2(1 + those points / the width of their vectorized loop):
//                         accumulator registers
//   register_tile_unrolled 1 when every loop of the innermost reduction body is unrolled or
//                         vectorized
//   innermost_reduction_extent log2(1 + extent of the innermost reduction loop)
//   accumulator_reuse     log2(1 + product of the reduction loops that directly nest around the
//                         register tile, no pure loop between): iterations the accumulators
//                         stay in registers
//   register_tile_axis0..3 log2(1 + extent of the register tile along the Func's storage axes
//                         0..3, innermost first; 0 without a reduction loop or such an axis):
//                         the tile's shape says which operands it reuses (a conv tile along
//                         channels reuses its input, one along rows its weights)
//   block_axis0..3        log2(1 + extent along storage axes 0..3 covered by the stage's own nest;
//                         0 where the Func has no such axis)
//   gpu_loops             loops bound to GPU blocks, threads or lanes (0 on CPU)
//   gpu_block_product     log2(1 + product of GPU block extents) (0 on CPU)
//   gpu_thread_product    log2(1 + product of GPU thread and lane extents) (0 on CPU)
//   flops_per_point       log2(1 + FLOPs per execution: FuncDesc's, else 2 for a reduction
//                         update, else one per inlined Func)
//   flops                 log2(1 + executions * flops_per_point)
//   inlined_funcs         Funcs inlined into the stage (raw)
//   is_update             1 for an update definition
//   is_output             1 for a stage of an output Func
//   realize_bytes         log2(1 + bytes of the Func's buffer where it is allocated; outputs: 0)
//   realize_count         log2(1 + times that buffer is allocated)
//   memory_auto, memory_register, memory_stack, memory_heap, memory_gpu_shared
//                         one-hot: where the buffer lives (all 0 for outputs)
//   realize_depth         loops enclosing the allocation (raw)
//   realize_in_parallel   1 when the buffer is allocated inside a parallel loop
//   then, for each loop level L in {inner1, inner2, inner3, reduction_body, own_nest,
//   parallel_body} (the innermost 1, 2, 3 loops of the path; the innermost reduction loop and
//   the loops inside it, or the innermost loop without one; every loop of the stage's own
//   nest; every loop inside the innermost parallel loop, or the whole path without one):
//   L.own_bytes           log2(1 + bytes of the stage's own Func written or updated inside L)
//   L.own_lines           log2(1 + 64-byte cache lines of those)
//   L.operand_bytes       log2(1 + estimated bytes of operands read inside L; see features.cpp)
//   L.reuse               log2(1 + points computed inside L per element touched)
//
// The footprints are estimates: which loop walks which axis is read from the loop names
// (the sketches derive them from the axis names), and operands outside the ComputeDesc are
// modelled as a contraction's two operands. GPU slots exist so CPU and GPU records share a
// layout; they are zero for CPU schedules.
#include <string>
#include <vector>

#include "compute/compute_desc.h"
#include "schedule/schedule_tree.h"

namespace tessel {

/// Task-level slots at the start of the vector.
constexpr int kTaskFeatureCount = 8;

/// Slots of one stage block.
int stage_feature_count();

/// Length of every vector schedule_features returns.
int feature_count();

/// One name per slot, in order ("task.output_points", "anchor.vector_width",
/// "rest_sum.inner2.reuse", ...).
const std::vector<std::string> &feature_names();

/// The features of `tree` (a schedule of `compute` replayed by validate_and_replay), for
/// `threads` worker threads. Always feature_count() finite values.
std::vector<float> schedule_features(const ComputeDesc &compute, const ScheduleTree &tree, int threads = 2);

}  // namespace tessel
