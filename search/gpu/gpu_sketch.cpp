// GPU sketch rules, their sampler and the steps they imply (gpu_sketch.h). Loop names
// follow the axis they came from: x_blk, x_thr, x_reg for an output axis' block, thread and
// register parts, k_o/k_i for a reduction var's outer and inner parts; the fused block and
// thread loops are named blocks and threads.
#include "search/gpu/gpu_sketch.h"

#include <algorithm>
#include <set>

#include "search/exact_cover.h"
#include "search/gpu/gpu_warp_tile.h"
#include "search/loop_names.h"

namespace tessel {
namespace {

struct ChoiceError {
  std::string message;
};
[[noreturn]] void reject(const std::string &message) { throw ChoiceError{message}; }

int64_t get(const SketchChoices &choices, const std::string &name, int64_t fallback) {
  auto it = choices.find(name);
  return it == choices.end() ? fallback : it->second;
}

int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::vector<AxisDesc> reduction_axes(const FuncDesc &f) {
  std::vector<AxisDesc> r;
  if (f.stages.size() > 1)
    for (const AxisDesc &a : f.stages[1].axes)
      if (a.reduction) r.push_back(a);
  return r;
}


// ---- sketches ----

Sketch make_sketch(const ComputeDesc &compute, const std::vector<std::pair<std::string, std::string>> &anchors,
                   const GpuTargetDesc &target) {
  Sketch sketch;
  sketch.name = anchors.empty() ? "gpu_injective" : "gpu_tile";
  auto add = [&](std::string name, ParamKind kind, std::vector<int64_t> values) {
    sketch.params.push_back(SketchParam{std::move(name), kind, std::move(values)});
  };
  for (const FuncDesc &f : compute.funcs) {
    FuncPlan plan{f.name, FuncRule::Inline, ""};
    for (const auto &[out, anchor] : anchors) {
      if (f.name == out) plan = FuncPlan{f.name, FuncRule::GpuTiledOutput, anchor};
      if (f.name == anchor) plan = FuncPlan{f.name, FuncRule::GpuRegisterAnchor, out};
    }
    if (plan.rule == FuncRule::Inline) {
      if (f.is_output) plan.rule = FuncRule::GpuInjectiveOutput;
      else if (!f.inlinable) plan.rule = FuncRule::Root;
    }
    sketch.funcs.push_back(plan);
  }
  const int64_t max_threads = target.max_threads_per_block;
  for (const FuncPlan &plan : sketch.funcs) {
    const FuncDesc &f = *compute.find(plan.func);
    switch (plan.rule) {
      case FuncRule::GpuTiledOutput:
        for (const AxisDesc &a : f.pure_axes) {
          // Tiles divide their axes (see the builder).
          add(f.name + ".thread." + a.name, ParamKind::ThreadTile, divisors_up_to(a.extent, max_threads));
          std::vector<int64_t> regs;
          for (int64_t r : {1, 2, 3, 4, 6, 8})
            if (r <= a.extent) regs.push_back(r);
          add(f.name + ".register." + a.name, ParamKind::RegisterTile, regs);
        }
        break;
      case FuncRule::GpuRegisterAnchor:
        for (const AxisDesc &r : reduction_axes(f))
          add(f.name + ".reduce." + r.name, ParamKind::ReductionSplit, divisors_up_to(r.extent, 64));
        add(f.name + ".unroll_reduce", ParamKind::Unroll, {0, 1});
        break;
      case FuncRule::GpuInjectiveOutput:
      case FuncRule::Root: {
        if (f.pure_axes.empty()) break;
        std::vector<int64_t> vectors{1};
        for (int64_t v : {2, 4})
          if (f.pure_axes[0].extent % v == 0) vectors.push_back(v);
        add(f.name + ".vector", ParamKind::VectorWidth, vectors);
        std::vector<int64_t> threads;
        for (int64_t t = target.warp_size; t <= max_threads; t *= 2) threads.push_back(t);
        add(f.name + ".threads", ParamKind::ThreadCount, threads);
        break;
      }
      default: break;
    }
  }
  return sketch;
}

// ---- choices ----

/// Draws (or, without a generator, picks the default of) every parameter of a sketch.
class GpuChooser {
 public:
  GpuChooser(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target, std::mt19937_64 *rng)
      : compute_(compute), sketch_(sketch), target_(target), rng_(rng) {}

  SketchChoices run() {
    if (sketch_.name == "gpu_warp_tile") return choose_warp_tile(compute_, sketch_, target_, rng_);
    for (const FuncPlan &plan : sketch_.funcs) {
      const FuncDesc &f = *compute_.find(plan.func);
      switch (plan.rule) {
        case FuncRule::GpuTiledOutput: tiled(f); break;
        case FuncRule::GpuRegisterAnchor: anchor(f); break;
        case FuncRule::GpuInjectiveOutput:
        case FuncRule::Root: injective(f); break;
        default: break;
      }
    }
    return choices_;
  }

 private:
  int64_t draw(const std::vector<int64_t> &values, int64_t fallback) {
    if (!rng_ || values.empty()) return fallback;
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(*rng_)];
  }
  std::vector<int64_t> values(const std::string &name) const {
    const SketchParam *p = sketch_.param(name);
    return p ? p->values : std::vector<int64_t>{};
  }

  void tiled(const FuncDesc &out) {
    const size_t n = out.pure_axes.size();
    std::vector<int64_t> threads(n, 1), regs(n, 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      // A thread budget per block, spread over the axes from the innermost (whose threads
      // then touch neighbouring elements), and a register tile within the budget.
      const int64_t budget = rng_ ? draw({32, 64, 128, 256, 512}, 256) : 256;
      int64_t left = budget;
      int64_t accumulators = 1;
      for (size_t a = 0; a < n; ++a) {
        const int64_t extent = out.pure_axes[a].extent;
        int64_t t = 1;
        if (std::count_if(threads.begin(), threads.begin() + a, [](int64_t x) { return x > 1; }) < 3) {
          // Tiles divide their axes (see the builder): thread counts are the divisors
          // within the budget; the default takes the largest up to 32 on the innermost
          // axis (neighbouring threads, neighbouring elements) and fills the rest outward.
          const std::vector<int64_t> options = divisors_up_to(extent, left);
          int64_t fallback = 1;
          for (int64_t d : options)
            if (a > 0 || d <= 32) fallback = d;
          t = draw(options, fallback);
        }
        threads[a] = t;
        left /= t;
        std::vector<int64_t> fits;
        for (int64_t r : values(out.name + ".register." + out.pure_axes[a].name))
          if (extent % (r * t) == 0 && accumulators * r <= target_.accumulator_budget()) fits.push_back(r);
        int64_t fallback = 1;
        const int64_t wanted = a == 0 ? 4 : a == 1 ? 2 : 1;
        for (int64_t r : fits)
          if (r <= wanted) fallback = r;
        regs[a] = draw(fits, fallback);
        accumulators *= regs[a];
      }
      const int64_t block_threads = product(threads);
      const int64_t threaded_axes = std::count_if(threads.begin(), threads.end(), [](int64_t t) { return t > 1; });
      if (block_threads <= target_.max_threads_for(static_cast<int>(accumulators)) && threaded_axes <= 3 &&
          block_threads >= std::min<int64_t>(target_.warp_size, most_threads(out)))
        break;
      if (!rng_) break;
    }
    for (size_t a = 0; a < n; ++a) {
      choices_[out.name + ".thread." + out.pure_axes[a].name] = threads[a];
      choices_[out.name + ".register." + out.pure_axes[a].name] = regs[a];
    }
  }

  /// Threads a block of `out` could have at most (a warp is not always possible).
  static int64_t most_threads(const FuncDesc &out) {
    int64_t n = 1;
    for (const AxisDesc &a : out.pure_axes) n *= a.extent;
    return n;
  }

  void anchor(const FuncDesc &f) {
    for (const AxisDesc &r : reduction_axes(f)) {
      const std::vector<int64_t> options = values(f.name + ".reduce." + r.name);
      int64_t fallback = 1;
      for (int64_t d : options)
        if (d <= 8) fallback = d;
      choices_[f.name + ".reduce." + r.name] = draw(options, fallback);
    }
    choices_[f.name + ".unroll_reduce"] = draw({0, 1}, 1);
  }

  void injective(const FuncDesc &f) {
    if (f.pure_axes.empty()) return;
    const std::vector<int64_t> vectors = values(f.name + ".vector");
    choices_[f.name + ".vector"] = draw(vectors, 1);
    std::vector<int64_t> threads = values(f.name + ".threads");
    choices_[f.name + ".threads"] = draw(threads, std::min<int64_t>(256, target_.max_threads_per_block));
  }

  const ComputeDesc &compute_;
  const Sketch &sketch_;
  GpuTargetDesc target_;
  std::mt19937_64 *rng_;
  SketchChoices choices_;
};

// ---- steps ----

class GpuScheduleWriter {
 public:
  GpuScheduleWriter(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                    const SketchChoices &choices)
      : compute_(compute), sketch_(sketch), target_(target), choices_(choices) {}

  Schedule build() {
    for (const FuncPlan &plan : sketch_.funcs) {
      const FuncDesc *f = compute_.find(plan.func);
      if (!f) reject("sketch names func '" + plan.func + "', which the compute does not have");
      switch (plan.rule) {
        case FuncRule::Inline: break;
        case FuncRule::GpuTiledOutput: tiled_output(*f, need(plan.partner)); break;
        case FuncRule::GpuRegisterAnchor: break;  // written with its output
        case FuncRule::GpuWarpTiledOutput: {
          Result<std::vector<ScheduleStep>> steps = write_warp_tile(compute_, *f, need(plan.partner), choices_);
          if (!steps) reject(steps.error().message);
          for (ScheduleStep &s : steps.value()) step(std::move(s));
          break;
        }
        case FuncRule::GpuWarpAnchor: break;  // written with its output
        case FuncRule::GpuInjectiveOutput: injective(*f, StageRef{f->name, -1}, f->pure_axes); break;
        case FuncRule::Root: root(*f); break;
        default: reject(std::string("rule ") + to_text(plan.rule) + " is not a GPU rule");
      }
    }
    return schedule_;
  }

 private:
  const FuncDesc &need(const std::string &name) const {
    const FuncDesc *f = compute_.find(name);
    if (!f) reject("sketch names func '" + name + "', which the compute does not have");
    return *f;
  }
  int64_t value(const std::string &name, int64_t fallback) const { return get(choices_, name, fallback); }
  void step(ScheduleStep s) { schedule_.steps.push_back(std::move(s)); }

  /// Fuses `loops` (innermost first, adjacent) into one; returns its name.
  std::string fuse_all(const StageRef &stage, const std::vector<std::string> &loops, LoopNames &names,
                       const std::string &base) {
    std::string fused = loops.front();
    for (size_t i = 1; i < loops.size(); ++i) {
      const std::string next = names.fresh(base);
      step(FuseStep{stage, fused, loops[i], next});
      fused = next;
    }
    return fused;
  }

  void tiled_output(const FuncDesc &out, const FuncDesc &anchor) {
    const StageRef stage{out.name, -1};
    LoopNames names(out.pure_axes);
    const size_t n = out.pure_axes.size();
    if (n == 0) reject(out.name + " has no axes to tile");
    std::vector<int64_t> threads(n), regs(n), tiles(n);
    bool any_block = false;
    int64_t accumulators = 1;
    for (size_t a = 0; a < n; ++a) {
      const AxisDesc &axis = out.pure_axes[a];
      threads[a] = value(out.name + ".thread." + axis.name, 1);
      regs[a] = value(out.name + ".register." + axis.name, 1);
      if (threads[a] < 1 || regs[a] < 1) reject(out.name + ": tiles must be positive");
      tiles[a] = threads[a] * regs[a];
      if (tiles[a] > axis.extent)
        reject(out.name + ".thread/register." + axis.name + ": a block tile of " + std::to_string(tiles[a]) +
               " exceeds the axis' " + std::to_string(axis.extent));
      // Halide 14 often cannot bound a per-thread register tile below a ragged block tile
      // (measured: "unable to infer constant upper bound on extent of realization"), so
      // tiles divide their axes, as Ansor's GPU tilings do.
      if (axis.extent % tiles[a] != 0)
        reject(out.name + ": the block tile " + std::to_string(tiles[a]) + " of axis " + axis.name +
               " must divide its extent " + std::to_string(axis.extent));
      if (tiles[a] < axis.extent || axis.extent == 1 || tiles[a] == 1) any_block = true;
      accumulators *= regs[a];
    }
    const int64_t block_threads = product(threads);
    if (block_threads > target_.max_threads_for(static_cast<int>(accumulators)))
      reject(out.name + ": " + std::to_string(block_threads) + " threads per block with " +
             std::to_string(accumulators) + " accumulators each exceed the register file");
    if (accumulators > target_.accumulator_budget())
      reject(out.name + ": a register tile of " + std::to_string(accumulators) + " accumulators exceeds the budget");

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
    if (thread_loops.empty()) reject(out.name + ": a block needs at least one thread loop");
    // Thread loops are bound one per GPU dimension, not fused: Halide 14 cannot bound a
    // register tile computed inside a fused thread loop once the blocks vary (measured:
    // "unable to infer constant upper bound on extent of realization").
    if (thread_loops.size() > 3)
      reject(out.name + ": " + std::to_string(thread_loops.size()) + " axes have threads; a GPU block has 3 dimensions");
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
        reject(anchor.name + ".reduce." + axis.name + "=" + std::to_string(factor) + " does not divide " +
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
      reject(f.name + ".vector=" + std::to_string(vector) + " does not divide " + std::to_string(axes[0].extent));
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
      if (pure.empty()) reject(f.name + ": a stage with no pure loop cannot spread over GPU threads");
      // Only the pure definition may vectorize: an update's vector would read its own lanes.
      SketchChoices saved = choices_;
      if (s > 0) choices_[f.name + ".vector"] = 1;
      injective(f, StageRef{f.name, f.stages[s].update}, pure);
      choices_ = saved;
    }
  }

  const ComputeDesc &compute_;
  const Sketch &sketch_;
  GpuTargetDesc target_;
  SketchChoices choices_;
  Schedule schedule_;
};

/// The schedule of these choices if it builds and passes check_gpu_schedule.
Result<Schedule> checked_gpu_schedule(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                                      const SketchChoices &choices) {
  Result<Schedule> schedule = build_gpu_sketch_schedule(compute, sketch, target, choices);
  if (!schedule) return schedule;
  Result<ScheduleTree> tree = check_gpu_schedule(compute, *schedule, target);
  if (!tree) return make_error("sketch " + sketch.name + ": " + tree.error().message);
  return schedule;
}

void walk_launch(const ScheduleTree &tree, int node, bool in_block, int64_t threads, int64_t blocks,
                 GpuLaunchShape &shape, int64_t &shared) {
  const ScheduleNode &n = tree.nodes[node];
  if (n.kind == ScheduleNodeKind::Loop) {
    if (n.loop_kind == LoopKind::GpuBlock) {
      if (!in_block) {
        ++shape.kernels;
        shared = 0;
      }
      in_block = true;
      blocks *= n.extent;
      shape.max_blocks = std::max(shape.max_blocks, blocks);
    } else if (n.loop_kind == LoopKind::GpuThread || n.loop_kind == LoopKind::GpuLane) {
      threads *= n.extent;
      shape.max_threads_per_block = std::max(shape.max_threads_per_block, threads);
    }
  } else if (n.kind == ScheduleNodeKind::Realize && in_block) {
    const bool in_thread = threads > 1;
    if (n.memory == MemoryKind::GpuShared || (!in_thread && n.memory != MemoryKind::Register)) {
      shared += n.bytes;
      shape.max_shared_bytes = std::max(shape.max_shared_bytes, shared);
    } else if (!in_thread) {
      // Registers at block level: Halide 14 stripes such a buffer over a warp's lanes (the
      // gpu_warp_tile anchor), so each lane holds a 32nd of it.
      shape.max_register_bytes = std::max(shape.max_register_bytes, n.bytes / kWarpTileLanes);
    } else {
      shape.max_register_bytes = std::max(shape.max_register_bytes, n.bytes);
    }
  }
  for (int child : n.children) walk_launch(tree, child, in_block, threads, blocks, shape, shared);
}

}  // namespace

std::vector<Sketch> generate_gpu_sketches(const ComputeDesc &compute, const GpuTargetDesc &target) {
  // The GPU sketches tile an anchor along its output's own axes: blocked anchors (a CPU
  // weight layout, sketch.h) are left to the default schedule.
  std::vector<std::pair<std::string, std::string>> anchors;
  for (const auto &pair : find_anchors(compute))
    if (link_axes(*compute.find(pair.first), *compute.find(pair.second))->front().kind == AxisLink::Kind::Same)
      anchors.push_back(pair);
  std::vector<Sketch> sketches{make_sketch(compute, anchors, target)};  // first: the default's
  if (anchors.size() == 1)
    if (std::optional<Sketch> warp = make_warp_tile_sketch(compute, anchors[0].first, anchors[0].second, target))
      sketches.push_back(std::move(*warp));
  return sketches;
}

SketchChoices sample_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                                 std::mt19937_64 &rng) {
  return GpuChooser(compute, sketch, target, &rng).run();
}

SketchChoices default_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target) {
  return GpuChooser(compute, sketch, target, nullptr).run();
}

Result<Schedule> build_gpu_sketch_schedule(const ComputeDesc &compute, const Sketch &sketch,
                                           const GpuTargetDesc &target, const SketchChoices &choices) {
  try {
    return GpuScheduleWriter(compute, sketch, target, choices).build();
  } catch (const ChoiceError &e) {
    return make_error("sketch " + sketch.name + ": " + e.message);
  }
}

GpuLaunchShape gpu_launch_shape(const ScheduleTree &tree) {
  GpuLaunchShape shape;
  int64_t shared = 0;
  walk_launch(tree, 0, false, 1, 1, shape, shared);
  return shape;
}

Result<ScheduleTree> check_gpu_schedule(const ComputeDesc &compute, const Schedule &schedule,
                                        const GpuTargetDesc &target) {
  Result<ScheduleTree> tree = validate_exact_cover(compute, schedule);
  if (!tree) return tree;
  // Splits of pure loops divide them (a mutation may have changed a factor): Halide 14
  // cannot bound per-thread register tiles under ragged tiles.
  const std::vector<std::optional<int64_t>> extents = split_extents(compute, schedule, tree.value());
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const auto *split = std::get_if<SplitStep>(&schedule.steps[i]);
    if (!split || split->tail != TailStrategy::ShiftInwards || !extents[i]) continue;
    if (*extents[i] % split->factor != 0)
      return make_error("line " + std::to_string(step_line_number(i)) + ": a tile of " + std::to_string(split->factor) +
                        " does not divide the loop's " + std::to_string(*extents[i]));
  }
  // Every output must run on the GPU: its pure definition has a block loop.
  for (const FuncDesc &f : compute.funcs) {
    if (!f.is_output || f.pure_axes.empty()) continue;
    bool bound = false;
    for (const ScheduleNode &n : tree->nodes)
      if (n.kind == ScheduleNodeKind::Loop && n.func == f.name && n.update < 0 && n.loop_kind == LoopKind::GpuBlock)
        bound = true;
    if (!bound) return make_error("output " + f.name + " has no loop bound to GPU blocks (it would run on the host)");
  }
  const GpuLaunchShape shape = gpu_launch_shape(*tree);
  if (shape.max_threads_per_block > target.max_threads_per_block)
    return make_error(std::to_string(shape.max_threads_per_block) + " threads per block exceed the device's " +
                      std::to_string(target.max_threads_per_block));
  if (shape.max_shared_bytes > target.shared_bytes_per_block)
    return make_error(std::to_string(shape.max_shared_bytes) + " bytes of shared memory per block exceed the " +
                      std::to_string(target.shared_bytes_per_block) + " a block may use");
  const int64_t register_words = shape.max_register_bytes / 4;
  if (register_words > target.accumulator_budget())
    return make_error("a thread keeps " + std::to_string(register_words) + " accumulators in registers, more than " +
                      std::to_string(target.accumulator_budget()));
  return tree;
}

Schedule sample_gpu_schedule(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                             std::mt19937_64 &rng, SamplerStats *stats) {
  return first_valid_draw(
      [&] { return checked_gpu_schedule(compute, sketch, target, sample_gpu_choices(compute, sketch, target, rng)); },
      [&] { return default_gpu_schedule(compute, target); }, stats);
}

std::vector<Schedule> sample_gpu_schedules(const ComputeDesc &compute, const GpuTargetDesc &target, int count,
                                           std::mt19937_64 &rng, SamplerStats *stats) {
  const std::vector<Sketch> sketches = generate_gpu_sketches(compute, target);
  std::vector<Schedule> schedules;
  for (int i = 0; i < count; ++i) {
    const Sketch &sketch = sketches[std::uniform_int_distribution<size_t>(0, sketches.size() - 1)(rng)];
    schedules.push_back(sample_gpu_schedule(compute, sketch, target, rng, stats));
  }
  return schedules;
}

std::vector<Schedule> default_gpu_sketch_schedules(const ComputeDesc &compute, const GpuTargetDesc &target) {
  std::vector<Schedule> schedules{default_gpu_schedule(compute, target)};
  const std::vector<Sketch> sketches = generate_gpu_sketches(compute, target);
  for (size_t i = 1; i < sketches.size(); ++i)
    if (Result<Schedule> s = checked_gpu_schedule(compute, sketches[i], target,
                                                  default_gpu_choices(compute, sketches[i], target)))
      schedules.push_back(s.value());
  return schedules;
}

Schedule default_gpu_schedule(const ComputeDesc &compute, const GpuTargetDesc &target) {
  for (const Sketch &sketch : generate_gpu_sketches(compute, target)) {
    Result<Schedule> schedule = checked_gpu_schedule(compute, sketch, target, default_gpu_choices(compute, sketch, target));
    if (schedule) return schedule.value();
    // The default tiles may not fit an odd shape: fall back to one thread per element.
    Sketch flat = sketch;
    for (FuncPlan &plan : flat.funcs) {
      if (plan.rule == FuncRule::GpuTiledOutput) plan.rule = FuncRule::GpuInjectiveOutput;
      if (plan.rule == FuncRule::GpuRegisterAnchor) plan = FuncPlan{plan.func, FuncRule::Root, ""};
    }
    schedule = checked_gpu_schedule(compute, flat, target, SketchChoices{});
    if (schedule) return schedule.value();
  }
  return Schedule{};
}

}  // namespace tessel
