// Schedule features: one block of slots per compute node of the schedule tree, then a fixed
// layout (task slots, the anchor stage, sum and maximum over the other stages). The slot
// meanings are documented in features.h; the enums below give each slot its index so values
// and names cannot drift apart.
#include "tuner/features.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>

namespace tessel {
namespace {

constexpr double kCacheLineBytes = 64;
/// Storage axes whose tile extents get their own slots (an NCHW conv has 4).
constexpr size_t kTiledAxes = 4;

enum StageSlot {
  kExecutions,
  kRecomputeRatio,
  kLoops,
  kSerialLoops,
  kSerialProduct,
  kParallelLoops,
  kParallelProduct,
  kVectorLoops,
  kVectorWidth,
  kUnrollLoops,
  kUnrollProduct,
  kParallelPerThread,
  kThreadBalance,
  kInnermostExtent,
  kInnermostVectorized,
  kVectorContiguous,
  kReductionLoops,
  kReductionProduct,
  kLoopsInReduction,
  kRegisterTilePoints,
  kRegisterTileVectors,
  kRegisterTileUnrolled,
  kInnermostReductionExtent,
  kAccumulatorReuse,
  kRegisterTileAxis0,
  kBlockAxis0 = kRegisterTileAxis0 + kTiledAxes,
  kGpuLoops = kBlockAxis0 + kTiledAxes,
  kGpuBlockProduct,
  kGpuThreadProduct,
  kFlopsPerPoint,
  kFlops,
  kInlinedFuncs,
  kIsUpdate,
  kIsOutput,
  kRealizeBytes,
  kRealizeCount,
  kMemoryAuto,
  kMemoryRegister,
  kMemoryStack,
  kMemoryHeap,
  kMemoryGpuShared,
  kRealizeDepth,
  kRealizeInParallel,
  kFirstLevelSlot,
};

const char *const kStageSlotNames[] = {
    "executions",
    "recompute_ratio",
    "loops",
    "serial_loops",
    "serial_product",
    "parallel_loops",
    "parallel_product",
    "vector_loops",
    "vector_width",
    "unroll_loops",
    "unroll_product",
    "parallel_per_thread",
    "thread_balance",
    "innermost_extent",
    "innermost_vectorized",
    "vector_contiguous",
    "reduction_loops",
    "reduction_product",
    "loops_in_reduction",
    "register_tile_points",
    "register_tile_vectors",
    "register_tile_unrolled",
    "innermost_reduction_extent",
    "accumulator_reuse",
    "register_tile_axis0",
    "register_tile_axis1",
    "register_tile_axis2",
    "register_tile_axis3",
    "block_axis0",
    "block_axis1",
    "block_axis2",
    "block_axis3",
    "gpu_loops",
    "gpu_block_product",
    "gpu_thread_product",
    "flops_per_point",
    "flops",
    "inlined_funcs",
    "is_update",
    "is_output",
    "realize_bytes",
    "realize_count",
    "memory_auto",
    "memory_register",
    "memory_stack",
    "memory_heap",
    "memory_gpu_shared",
    "realize_depth",
    "realize_in_parallel",
};
static_assert(std::size(kStageSlotNames) == kFirstLevelSlot, "one name per stage slot");

enum LoopLevel { kInner1, kInner2, kInner3, kReductionBody, kOwnNest, kParallelBody, kLevelCount };
const char *const kLevelNames[] = {"inner1", "inner2", "inner3", "reduction_body", "own_nest", "parallel_body"};
static_assert(std::size(kLevelNames) == kLevelCount, "one name per loop level");

enum LevelSlot { kOwnBytes, kOwnLines, kOperandBytes, kReuse, kLevelSlotCount };
const char *const kLevelSlotNames[] = {"own_bytes", "own_lines", "operand_bytes", "reuse"};
static_assert(std::size(kLevelSlotNames) == kLevelSlotCount, "one name per level slot");

constexpr int kStageSlotCount = kFirstLevelSlot + kLevelCount * kLevelSlotCount;

enum TaskSlot {
  kStageCount,
  kFuncCount,
  kOutputPoints,
  kOutputBytes,
  kTaskReductionPoints,
  kNaturalFlops,
  kTotalExecutions,
  kTaskRealizeBytes,
  kTaskSlotCount,
};
static_assert(kTaskSlotCount == kTaskFeatureCount, "features.h documents the task slots");
const char *const kTaskSlotNames[] = {"stage_count",      "func_count",    "output_points",    "output_bytes",
                                      "reduction_points", "natural_flops", "total_executions", "realize_bytes"};
static_assert(std::size(kTaskSlotNames) == kTaskSlotCount, "one name per task slot");

int level_slot(LoopLevel level, LevelSlot slot) { return kFirstLevelSlot + level * kLevelSlotCount + slot; }

float log_magnitude(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

bool is_gpu(LoopKind k) { return k == LoopKind::GpuBlock || k == LoopKind::GpuThread || k == LoopKind::GpuLane; }

/// Loop nodes, outermost first.
using Loops = std::vector<const ScheduleNode *>;

/// One compute node with everything around it that the features read.
struct StageView {
  const ScheduleNode *compute = nullptr;
  Loops path;                      ///< enclosing loops, outermost first
  const FuncDesc *func = nullptr;  ///< null for Funcs the schedule made (rfactor)
  const StageDesc *stage = nullptr;
  const ScheduleNode *realize = nullptr;  ///< where the Func's buffer is allocated
  Loops realize_path;
};

/// Loop names as the sketches write them: '$' of RDom vars becomes '_'.
std::string normalized_name(std::string name) {
  std::replace(name.begin(), name.end(), '$', '_');
  return name;
}

/// Which axis of `axes` a loop walks: the longest axis name the loop's var equals or starts
/// with followed by '_' (j_o, j_i_vec and i_o_j_o walk j, j, i). -1 when none does. Fused
/// loops count for their first axis only; footprint() moves their excess into the others.
int axis_of(const std::string &var, const std::vector<AxisDesc> &axes) {
  const std::string v = normalized_name(var);
  int best = -1;
  size_t best_length = 0;
  for (size_t a = 0; a < axes.size(); ++a) {
    const std::string name = normalized_name(axes[a].name);
    const bool matches =
        v == name || (v.size() > name.size() && v.compare(0, name.size(), name) == 0 && v[name.size()] == '_');
    if (matches && name.size() > best_length) {
      best = static_cast<int>(a);
      best_length = name.size();
    }
  }
  return best;
}

/// Where a pure axis lies in the Func's storage, innermost first; past the end when unknown.
size_t storage_position(const StageView &view, const std::string &axis) {
  if (!view.func) return kTiledAxes;
  for (size_t i = 0; i < view.func->pure_axes.size(); ++i)
    if (view.func->pure_axes[i].name == axis) return i;
  return kTiledAxes;
}

/// What a set of loops touches of its stage's domain.
struct Footprint {
  double points = 1;            ///< iterations of the loops
  double pure_elements = 1;     ///< distinct points of the Func's pure domain
  double reduction_points = 1;  ///< distinct points of the reduction domain
  double contiguous = 1;        ///< extent along the innermost storage axis
  /// Extent along each of the Func's first kTiledAxes storage axes, innermost first: the
  /// tile's shape, which says which operands a tile reuses (a conv tile along channels
  /// reuses its input, one along rows its weights).
  std::array<double, kTiledAxes> along_axis{0, 0, 0, 0};  ///< 0 where the Func has no such axis
};

Footprint footprint(const Loops &loops, const StageView &view) {
  static const std::vector<AxisDesc> kNoAxes;
  const std::vector<AxisDesc> &axes = view.stage ? view.stage->axes : view.func ? view.func->pure_axes : kNoAxes;
  const std::string storage_innermost =
      view.func && !view.func->pure_axes.empty() ? view.func->pure_axes.front().name : std::string();
  Footprint f;
  for (size_t p = 0; p < kTiledAxes && view.func && p < view.func->pure_axes.size(); ++p) f.along_axis[p] = 1;
  std::vector<double> covered(axes.size(), 1.0);
  double pure_overflow = 1, reduction_overflow = 1;
  const ScheduleNode *innermost_pure_loop = nullptr;
  for (const ScheduleNode *loop : loops) {
    const double extent = static_cast<double>(std::max<int64_t>(1, loop->extent));
    f.points *= extent;
    if (!loop->reduction) innermost_pure_loop = loop;
    const int a = axis_of(loop->var, axes);
    if (a >= 0)
      covered[a] *= extent;
    else
      (loop->reduction ? reduction_overflow : pure_overflow) *= extent;
  }
  bool storage_axis_known = false;
  for (size_t a = 0; a < axes.size(); ++a) {
    const double full = static_cast<double>(std::max<int64_t>(1, axes[a].extent));
    // A fused loop counted for one axis carries the others' extents: keep them as overflow
    // so the element count stays the product of the loops'.
    const double inside = std::min(covered[a], full);
    const double excess = covered[a] / inside;
    if (axes[a].reduction) {
      f.reduction_points *= inside;
      reduction_overflow *= excess;
    } else {
      f.pure_elements *= inside;
      pure_overflow *= excess;
      if (axes[a].name == storage_innermost) {
        f.contiguous = inside;
        storage_axis_known = true;
      }
      const size_t position = storage_position(view, axes[a].name);
      if (position < kTiledAxes) f.along_axis[position] = inside;
    }
  }
  f.pure_elements *= pure_overflow;
  f.reduction_points *= reduction_overflow;
  if (!storage_axis_known && innermost_pure_loop)
    f.contiguous = static_cast<double>(std::max<int64_t>(1, innermost_pure_loop->extent));
  f.contiguous = std::min(f.contiguous, f.pure_elements);
  return f;
}

/// Funcs a stage reads among the compute's Funcs (see StageDesc::reads).
int producers_read(const ComputeDesc &compute, const StageView &view) {
  if (view.stage && !view.stage->reads.empty()) return static_cast<int>(view.stage->reads.size());
  int count = 0;
  for (const FuncDesc &f : compute.funcs)
    if (std::find(f.consumers.begin(), f.consumers.end(), view.compute->func) != f.consumers.end()) ++count;
  return count;
}

bool has_reduction(const StageView &view) {
  if (view.stage)
    return std::any_of(view.stage->axes.begin(), view.stage->axes.end(), [](const AxisDesc &a) { return a.reduction; });
  return std::any_of(view.path.begin(), view.path.end(), [](const ScheduleNode *l) { return l->reduction; });
}

double flops_per_point(const StageView &view) {
  const int64_t declared = view.func ? view.func->flops_per_point : 0;
  const bool func_has_updates = view.func && view.func->stages.size() > 1;
  if (view.compute->update >= 0) return static_cast<double>(declared > 0 ? declared : 2);
  if (func_has_updates) return 0;  // the pure definition of an accumulator: an initial value
  return static_cast<double>(declared > 0 ? declared : static_cast<int64_t>(view.compute->inlined.size()));
}

/// Points of the stage's own domain (executions without recomputation).
double natural_points(const StageView &view) {
  if (!view.stage) return static_cast<double>(view.compute->executions);
  double points = 1;
  for (const AxisDesc &a : view.stage->axes) points *= static_cast<double>(std::max<int64_t>(1, a.extent));
  return points;
}

void level_features(const ComputeDesc &compute, const StageView &view, LoopLevel level, const Loops &loops,
                    std::vector<float> &out) {
  const Footprint f = footprint(loops, view);
  const double bytes = static_cast<double>(view.func ? view.func->bytes_per_element : 4);
  // Operands outside the compute: a contraction's two operands (one along the innermost
  // storage axis and the reduction, one along the other pure axes and the reduction); exact
  // for a matmul. A pure stage reads about one element per producer per point.
  double operand_elements;
  if (has_reduction(view))
    operand_elements = f.reduction_points * (f.contiguous + f.pure_elements / f.contiguous);
  else if (view.func && view.func->stages.size() > 1 && view.compute->update < 0)
    operand_elements = 0;  // an accumulator's initial value
  else
    operand_elements = f.pure_elements * std::max<double>(1, producers_read(compute, view) +
                                                                 static_cast<double>(view.compute->inlined.size()));
  const double lines = std::ceil(f.contiguous * bytes / kCacheLineBytes) * (f.pure_elements / f.contiguous);
  out[level_slot(level, kOwnBytes)] = log_magnitude(f.pure_elements * bytes);
  out[level_slot(level, kOwnLines)] = log_magnitude(lines);
  out[level_slot(level, kOperandBytes)] = log_magnitude(operand_elements * bytes);
  out[level_slot(level, kReuse)] = log_magnitude(f.points / std::max(1.0, f.pure_elements + operand_elements));
}

/// The loops of `path` from index `first` inward.
Loops loops_from(const Loops &path, size_t first) {
  return Loops(path.begin() + static_cast<std::ptrdiff_t>(std::min(first, path.size())), path.end());
}

/// Index of the innermost reduction loop on the path, -1 without one.
int innermost_reduction_index(const Loops &path) {
  for (size_t i = path.size(); i-- > 0;)
    if (path[i]->reduction) return static_cast<int>(i);
  return -1;
}

/// Counts and extent products per loop kind, the innermost loop, parallel balance, GPU binding.
void loop_kind_features(const StageView &view, int threads, std::vector<float> &out) {
  const Loops &path = view.path;
  int serial = 0, parallel = 0, vector = 0, unroll = 0, reduction = 0, gpu = 0;
  double serial_product = 1, parallel_product = 1, unroll_product = 1, reduction_product = 1;
  double gpu_blocks = 1, gpu_threads = 1;
  int64_t vector_width = 0;
  bool vector_contiguous = false;
  static const std::vector<AxisDesc> kNoAxes;
  const std::vector<AxisDesc> &axes = view.stage ? view.stage->axes : kNoAxes;
  for (const ScheduleNode *loop : path) {
    const double extent = static_cast<double>(loop->extent);
    switch (loop->loop_kind) {
      case LoopKind::Serial:
        ++serial;
        serial_product *= extent;
        break;
      case LoopKind::Parallel:
        ++parallel;
        parallel_product *= extent;
        break;
      case LoopKind::Vectorized: {
        ++vector;
        vector_width = loop->extent;  // the last one seen is the innermost
        const int a = axis_of(loop->var, axes);
        if (a >= 0 && storage_position(view, axes[a].name) == 0) vector_contiguous = true;
        break;
      }
      case LoopKind::Unrolled:
        ++unroll;
        unroll_product *= extent;
        break;
      case LoopKind::GpuBlock:
        ++gpu;
        gpu_blocks *= extent;
        break;
      case LoopKind::GpuThread:
      case LoopKind::GpuLane:
        ++gpu;
        gpu_threads *= extent;
        break;
    }
    if (loop->reduction) {
      ++reduction;
      reduction_product *= extent;
    }
  }
  out[kLoops] = static_cast<float>(path.size());
  out[kSerialLoops] = static_cast<float>(serial);
  out[kSerialProduct] = log_magnitude(serial_product);
  out[kParallelLoops] = static_cast<float>(parallel);
  out[kParallelProduct] = log_magnitude(parallel ? parallel_product : 0);
  out[kVectorLoops] = static_cast<float>(vector);
  out[kVectorWidth] = log_magnitude(static_cast<double>(vector_width));
  out[kUnrollLoops] = static_cast<float>(unroll);
  out[kUnrollProduct] = log_magnitude(unroll ? unroll_product : 0);
  const double thread_count = std::max(1, threads);
  out[kParallelPerThread] = log_magnitude(parallel ? parallel_product / thread_count : 0);
  // The share of thread slots the parallel iterations fill: 3 iterations on 2 threads use 3/4.
  out[kThreadBalance] =
      parallel ? static_cast<float>(parallel_product / (std::ceil(parallel_product / thread_count) * thread_count))
               : 0.0f;
  if (!path.empty()) {
    out[kInnermostExtent] = log_magnitude(static_cast<double>(path.back()->extent));
    out[kInnermostVectorized] = path.back()->loop_kind == LoopKind::Vectorized ? 1.0f : 0.0f;
  }
  out[kVectorContiguous] = vector_contiguous ? 1.0f : 0.0f;
  out[kReductionLoops] = static_cast<float>(reduction);
  out[kReductionProduct] = log_magnitude(reduction ? reduction_product : 0);
  out[kGpuLoops] = static_cast<float>(gpu);
  out[kGpuBlockProduct] = log_magnitude(gpu_blocks > 1 ? gpu_blocks : 0);
  out[kGpuThreadProduct] = log_magnitude(gpu_threads > 1 ? gpu_threads : 0);
}

/// The register tile: the loops inside the innermost reduction loop, whose points are the
/// accumulators an update keeps live while it walks the reduction.
void register_tile_features(const StageView &view, std::vector<float> &out) {
  const Loops &path = view.path;
  const int reduction = innermost_reduction_index(path);
  if (reduction < 0) return;
  const Loops tile_loops = loops_from(path, static_cast<size_t>(reduction) + 1);
  double points = 1;
  bool all_unrolled = true;
  int64_t vector_width = 1;
  for (const ScheduleNode *loop : tile_loops) {
    points *= static_cast<double>(loop->extent);
    all_unrolled = all_unrolled && (loop->loop_kind == LoopKind::Unrolled || loop->loop_kind == LoopKind::Vectorized);
    if (loop->loop_kind == LoopKind::Vectorized) vector_width = std::max<int64_t>(1, loop->extent);
  }
  out[kLoopsInReduction] = static_cast<float>(tile_loops.size());
  out[kRegisterTilePoints] = log_magnitude(points);
  out[kRegisterTileVectors] = log_magnitude(points / static_cast<double>(vector_width));
  out[kRegisterTileUnrolled] = !tile_loops.empty() && all_unrolled ? 1.0f : 0.0f;
  out[kInnermostReductionExtent] = log_magnitude(static_cast<double>(path[static_cast<size_t>(reduction)]->extent));
  // Accumulators stay in registers only while reduction loops run back to back around the
  // tile: a pure loop between them means loading and storing them again.
  double run = 1;
  for (int i = reduction; i >= 0 && path[static_cast<size_t>(i)]->reduction; --i)
    run *= static_cast<double>(path[static_cast<size_t>(i)]->extent);
  out[kAccumulatorReuse] = log_magnitude(run);
  const Footprint tile = footprint(tile_loops, view);
  for (size_t a = 0; a < kTiledAxes; ++a) out[kRegisterTileAxis0 + a] = log_magnitude(tile.along_axis[a]);
}

/// Where and how often the stage's Func is allocated (nothing for outputs).
void allocation_features(const StageView &view, std::vector<float> &out) {
  if (!view.realize) return;
  out[kRealizeBytes] = log_magnitude(static_cast<double>(view.realize->bytes));
  double allocations = 1;
  bool in_parallel = false;
  for (const ScheduleNode *loop : view.realize_path) {
    allocations *= static_cast<double>(loop->extent);
    in_parallel = in_parallel || loop->loop_kind == LoopKind::Parallel || is_gpu(loop->loop_kind);
  }
  out[kRealizeCount] = log_magnitude(allocations);
  int memory_slot = kMemoryAuto;
  if (view.realize->memory) {
    switch (*view.realize->memory) {
      case MemoryKind::Register: memory_slot = kMemoryRegister; break;
      case MemoryKind::Stack: memory_slot = kMemoryStack; break;
      case MemoryKind::Heap: memory_slot = kMemoryHeap; break;
      case MemoryKind::GpuShared: memory_slot = kMemoryGpuShared; break;
    }
  }
  out[memory_slot] = 1.0f;
  out[kRealizeDepth] = static_cast<float>(view.realize_path.size());
  out[kRealizeInParallel] = in_parallel ? 1.0f : 0.0f;
}

/// Footprints at each loop level, and the block's shape.
void loop_level_features(const ComputeDesc &compute, const StageView &view, std::vector<float> &out) {
  const Loops &path = view.path;
  Loops own_nest;
  for (const ScheduleNode *loop : path)
    if (loop->func == view.compute->func && loop->update == view.compute->update) own_nest.push_back(loop);
  size_t parallel_body_start = 0;
  for (size_t i = 0; i < path.size(); ++i)
    if (path[i]->loop_kind == LoopKind::Parallel || path[i]->loop_kind == LoopKind::GpuBlock)
      parallel_body_start = i + 1;
  const int reduction = innermost_reduction_index(path);
  const size_t reduction_body_start =
      reduction >= 0 ? static_cast<size_t>(reduction) : path.size() - std::min<size_t>(1, path.size());
  auto innermost = [&](size_t n) { return loops_from(path, path.size() - std::min(n, path.size())); };
  level_features(compute, view, kInner1, innermost(1), out);
  level_features(compute, view, kInner2, innermost(2), out);
  level_features(compute, view, kInner3, innermost(3), out);
  level_features(compute, view, kReductionBody, loops_from(path, reduction_body_start), out);
  level_features(compute, view, kOwnNest, own_nest, out);
  level_features(compute, view, kParallelBody, loops_from(path, parallel_body_start), out);
  const Footprint block = footprint(own_nest, view);
  for (size_t a = 0; a < kTiledAxes; ++a) out[kBlockAxis0 + a] = log_magnitude(block.along_axis[a]);
}

std::vector<float> stage_features(const ComputeDesc &compute, const StageView &view, int threads) {
  std::vector<float> out(kStageSlotCount, 0.0f);
  const double executions = static_cast<double>(view.compute->executions);
  out[kExecutions] = log_magnitude(executions);
  out[kRecomputeRatio] = static_cast<float>(executions / std::max(1.0, natural_points(view)));
  const double flops = flops_per_point(view);
  out[kFlopsPerPoint] = log_magnitude(flops);
  out[kFlops] = log_magnitude(flops * executions);
  out[kInlinedFuncs] = static_cast<float>(view.compute->inlined.size());
  out[kIsUpdate] = view.compute->update >= 0 ? 1.0f : 0.0f;
  out[kIsOutput] = view.func && view.func->is_output ? 1.0f : 0.0f;
  loop_kind_features(view, threads, out);
  register_tile_features(view, out);
  allocation_features(view, out);
  loop_level_features(compute, view, out);
  return out;
}

/// Every compute node with its enclosing loops and its Func's allocation.
std::vector<StageView> collect_stages(const ComputeDesc &compute, const ScheduleTree &tree) {
  std::vector<StageView> stages;
  std::map<std::string, std::pair<const ScheduleNode *, Loops>> realizes;
  Loops path;
  // Children run in order, so a Func's realize node is seen before its compute nodes.
  auto visit = [&](auto &&self, int index) -> void {
    const ScheduleNode &node = tree.nodes[static_cast<size_t>(index)];
    switch (node.kind) {
      case ScheduleNodeKind::Root: break;
      case ScheduleNodeKind::Loop: path.push_back(&node); break;
      case ScheduleNodeKind::Realize: realizes[node.func] = {&node, path}; break;
      case ScheduleNodeKind::Compute: {
        StageView view;
        view.compute = &node;
        view.path = path;
        view.func = compute.find(node.func);
        if (view.func) {
          const size_t s = static_cast<size_t>(node.update + 1);
          if (s < view.func->stages.size()) view.stage = &view.func->stages[s];
        }
        auto realize = realizes.find(node.func);
        if (realize != realizes.end()) {
          view.realize = realize->second.first;
          view.realize_path = realize->second.second;
        }
        stages.push_back(std::move(view));
        break;
      }
    }
    for (int child : node.children) self(self, child);
    if (node.kind == ScheduleNodeKind::Loop) path.pop_back();
  };
  if (!tree.nodes.empty()) visit(visit, 0);
  return stages;
}

std::vector<float> task_features(const ComputeDesc &compute, const ScheduleTree &tree,
                                 const std::vector<StageView> &stages) {
  std::vector<float> out(kTaskSlotCount, 0.0f);
  std::vector<std::string> funcs;
  double natural_flops = 0, executions = 0;
  for (const StageView &view : stages) {
    if (std::find(funcs.begin(), funcs.end(), view.compute->func) == funcs.end()) funcs.push_back(view.compute->func);
    natural_flops += natural_points(view) * flops_per_point(view);
    executions += static_cast<double>(view.compute->executions);
  }
  double output_points = 0, output_bytes = 0, reduction_points = 0;
  for (const FuncDesc &f : compute.funcs) {
    double points = 1;
    for (const AxisDesc &a : f.pure_axes) points *= static_cast<double>(std::max<int64_t>(1, a.extent));
    if (f.is_output) {
      output_points += points;
      output_bytes += points * static_cast<double>(f.bytes_per_element);
    }
    for (const StageDesc &s : f.stages) {
      double reduction = 1;
      bool any = false;
      for (const AxisDesc &a : s.axes) {
        if (!a.reduction) continue;
        reduction *= static_cast<double>(std::max<int64_t>(1, a.extent));
        any = true;
      }
      if (any) reduction_points = std::max(reduction_points, reduction);
    }
  }
  double realize_bytes = 0;
  for (const ScheduleNode &node : tree.nodes)
    if (node.kind == ScheduleNodeKind::Realize) realize_bytes += static_cast<double>(node.bytes);
  out[kStageCount] = static_cast<float>(stages.size());
  out[kFuncCount] = static_cast<float>(funcs.size());
  out[kOutputPoints] = log_magnitude(output_points);
  out[kOutputBytes] = log_magnitude(output_bytes);
  out[kTaskReductionPoints] = log_magnitude(reduction_points);
  out[kNaturalFlops] = log_magnitude(natural_flops);
  out[kTotalExecutions] = log_magnitude(executions);
  out[kTaskRealizeBytes] = log_magnitude(realize_bytes);
  return out;
}

}  // namespace

int stage_feature_count() { return kStageSlotCount; }

int feature_count() { return kTaskSlotCount + 3 * kStageSlotCount; }

const std::vector<std::string> &feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> stage;
    for (const char *name : kStageSlotNames) stage.push_back(name);
    for (const char *level : kLevelNames)
      for (const char *slot : kLevelSlotNames) stage.push_back(std::string(level) + "." + slot);
    std::vector<std::string> all;
    for (const char *name : kTaskSlotNames) all.push_back(std::string("task.") + name);
    for (const char *block : {"anchor.", "rest_sum.", "rest_max."})
      for (const std::string &name : stage) all.push_back(block + name);
    return all;
  }();
  return names;
}

std::vector<float> schedule_features(const ComputeDesc &compute, const ScheduleTree &tree, int threads) {
  const std::vector<StageView> stages = collect_stages(compute, tree);
  std::vector<float> features = task_features(compute, tree, stages);
  features.reserve(static_cast<size_t>(feature_count()));

  // The anchor: most executions, then most FLOPs per point, then the first in execution order.
  auto heavier = [](const StageView &a, const StageView &b) {
    if (a.compute->executions != b.compute->executions) return a.compute->executions > b.compute->executions;
    return flops_per_point(a) > flops_per_point(b);
  };
  size_t anchor = 0;
  for (size_t i = 1; i < stages.size(); ++i)
    if (heavier(stages[i], stages[anchor])) anchor = i;
  std::vector<float> anchor_block(kStageSlotCount, 0.0f), sum(kStageSlotCount, 0.0f), max(kStageSlotCount, 0.0f);
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::vector<float> block = stage_features(compute, stages[i], threads);
    if (i == anchor) {
      anchor_block = block;
      continue;
    }
    for (int s = 0; s < kStageSlotCount; ++s) {
      sum[s] += block[s];
      max[s] = std::max(max[s], block[s]);
    }
  }
  for (const std::vector<float> *block : {&anchor_block, &sum, &max})
    features.insert(features.end(), block->begin(), block->end());
  for (float &f : features)
    if (!std::isfinite(f)) f = 0.0f;  // never hand NaN or infinity to the model
  return features;
}

}  // namespace tessel
