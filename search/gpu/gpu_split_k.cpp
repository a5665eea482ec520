// The gpu_split_k sketch (gpu_split_k.h). Loop names: A_blk / A_thr for an output axis'
// block and thread parts, "threads" and "blocks" for the fused ones; the split reduction
// variable R becomes R_o (the chunks, rfactored into the pure variable "chunk") and R_i.
#include "search/gpu/gpu_split_k.h"

#include <algorithm>
#include <set>

#include "search/gpu/single_anchor_plans.h"
#include "search/loop_names.h"
#include "search/sketch_writer.h"

namespace tessel {
namespace {

constexpr int64_t kMinProducts = 256;           // per output element
constexpr int64_t kMinSplitPoints = 16;         // of the split variable
constexpr int64_t kMaxOutputElements = 1 << 18;  // above: the output alone fills the device
constexpr int64_t kMaxChunks = 32;
constexpr int64_t kUnrollLimit = 8;

/// The reduction variable to split: the one with the most points (the outermost on a tie).
std::optional<AxisDesc> split_variable(const FuncDesc &anchor) {
  std::optional<AxisDesc> best;
  for (const AxisDesc &r : update_reduction_axes(anchor))
    if (!best || r.extent >= best->extent) best = r;
  return best;
}

int64_t elements(const FuncDesc &f) {
  int64_t n = 1;
  for (const AxisDesc &a : f.pure_axes) n *= a.extent;
  return n;
}

std::vector<int64_t> chunk_counts(int64_t extent) {
  std::vector<int64_t> counts;
  for (int64_t d : divisors_up_to(extent, kMaxChunks))
    if (d >= 2 && extent / d >= 2) counts.push_back(d);
  return counts;
}

std::string thread_param(const FuncDesc &out, const AxisDesc &axis) { return out.name + ".splitk.thread." + axis.name; }

/// `base`_rf, or _rf2, _rf3 ... where the task already has a Func of that name.
std::string intermediate_name(const ComputeDesc &compute, const std::string &base) {
  std::set<std::string> taken;
  for (const FuncDesc &f : compute.funcs) taken.insert(f.name);
  std::string name = base + "_rf";
  for (int i = 2; taken.count(name); ++i) name = base + "_rf" + std::to_string(i);
  return name;
}

}  // namespace

std::optional<Sketch> make_split_k_sketch(const ComputeDesc &compute, const std::string &out_name,
                                          const std::string &anchor_name) {
  const FuncDesc *out = compute.find(out_name);
  const FuncDesc *anchor = compute.find(anchor_name);
  if (!out || !anchor || anchor->stages.size() != 2 || out->pure_axes.empty() ||
      anchor->pure_axes.size() != out->pure_axes.size())
    return std::nullopt;
  const std::optional<AxisDesc> split = split_variable(*anchor);
  int64_t products = 1;
  for (const AxisDesc &r : update_reduction_axes(*anchor)) products *= r.extent;
  if (!split || split->extent < kMinSplitPoints || products < kMinProducts || elements(*out) > kMaxOutputElements ||
      chunk_counts(split->extent).empty())
    return std::nullopt;
  std::optional<std::vector<FuncPlan>> plans =
      single_anchor_plans(compute, out_name, anchor_name, FuncRule::GpuSplitKOutput, FuncRule::GpuSplitKAnchor);
  if (!plans) return std::nullopt;
  Sketch sketch;
  sketch.name = "gpu_split_k";
  sketch.funcs = std::move(*plans);
  for (const AxisDesc &a : out->pure_axes)
    sketch.params.push_back(SketchParam{thread_param(*out, a), ParamKind::ThreadTile, divisors_up_to(a.extent, 512)});
  sketch.params.push_back(SketchParam{anchor_name + ".splitk.chunks", ParamKind::RfactorChunks, chunk_counts(split->extent)});
  sketch.params.push_back(SketchParam{anchor_name + ".splitk.unroll", ParamKind::Unroll, {0, 1}});
  return sketch;
}

bool split_k_is_default(const Sketch &sketch, const ComputeDesc &compute, const GpuTargetDesc &target) {
  if (sketch.name != "gpu_split_k") return false;
  for (const FuncPlan &plan : sketch.funcs)
    if (plan.rule == FuncRule::GpuSplitKOutput)
      if (const FuncDesc *out = compute.find(plan.func)) return elements(*out) <= int64_t{256} * target.multiprocessors;
  return false;
}

SketchChoices choose_split_k(const Sketch &sketch, const ComputeDesc &compute, const GpuTargetDesc &target,
                             std::mt19937_64 *rng) {
  auto draw = [&](const std::vector<int64_t> &values, int64_t fallback) {
    if (!rng || values.empty()) return fallback;
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(*rng)];
  };
  auto largest_up_to = [](const std::vector<int64_t> &values, int64_t limit) {
    int64_t best = 1;
    for (int64_t v : values)
      if (v <= limit) best = std::max(best, v);
    return best;
  };
  const FuncDesc *out = nullptr;
  for (const FuncPlan &plan : sketch.funcs)
    if (plan.rule == FuncRule::GpuSplitKOutput) out = compute.find(plan.func);
  SketchChoices choices;
  if (!out) return choices;
  const SketchParam *chunks_param = nullptr;
  for (const SketchParam &p : sketch.params)
    if (p.kind == ParamKind::RfactorChunks) chunks_param = &p;
  for (int attempt = 0; attempt < 64; ++attempt) {
    choices.clear();
    // Chunks first; then threads along the output's axes from the innermost (neighbouring
    // threads read neighbouring inputs) within what the chunks leave of the block.
    const int64_t chunks = chunks_param ? draw(chunks_param->values, largest_up_to(chunks_param->values, 8)) : 1;
    if (chunks_param) choices[chunks_param->name] = chunks;
    const int64_t budget = rng ? draw({64, 128, 256, 512}, 128) : 128;
    int64_t left = std::max<int64_t>(1, std::min<int64_t>(budget, target.max_threads_per_block / chunks));
    int64_t threads = 1;
    bool blocks_left = false;
    for (const AxisDesc &a : out->pure_axes) {
      const SketchParam *p = sketch.param(thread_param(*out, a));
      std::vector<int64_t> fits;
      if (p)
        for (int64_t t : p->values)
          if (t <= left) fits.push_back(t);
      const int64_t t = draw(fits, largest_up_to(fits, left));
      choices[thread_param(*out, a)] = t;
      threads *= t;
      left = std::max<int64_t>(1, left / t);
      if (t < a.extent) blocks_left = true;
    }
    for (const SketchParam &p : sketch.params)
      if (p.kind == ParamKind::Unroll) choices[p.name] = draw(p.values, 1);
    // Valid: at least a warp's worth of threads in the block, and more than one block.
    if (!rng || (threads * chunks >= target.warp_size && threads * chunks <= target.max_threads_per_block && blocks_left))
      break;
  }
  return choices;
}

Result<std::vector<ScheduleStep>> write_split_k(const ComputeDesc &compute, const FuncDesc &out,
                                                const FuncDesc &anchor, const SketchChoices &choices,
                                                const GpuTargetDesc &target) {
  const std::optional<AxisDesc> split = split_variable(anchor);
  if (!split || anchor.stages.size() != 2 || anchor.pure_axes.size() != out.pure_axes.size())
    return make_error(ErrorKind::Unsupported, anchor.name + ": no reduction this sketch can split");
  const int64_t chunks = choice_or(choices, anchor.name + ".splitk.chunks", 0);
  if (chunks < 2 || split->extent % chunks != 0 || split->extent / chunks < 2)
    return make_error(ErrorKind::InvalidInput, anchor.name + ".splitk.chunks=" + std::to_string(chunks) +
                                                   " must divide " + split->name + "'s " +
                                                   std::to_string(split->extent) + " into parts of 2 or more");
  std::vector<int64_t> threads;
  for (const AxisDesc &a : out.pure_axes) {
    const int64_t t = choice_or(choices, thread_param(out, a), 1);
    if (t < 1 || a.extent % t != 0)
      return make_error(ErrorKind::InvalidInput, thread_param(out, a) + "=" + std::to_string(t) +
                                                     " must divide the axis' " + std::to_string(a.extent));
    threads.push_back(t);
  }
  const int64_t block_threads = product_of(threads);
  if (block_threads * chunks > target.max_threads_per_block)
    return make_error(ErrorKind::InvalidInput, std::to_string(block_threads) + " threads x " + std::to_string(chunks) +
                                                   " chunks exceed the block's " +
                                                   std::to_string(target.max_threads_per_block));

  std::vector<ScheduleStep> steps;
  // The output: each axis split into a block part and a thread part; the thread parts
  // fused (one output element per thread) and the block parts fused.
  const StageRef o{out.name, -1};
  LoopNames names(out.pure_axes);
  std::vector<std::string> thread_loops, block_loops;
  for (size_t a = 0; a < out.pure_axes.size(); ++a) {
    const AxisDesc &axis = out.pure_axes[a];
    if (threads[a] == 1) {
      block_loops.push_back(axis.name);
    } else if (threads[a] == axis.extent) {
      thread_loops.push_back(axis.name);
    } else {
      const std::string blk = names.fresh(axis.name + "_blk"), thr = names.fresh(axis.name + "_thr");
      steps.push_back(SplitStep{o, axis.name, blk, thr, threads[a], TailStrategy::ShiftInwards});
      thread_loops.push_back(thr);
      block_loops.push_back(blk);
    }
  }
  if (thread_loops.empty() || block_loops.empty())
    return make_error(ErrorKind::InvalidInput, out.name + ": a split-k block needs thread loops and at least one block loop");
  auto fuse_all = [&](const StageRef &stage, const std::vector<std::string> &loops, LoopNames &stage_names,
                      const std::string &base) { return fuse_loops(steps, stage, loops, stage_names, base); };
  std::vector<std::string> order = thread_loops;
  order.insert(order.end(), block_loops.begin(), block_loops.end());
  steps.push_back(ReorderStep{o, order});
  const std::string out_threads = fuse_all(o, thread_loops, names, "threads");
  const std::string out_blocks = fuse_all(o, block_loops, names, "blocks");
  steps.push_back(BindStep{o, out_blocks, GpuAxis::Block, 0});
  steps.push_back(BindStep{o, out_threads, GpuAxis::Thread, 0});

  // The anchor: per thread, in a register; after the rfactor its update folds the chunks.
  steps.push_back(ComputeAtStep{anchor.name, o, out_threads});
  steps.push_back(StoreInStep{anchor.name, MemoryKind::Register});
  const StageRef update{anchor.name, 0};
  LoopNames update_names(anchor.stages[1].axes);
  const std::string chunk_rvar = update_names.fresh(split->name + "_o");
  const std::string within = update_names.fresh(split->name + "_i");
  steps.push_back(SplitStep{update, split->name, chunk_rvar, within, split->extent / chunks, TailStrategy::Auto});
  const std::string rf = intermediate_name(compute, anchor.name);
  const std::string chunk = update_names.fresh("chunk");
  steps.push_back(RfactorStep{update, rf, {{chunk_rvar, chunk}}});
  steps.push_back(UnrollStep{update, chunk_rvar, std::nullopt});

  // The partials: at the output's block, in shared memory, one thread per (element, chunk).
  steps.push_back(ComputeAtStep{rf, o, out_blocks});
  steps.push_back(StoreInStep{rf, MemoryKind::GpuShared});
  std::vector<std::string> pure;
  for (const AxisDesc &a : anchor.pure_axes) pure.push_back(a.name);
  // The partial's own reduction: the anchor's, innermost first, with the split variable's
  // inner part in its place.
  std::vector<std::string> reduction;
  int64_t innermost_extent = 0;  // of reduction.front()
  for (const AxisDesc &a : anchor.stages[1].axes) {
    if (!a.reduction) continue;
    const bool is_split = a.name == split->name;
    if (reduction.empty()) innermost_extent = is_split ? split->extent / chunks : a.extent;
    reduction.push_back(is_split ? within : a.name);
  }
  const bool unroll = choice_or(choices, anchor.name + ".splitk.unroll", 1) == 1;
  for (int stage_index = -1; stage_index <= 0; ++stage_index) {
    const StageRef stage{rf, stage_index};
    LoopNames rf_names(anchor.pure_axes);
    rf_names.use(chunk);
    for (const std::string &r : reduction) rf_names.use(r);
    std::vector<std::string> rf_order = stage_index == 0 ? reduction : std::vector<std::string>{};
    rf_order.insert(rf_order.end(), pure.begin(), pure.end());
    rf_order.push_back(chunk);
    steps.push_back(ReorderStep{stage, rf_order});
    const std::string fused = fuse_all(stage, pure, rf_names, "elements");
    steps.push_back(BindStep{stage, fused, GpuAxis::Thread, 0});
    steps.push_back(BindStep{stage, chunk, GpuAxis::Thread, 1});
    if (stage_index == 0 && unroll && !reduction.empty() && innermost_extent <= kUnrollLimit)
      steps.push_back(UnrollStep{stage, reduction.front(), std::nullopt});
  }
  return steps;
}

}  // namespace tessel
