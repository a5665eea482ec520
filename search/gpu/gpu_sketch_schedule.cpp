// The steps a GPU sketch implies for given parameter values (gpu_sketch_schedule.h). Loop
// names follow the axis they came from: x_blk, x_thr, x_reg for an output axis' block, thread
// and register parts, k_o/k_i for a reduction var's outer and inner parts; the fused block
// and thread loops are named blocks and threads.
#include "search/gpu/gpu_sketch_schedule.h"

#include <algorithm>

#include "search/gpu/gpu_split_k.h"
#include "search/gpu/gpu_warp_tile.h"
#include "search/loop_names.h"
#include "search/sketch_writer.h"

namespace tessel {
namespace {

class GpuScheduleWriter : public SketchWriter {
 public:
  GpuScheduleWriter(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                    const SketchChoices &choices)
      : SketchWriter(compute, sketch, choices), target_(target) {}

 private:
  void write_rule(const FuncPlan &plan, const FuncDesc &f) override {
    switch (plan.rule) {
      case FuncRule::Inline: break;
      case FuncRule::GpuTiledOutput: tiled_output(f, need(plan.partner)); break;
      case FuncRule::GpuRegisterAnchor: break;  // written with its output
      case FuncRule::GpuWarpTiledOutput: {
        Result<std::vector<ScheduleStep>> steps = write_warp_tile(f, need(plan.partner), choices_);
        if (!steps) reject_choice(steps.error().message);
        for (ScheduleStep &s : steps.value()) step(std::move(s));
        break;
      }
      case FuncRule::GpuWarpAnchor: break;  // written with its output
      case FuncRule::GpuSplitKOutput: {
        Result<std::vector<ScheduleStep>> steps = write_split_k(compute_, f, need(plan.partner), choices_, target_);
        if (!steps) reject_choice(steps.error().message);
        for (ScheduleStep &s : steps.value()) step(std::move(s));
        break;
      }
      case FuncRule::GpuSplitKAnchor: break;  // written with its output
      case FuncRule::GpuInjectiveOutput: injective(f, StageRef{f.name, -1}, f.pure_axes); break;
      case FuncRule::Root: root(f); break;
      default: reject_choice(std::string("rule ") + to_text(plan.rule) + " is not a GPU rule");
    }
  }

  /// Fuses `loops` (innermost first, adjacent) into one; returns its name.
  std::string fuse_all(const StageRef &stage, const std::vector<std::string> &loops, LoopNames &names,
                       const std::string &base) {
    return fuse_loops(schedule_.steps, stage, loops, names, base);
  }

  void tiled_output(const FuncDesc &out, const FuncDesc &anchor) {
    const StageRef stage{out.name, -1};
    LoopNames names(out.pure_axes);
    const size_t n = out.pure_axes.size();
    if (n == 0) reject_choice(out.name + " has no axes to tile");
    std::vector<int64_t> threads(n), regs(n), tiles(n);
    bool any_block = false;
    int64_t accumulators = 1;
    for (size_t a = 0; a < n; ++a) {
      const AxisDesc &axis = out.pure_axes[a];
      threads[a] = value(out.name + ".thread." + axis.name, 1);
      regs[a] = value(out.name + ".register." + axis.name, 1);
      if (threads[a] < 1 || regs[a] < 1) reject_choice(out.name + ": tiles must be positive");
      tiles[a] = threads[a] * regs[a];
      if (tiles[a] > axis.extent)
        reject_choice(out.name + ".thread/register." + axis.name + ": a block tile of " + std::to_string(tiles[a]) +
               " exceeds the axis' " + std::to_string(axis.extent));
      // Halide 14 often cannot bound a per-thread register tile below a ragged block tile
      // (measured: "unable to infer constant upper bound on extent of realization"), so
      // tiles divide their axes, as Ansor's GPU tilings do.
      if (axis.extent % tiles[a] != 0)
        reject_choice(out.name + ": the block tile " + std::to_string(tiles[a]) + " of axis " + axis.name +
               " must divide its extent " + std::to_string(axis.extent));
      if (tiles[a] < axis.extent || axis.extent == 1 || tiles[a] == 1) any_block = true;
      accumulators *= regs[a];
    }
    const int64_t block_threads = product_of(threads);
    if (block_threads > target_.max_threads_for(static_cast<int>(accumulators)))
      reject_choice(out.name + ": " + std::to_string(block_threads) + " threads per block with " +
             std::to_string(accumulators) + " accumulators each exceed the register file");
    if (accumulators > target_.accumulator_budget())
      reject_choice(out.name + ": a register tile of " + std::to_string(accumulators) + " accumulators exceeds the budget");

    std::vector<std::string> block_loops, thread_loops, register_loops;
    std::vector<std::string> current;
    for (size_t a = 0; a < n; ++a) {
      const AxisDesc &axis = out.pure_axes[a];
      const bool outermost = a + 1 == n;
      if (tiles[a] == 1 || axis.extent == 1) {
        block_loops.push_back(axis.name);
        current.push_back(axis.name);
        continue;
      }
      std::string inner = axis.name;
      if (tiles[a] < axis.extent || (!any_block && outermost)) {
        const std::string outer = names.fresh(axis.name + "_blk");
        inner = names.fresh(axis.name + "_in");
        step(SplitStep{stage, axis.name, outer, inner, tiles[a], TailStrategy::ShiftInwards});
        block_loops.push_back(outer);
      }
      if (threads[a] > 1 && regs[a] > 1) {
        const std::string thr = names.fresh(axis.name + "_thr"), reg = names.fresh(axis.name + "_reg");
        step(SplitStep{stage, inner, thr, reg, regs[a], TailStrategy::ShiftInwards});
        thread_loops.push_back(thr);
        register_loops.push_back(reg);
        current.push_back(reg);
        current.push_back(thr);
      } else if (threads[a] > 1) {
        thread_loops.push_back(inner);
        current.push_back(inner);
      } else {
        register_loops.push_back(inner);
        current.push_back(inner);
      }
      if (inner != axis.name) current.push_back(block_loops.back());
    }
    if (thread_loops.empty()) reject_choice(out.name + ": a block needs at least one thread loop");
    // Thread loops are bound one per GPU dimension, not fused: Halide 14 cannot bound a
    // register tile computed inside a fused thread loop once the blocks vary (measured:
    // "unable to infer constant upper bound on extent of realization").
    if (thread_loops.size() > 3)
      reject_choice(out.name + ": " + std::to_string(thread_loops.size()) + " axes have threads; a GPU block has 3 dimensions");
    std::vector<std::string> order = register_loops;
    order.insert(order.end(), thread_loops.begin(), thread_loops.end());
    order.insert(order.end(), block_loops.begin(), block_loops.end());
    if (order != current) step(ReorderStep{stage, order});
    const std::string block_loop = fuse_all(stage, block_loops, names, "blocks");
    step(BindStep{stage, block_loop, GpuAxis::Block, 0});
    for (size_t i = 0; i < thread_loops.size(); ++i)
      step(BindStep{stage, thread_loops[i], GpuAxis::Thread, static_cast<int>(i)});
    const std::string thread_loop = thread_loops.front();
    for (const std::string &r : register_loops) step(UnrollStep{stage, r, std::nullopt});

    // The anchor: one register tile per thread.
    step(ComputeAtStep{anchor.name, stage, thread_loop});
    step(StoreInStep{anchor.name, MemoryKind::Register});
    const StageRef pure{anchor.name, -1};
    for (size_t a = 0; a < anchor.pure_axes.size(); ++a)
      if (regs[a] > 1) step(UnrollStep{pure, anchor.pure_axes[a].name, std::nullopt});
    if (anchor.stages.size() < 2) return;
    const StageRef update{anchor.name, 0};
    LoopNames update_names(anchor.stages[1].axes);
    std::vector<std::string> inner_r, outer_r, pure_loops;
    std::vector<std::string> update_current;
    for (const AxisDesc &axis : anchor.stages[1].axes) {
      if (!axis.reduction) {
        pure_loops.push_back(axis.name);
        update_current.push_back(axis.name);
        continue;
      }
      const int64_t factor = value(anchor.name + ".reduce." + axis.name, 1);
      if (factor < 1 || axis.extent % factor != 0)
        reject_choice(anchor.name + ".reduce." + axis.name + "=" + std::to_string(factor) + " does not divide " +
               std::to_string(axis.extent));
      if (factor == 1) {
        outer_r.push_back(axis.name);
        update_current.push_back(axis.name);
      } else if (factor == axis.extent) {
        inner_r.push_back(axis.name);
        update_current.push_back(axis.name);
      } else {
        const std::string o = update_names.fresh(axis.name + "_o"), i = update_names.fresh(axis.name + "_i");
        step(SplitStep{update, axis.name, o, i, factor, TailStrategy::Auto});
        inner_r.push_back(i);
        outer_r.push_back(o);
        update_current.push_back(i);
        update_current.push_back(o);
      }
    }
    // Halide lists an update's reduction loops inside its pure ones: the register tile
    // goes innermost so each loaded operand feeds every accumulator.
    std::vector<std::string> update_order = pure_loops;
    update_order.insert(update_order.end(), inner_r.begin(), inner_r.end());
    update_order.insert(update_order.end(), outer_r.begin(), outer_r.end());
    if (update_order != update_current) step(ReorderStep{update, update_order});
    for (size_t a = 0; a < anchor.pure_axes.size(); ++a)
      if (regs[a] > 1) step(UnrollStep{update, anchor.pure_axes[a].name, std::nullopt});
    if (value(anchor.name + ".unroll_reduce", 0) == 1 && !inner_r.empty()) {
      int64_t inner_extent = 1;
      for (const AxisDesc &axis : anchor.stages[1].axes)
        if (axis.reduction) {
          const int64_t factor = value(anchor.name + ".reduce." + axis.name, 1);
          if (factor > 1) {
            inner_extent = factor;
            break;
          }
        }
      if (inner_extent <= 16) step(UnrollStep{update, inner_r.front(), std::nullopt});
    }
  }

  /// All pure loops of one stage fused, an optional vector per thread, split into blocks
  /// of threads; `axes` are the stage's pure axes, innermost first.
  void injective(const FuncDesc &f, const StageRef &stage, const std::vector<AxisDesc> &axes) {
    if (axes.empty()) return;
    LoopNames names(f.stages.empty() ? axes : f.stages[std::max(0, stage.update + 1)].axes);
    const int64_t vector = value(f.name + ".vector", 1);
    if (vector < 1 || axes[0].extent % vector != 0)
      reject_choice(f.name + ".vector=" + std::to_string(vector) + " does not divide " + std::to_string(axes[0].extent));
    std::vector<std::string> loops;
    int64_t total = 1;
    for (const AxisDesc &a : axes) {
      loops.push_back(a.name);
      total *= a.extent;
    }
    if (vector > 1) {
      step(VectorizeStep{stage, axes[0].name, vector});
      names.fresh(vectorized_inner_name(axes[0].name));
      total /= vector;
    }
    const std::string fused = fuse_all(stage, loops, names, "fused");
    const int64_t threads = std::clamp<int64_t>(value(f.name + ".threads", 256), 1, target_.max_threads_per_block);
    const int64_t per_block = std::min(threads, total);
    const std::string blk = names.fresh("blocks"), thr = names.fresh("threads");
    // The last block's spare threads idle (guarded): an injective stage needs no
    // constant-size region, unlike a register tile.
    step(SplitStep{stage, fused, blk, thr, per_block, TailStrategy::Guard});
    step(BindStep{stage, blk, GpuAxis::Block, 0});
    step(BindStep{stage, thr, GpuAxis::Thread, 0});
  }

  /// A non-inlinable Func that anchors no output: at root, each stage's pure loops over
  /// blocks of threads, its reduction serial inside each thread.
  void root(const FuncDesc &f) {
    step(ComputeRootStep{f.name});
    for (size_t s = 0; s < f.stages.size(); ++s) {
      std::vector<AxisDesc> pure;
      for (const AxisDesc &a : f.stages[s].axes)
        if (!a.reduction) pure.push_back(a);
      if (s == 0) pure = f.pure_axes;
      if (pure.empty()) reject_choice(f.name + ": a stage with no pure loop cannot spread over GPU threads");
      // Only the pure definition may vectorize: an update's vector would read its own lanes.
      SketchChoices saved = choices_;
      if (s > 0) choices_[f.name + ".vector"] = 1;
      injective(f, StageRef{f.name, f.stages[s].update}, pure);
      choices_ = saved;
    }
  }

  GpuTargetDesc target_;
};

}  // namespace

Result<Schedule> build_gpu_sketch_schedule(const ComputeDesc &compute, const Sketch &sketch,
                                           const GpuTargetDesc &target, const SketchChoices &choices) {
  return GpuScheduleWriter(compute, sketch, target, choices).write();
}

}  // namespace tessel
