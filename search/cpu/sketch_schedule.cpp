// The steps a sketch implies for given parameter values (sketch_schedule.h). Loop names
// follow the axis they came from: x_o/x_i for an output's outer and tile loops, x_m/x_r for
// an anchor's tile remainder and register tile, x_p/x_q for the two levels of that
// remainder in S R S R S, k_o/k_i for a reduction var's outer and inner parts.
#include "search/cpu/sketch_schedule.h"

#include "search/loop_names.h"
#include "search/sketch_writer.h"

#include <algorithm>
#include <set>

namespace tessel {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const std::vector<AxisDesc> &stage_axes(const FuncDesc &f, size_t s) {
  return f.stages.empty() || f.stages[s].axes.empty() ? f.pure_axes : f.stages[s].axes;
}

/// A tiled output's structural steps (splits, reorder, fusion, parallel) and where its
/// loops end up.
struct OutputLoops {
  TiledOutputLayout layout;
  std::vector<ScheduleStep> steps;
  std::string vector_loop;             ///< axis 0's tile loop; empty when axis 0 has none
  std::vector<int64_t> inner_extents;  ///< per inner loop
};

OutputLoops lay_out(const FuncDesc &out, const std::string &anchor, const SketchChoices &choices) {
  OutputLoops result;
  TiledOutputLayout &layout = result.layout;
  const StageRef stage{out.name, -1};
  LoopNames names(out.pure_axes);
  const size_t n = out.pure_axes.size();
  std::vector<int64_t> tile(n);
  std::vector<std::string> inner_of(n), outer_of(n);
  std::vector<int64_t> outer_extent(n, 1);
  std::vector<std::string> current;  // loop list, innermost first
  for (size_t a = 0; a < n; ++a) {
    const AxisDesc &axis = out.pure_axes[a];
    tile[a] = std::clamp<int64_t>(choice_or(choices, out.name + ".tile." + axis.name, axis.extent), 1, axis.extent);
    if (axis.extent == 1 || tile[a] == 1) {
      outer_of[a] = axis.name;
      outer_extent[a] = axis.extent;
      current.push_back(axis.name);
    } else if (tile[a] == axis.extent) {
      inner_of[a] = axis.name;
      current.push_back(axis.name);
    } else {
      outer_of[a] = names.fresh(axis.name + "_o");
      inner_of[a] = names.fresh(axis.name + "_i");
      outer_extent[a] = ceil_div(axis.extent, tile[a]);
      result.steps.push_back(
          SplitStep{stage, axis.name, outer_of[a], inner_of[a], tile[a], TailStrategy::ShiftInwards});
      current.push_back(inner_of[a]);
      current.push_back(outer_of[a]);
    }
  }

  std::vector<size_t> outer_axes;  // axis index per outer loop, innermost first
  for (size_t a = 0; a < n; ++a) {
    if (!inner_of[a].empty()) {
      layout.inner_loops.push_back(inner_of[a]);
      result.inner_extents.push_back(tile[a]);
    }
    if (!outer_of[a].empty()) outer_axes.push_back(a);
  }
  if (n > 0) result.vector_loop = inner_of[0];
  if (choice_or(choices, out.name + ".order", 0) == 1 && !outer_axes.empty() && outer_axes.front() == 0)
    std::rotate(outer_axes.begin(), outer_axes.begin() + 1, outer_axes.end());
  std::vector<std::string> order = layout.inner_loops;
  for (size_t a : outer_axes) order.push_back(outer_of[a]);
  if (order != current) result.steps.push_back(ReorderStep{stage, order});

  // Fuse the outermost loops into one parallel loop.
  const int fused_count =
      static_cast<int>(std::clamp<int64_t>(choice_or(choices, out.name + ".parallel", 0), 0, outer_axes.size()));
  std::vector<std::vector<size_t>> covers;  // axes per final outer loop, innermost first
  const size_t kept = outer_axes.size() - static_cast<size_t>(fused_count);
  for (size_t i = 0; i < kept; ++i) {
    layout.outer_loops.push_back(outer_of[outer_axes[i]]);
    covers.push_back({outer_axes[i]});
  }
  if (fused_count > 0) {
    std::string fused = outer_of[outer_axes.back()];
    std::vector<size_t> fused_axes{outer_axes.back()};
    int64_t extent = outer_extent[outer_axes.back()];
    for (size_t i = outer_axes.size() - 1; i-- > kept;) {
      const std::string inner = outer_of[outer_axes[i]];
      const std::string name = names.fresh(inner + "_" + fused);
      result.steps.push_back(FuseStep{stage, inner, fused, name});
      fused = name;
      fused_axes.push_back(outer_axes[i]);
      extent *= outer_extent[outer_axes[i]];
    }
    result.steps.push_back(ParallelStep{stage, fused, std::nullopt});
    layout.outer_loops.push_back(fused);
    covers.push_back(fused_axes);
    layout.parallel_loop = fused;
    layout.parallel_extent = extent;
  }

  // The anchor: at the chosen outer loop; it computes a tile of the axes walked there or
  // further out, and the whole of the others.
  layout.anchor_region.resize(n);
  for (size_t a = 0; a < n; ++a) layout.anchor_region[a] = out.pure_axes[a].extent;
  if (!anchor.empty() && !layout.outer_loops.empty()) {
    const size_t level = static_cast<size_t>(std::clamp<int64_t>(
        choice_or(choices, anchor + ".compute_level", 0), 0, static_cast<int64_t>(layout.outer_loops.size()) - 1));
    layout.compute_at = layout.outer_loops[level];
    for (size_t i = level; i < covers.size(); ++i)
      for (size_t a : covers[i]) layout.anchor_region[a] = inner_of[a].empty() ? 1 : tile[a];
  }
  return result;
}

/// The CPU rules' steps.
class Builder : public SketchWriter {
 public:
  Builder(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target, const SketchChoices &choices)
      : SketchWriter(compute, sketch, choices), target_(target) {}

 private:
  void write_rule(const FuncPlan &plan, const FuncDesc &f) override {
    switch (plan.rule) {
      case FuncRule::Inline: break;
      case FuncRule::InjectiveOutput: injective_output(f); break;
      case FuncRule::TiledOutput: tiled_output(f, need(plan.partner)); break;
      case FuncRule::TiledAnchor: break;  // written with its output
      case FuncRule::TiledAnchorMultiLevel: break;
      case FuncRule::Root: root(f); break;
      case FuncRule::RootRfactor: root_rfactor(f); break;
      default: reject_choice(std::string("rule ") + to_text(plan.rule) + " belongs to the GPU sketches (gpu_sketch.h)");
    }
  }
  int64_t get(const std::string &name, int64_t fallback) const { return value(name, fallback); }
  void add(ScheduleStep s) { step(std::move(s)); }

  void tiled_output(const FuncDesc &out, const FuncDesc &anchor) {
    const FuncPlan *anchor_plan = sketch_.plan(anchor.name);
    const bool multi_level = anchor_plan && anchor_plan->rule == FuncRule::TiledAnchorMultiLevel;
    OutputLoops loops = lay_out(out, anchor.name, choices_);
    for (ScheduleStep &s : loops.steps) add(std::move(s));
    const StageRef stage{out.name, -1};
    const int64_t width = get(out.name + ".vector", 1);
    int64_t vector_outer_extent = 0;
    if (width > 1 && !loops.vector_loop.empty()) {
      const int64_t extent = loops.inner_extents.front();
      if (width > extent)
        reject_choice(out.name + ".vector = " + std::to_string(width) + " is wider than its tile (" + std::to_string(extent) + ")");
      add(VectorizeStep{stage, loops.vector_loop, width});
      vector_outer_extent = ceil_div(extent, width);
    }
    if (get(out.name + ".unroll", 0) == 1) {
      // The loop just outside the vectors, else the next tile loop, when short.
      if (vector_outer_extent > 1 && vector_outer_extent <= 8)
        add(UnrollStep{stage, loops.vector_loop, std::nullopt});
      else if (loops.layout.inner_loops.size() >= 2 && loops.inner_extents[1] <= 8 && loops.inner_extents[1] > 1)
        add(UnrollStep{stage, loops.layout.inner_loops[1], std::nullopt});
    }
    if (!loops.layout.compute_at.empty()) add(ComputeAtStep{anchor.name, stage, loops.layout.compute_at});
    if (const FuncDesc *source = placeable_source_of(compute_, anchor.name)) {
      // Inside the parallel loop (which encloses the anchor's level), or with the anchor.
      const int64_t at = get(source->name + ".at", 0);
      const std::string &loop = at == 1 ? loops.layout.parallel_loop : at == 2 ? loops.layout.compute_at : std::string();
      if (!loop.empty()) add(ComputeAtStep{source->name, stage, loop});
    }
    const std::optional<std::vector<int64_t>> region = anchor_region(out, anchor, loops.layout.anchor_region);
    if (!region) reject_choice(anchor.name + "'s region is not whole blocks of its blocked axis");
    tiled_anchor(anchor, *region, multi_level);
  }

  void tiled_anchor(const FuncDesc &anchor, const std::vector<int64_t> &region, bool multi_level) {
    const std::string &A = anchor.name;
    const size_t n = anchor.pure_axes.size();
    const int64_t width = get(A + ".vector", 1);
    if (width < 1 || region[0] % width != 0)
      reject_choice(A + ".vector = " + std::to_string(width) + " does not divide the anchor's region along " +
             anchor.pure_axes[0].name + " (" + std::to_string(region[0]) + ")");

    // Init: vectors along the innermost axis.
    const StageRef init{A, -1};
    if (width > 1) {
      add(VectorizeStep{init, anchor.pure_axes[0].name, width});
      const int64_t vectors = region[0] / width;
      if (vectors > 1 && vectors <= 8) add(UnrollStep{init, anchor.pure_axes[0].name, std::nullopt});
    }

    const StageRef update{A, 0};
    LoopNames names(anchor.stages[1].axes);
    std::string vector_loop, vector_count_loop;  // axis 0's vectorized loop and its vector count
    std::vector<std::string> registers, mid_inner, mid_outer, trivial, red_inner, red_outer;
    std::vector<std::pair<std::string, int64_t>> unrolls;
    std::vector<int64_t> red_inner_extents;
    std::vector<ScheduleStep> splits, annotations;
    for (size_t a = 0; a < n; ++a) {
      const std::string &axis = anchor.pure_axes[a].name;
      const int64_t R = region[a];
      const int64_t r = get(A + ".register." + axis, 1);
      if (r < 1 || R % r != 0)
        reject_choice(A + ".register." + axis + " = " + std::to_string(r) + " does not divide the anchor's region (" +
               std::to_string(R) + ")");
      if (a == 0 && r % width != 0)
        reject_choice(A + ".register." + axis + " = " + std::to_string(r) + " is not a multiple of " + A + ".vector (" +
               std::to_string(width) + ")");
      if (R == 1) {
        trivial.push_back(axis);
        continue;
      }
      std::string reg, mid;
      if (r == R) {
        reg = axis;
      } else if (r == 1) {
        mid = axis;
      } else {
        mid = names.fresh(axis + "_m");
        reg = names.fresh(axis + "_r");
        splits.push_back(SplitStep{update, axis, mid, reg, r, TailStrategy::RoundUp});
      }
      if (!mid.empty()) {
        const int64_t m = R / r;
        const int64_t q = multi_level ? get(A + ".inner." + axis, m) : m;
        if (q < 1 || m % q != 0)
          reject_choice(A + ".inner." + axis + " = " + std::to_string(q) + " does not divide the tile remainder (" +
                 std::to_string(m) + ")");
        if (q == m) {
          mid_inner.push_back(mid);
        } else if (q == 1) {
          mid_outer.push_back(mid);
        } else {
          const std::string p = names.fresh(axis + "_p"), qn = names.fresh(axis + "_q");
          splits.push_back(SplitStep{update, mid, p, qn, q, TailStrategy::RoundUp});
          mid_outer.push_back(p);
          mid_inner.push_back(qn);
        }
      }
      if (reg.empty()) continue;
      if (a == 0 && width > 1) {
        if (r == width) {
          vector_loop = reg;
          annotations.push_back(VectorizeStep{update, reg, std::nullopt});
        } else {
          vector_loop = vectorized_inner_name(reg);
          names.use(vector_loop);
          vector_count_loop = reg;
          // A split with the vectorize: it must come before the reorder that lists its loops.
          splits.push_back(VectorizeStep{update, reg, width});
          unrolls.emplace_back(reg, r / width);
        }
      } else {
        registers.push_back(reg);
        unrolls.emplace_back(reg, r);
      }
    }
    for (const AxisDesc &k : anchor.stages[1].axes) {
      if (!k.reduction) continue;
      const int64_t f = get(A + ".reduce." + k.name, k.extent);
      if (f < 1 || k.extent % f != 0)
        reject_choice(A + ".reduce." + k.name + " = " + std::to_string(f) + " does not divide " + std::to_string(k.extent));
      if (f == k.extent) {
        red_inner.push_back(k.name);
        red_inner_extents.push_back(f);
      } else if (f == 1) {
        red_outer.push_back(k.name);
      } else {
        const std::string o = names.fresh(k.name + "_o"), i = names.fresh(k.name + "_i");
        splits.push_back(SplitStep{update, k.name, o, i, f, TailStrategy::Auto});
        red_outer.push_back(o);
        red_inner.push_back(i);
        red_inner_extents.push_back(f);
      }
    }
    // Short taps (a 3x3 kernel's kx) unroll well.
    if (get(A + ".unroll_reduce", 0) == 1 && !red_inner.empty() && red_inner_extents.front() <= 16)
      unrolls.emplace_back(red_inner.front(), red_inner_extents.front());

    // Innermost first: register tile, inner reduction, tile remainder, outer reduction,
    // (S R S R S: the remainder's outer level), loops of extent 1.
    std::vector<std::string> order;
    for (const std::string &l : {vector_loop, vector_count_loop})
      if (!l.empty()) order.push_back(l);
    for (const auto *group : {&registers, &red_inner, &mid_inner, &red_outer, &mid_outer, &trivial})
      order.insert(order.end(), group->begin(), group->end());
    for (ScheduleStep &s : splits) add(std::move(s));
    add(ReorderStep{update, order});
    for (ScheduleStep &s : annotations) add(std::move(s));
    for (const auto &[loop, extent] : unrolls)
      if (extent > 1) add(UnrollStep{update, loop, std::nullopt});
  }

  void injective_output(const FuncDesc &out) {
    if (out.pure_axes.empty()) return;
    const StageRef stage{out.name, -1};
    const std::string &x = out.pure_axes[0].name;
    const int64_t extent = out.pure_axes[0].extent;
    const int64_t width = get(out.name + ".vector", 1);
    int64_t outer = extent;
    if (width > 1) {
      if (width > extent)
        reject_choice(out.name + ".vector = " + std::to_string(width) + " is wider than axis " + x + " (" +
               std::to_string(extent) + ")");
      add(VectorizeStep{stage, x, width});
      outer = ceil_div(extent, width);
    }
    const int64_t unroll = get(out.name + ".unroll", 1);
    if (unroll > 1) {
      if (unroll > outer)
        reject_choice(out.name + ".unroll = " + std::to_string(unroll) + " exceeds the loop's extent (" +
               std::to_string(outer) + ")");
      add(UnrollStep{stage, x, unroll});
      outer = ceil_div(outer, unroll);
    }
    const size_t n = out.pure_axes.size();
    if (n == 1) {
      const int64_t task = get(out.name + ".task", 0);
      if (task > outer)
        reject_choice(out.name + ".task = " + std::to_string(task) + " exceeds the loop's extent (" + std::to_string(outer) + ")");
      if (task >= 1) add(ParallelStep{stage, x, task});
      return;
    }
    const int64_t fused_count = std::clamp<int64_t>(get(out.name + ".parallel", 0), 0, static_cast<int64_t>(n) - 1);
    if (fused_count == 0) return;
    LoopNames names(out.pure_axes);
    std::string fused = out.pure_axes[n - 1].name;
    for (size_t i = n - 1; i-- > n - static_cast<size_t>(fused_count);) {
      const std::string name = names.fresh(out.pure_axes[i].name + "_" + fused);
      add(FuseStep{stage, out.pure_axes[i].name, fused, name});
      fused = name;
    }
    add(ParallelStep{stage, fused, std::nullopt});
  }

  void root(const FuncDesc &f) {
    add(ComputeRootStep{f.name});
    if (f.pure_axes.empty()) return;
    const int64_t width = get(f.name + ".vector", 1);
    const size_t stages = std::max<size_t>(1, f.stages.size());
    for (size_t s = 0; s < stages; ++s) {
      const int update = static_cast<int>(s) - 1;
      const StageRef stage{f.name, update};
      std::vector<AxisDesc> pure, all = stage_axes(f, s);
      for (const AxisDesc &a : all)
        if (!a.reduction) pure.push_back(a);
      if (pure.empty()) continue;
      LoopNames names(all);
      // Updates round a vector split up: only widths that divide stay inside the region.
      const bool vectorize = width > 1 && (update < 0 ? pure[0].extent >= width : pure[0].extent % width == 0);
      if (vectorize) {
        add(VectorizeStep{stage, pure[0].name, width});
        if (update >= 0 && all.front().reduction) {
          // The vector loop innermost, inside the reduction.
          std::vector<std::string> order{vectorized_inner_name(pure[0].name)};
          for (const AxisDesc &a : all) order.push_back(a.name);
          add(ReorderStep{stage, order});
        }
      }
      if (pure.size() >= 2 && pure.back().extent >= 2) add(ParallelStep{stage, pure.back().name, std::nullopt});
    }
  }

  void root_rfactor(const FuncDesc &f) {
    const RfactorAxes axes = rfactor_axes(f);
    const StageRef update{f.name, 0};
    LoopNames names(f.stages[1].axes);
    for (const AxisDesc &a : f.pure_axes) names.use(a.name);
    // The stage's loops, innermost first, as the splits change them.
    std::vector<std::string> loops;
    for (const AxisDesc &a : f.stages[1].axes) loops.push_back(a.name);
    auto split = [&](const std::string &var, const std::string &outer, const std::string &inner, int64_t factor) {
      add(SplitStep{update, var, outer, inner, factor, TailStrategy::Auto});
      auto it = std::find(loops.begin(), loops.end(), var);
      *it = inner;
      loops.insert(it + 1, outer);
    };

    const int64_t chunks = get(f.name + ".rfactor.chunks", 0);
    if (chunks < 1 || axes.chunked.extent % chunks != 0)
      reject_choice(f.name + ".rfactor.chunks = " + std::to_string(chunks) + " does not divide " + axes.chunked.name + " (" +
             std::to_string(axes.chunked.extent) + ")");
    const int64_t chunk_size = axes.chunked.extent / chunks;
    std::string chunk_rvar = axes.chunked.name, rest = axes.chunked.name;
    if (chunk_size > 1) {
      chunk_rvar = names.fresh(axes.chunked.name + "_o");
      rest = names.fresh(axes.chunked.name + "_i");
      split(axes.chunked.name, chunk_rvar, rest, chunk_size);
    }
    const int64_t lanes = get(f.name + ".rfactor.lanes", 1);
    const bool same = axes.laned.name == axes.chunked.name;
    const std::string lane_source = same ? rest : axes.laned.name;
    const int64_t lane_extent = same ? chunk_size : axes.laned.extent;
    std::string lane_rvar;
    if (lanes > 1) {
      if (lane_extent % lanes != 0 || (same && chunk_size == 1))
        reject_choice(f.name + ".rfactor.lanes = " + std::to_string(lanes) + " does not divide the lane var's extent (" +
               std::to_string(lane_extent) + ")");
      lane_rvar = lane_source;
      if (lanes < lane_extent) {
        const std::string base = same ? axes.chunked.name : axes.laned.name;
        lane_rvar = names.fresh(base + "_l");
        split(lane_source, names.fresh(base + "_m"), lane_rvar, lanes);
      }
    }

    std::set<std::string> func_names;
    for (const FuncDesc &g : compute_.funcs) func_names.insert(g.name);
    std::string rf = f.name + "_rf";
    for (int i = 2; func_names.count(rf); ++i) rf = f.name + "_rf" + std::to_string(i);
    const std::string chunk_var = names.fresh("chunk");
    RfactorStep step{update, rf, {{chunk_rvar, chunk_var}}};
    std::string lane_var;
    if (!lane_rvar.empty()) {
      lane_var = names.fresh("lane");
      step.rvar_to_var.emplace_back(lane_rvar, lane_var);
    }
    add(step);

    // The intermediate's update: lanes innermost, chunks outermost and parallel.
    const StageRef rf_update{rf, 0};
    std::vector<std::string> order;
    if (!lane_var.empty()) order.push_back(lane_var);
    for (const std::string &l : loops)
      if (l != chunk_rvar && l != lane_rvar) order.push_back(l);
    order.push_back(chunk_var);
    add(ReorderStep{rf_update, order});
    if (!lane_var.empty()) add(VectorizeStep{rf_update, lane_var, std::nullopt});
    add(ParallelStep{rf_update, chunk_var, std::nullopt});
    add(ComputeRootStep{rf});
    add(ComputeRootStep{f.name});
    // The fold of the partial results is small: vectors over the pure init only.
    if (!f.pure_axes.empty()) {
      const int64_t width = vector_width_candidates(f.pure_axes[0].extent, f.bytes_per_element, target_).front();
      if (width > 1) add(VectorizeStep{StageRef{f.name, -1}, f.pure_axes[0].name, width});
    }
  }

  CpuTargetDesc target_;
};

}  // namespace

TiledOutputLayout layout_tiled_output(const FuncDesc &output, const std::string &anchor, const SketchChoices &choices) {
  return lay_out(output, anchor, choices).layout;
}

int count_outer_loops(const FuncDesc &output, const SketchChoices &choices) {
  int count = 0;
  for (const AxisDesc &axis : output.pure_axes) {
    const int64_t tile = std::clamp<int64_t>(choice_or(choices, output.name + ".tile." + axis.name, axis.extent), 1,
                                             axis.extent);
    if (axis.extent == 1 || tile < axis.extent) ++count;
  }
  return count;
}

Result<Schedule> build_sketch_schedule(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                                       const SketchChoices &choices) {
  return Builder(compute, sketch, target, choices).write();
}

std::string to_text(const SketchChoices &choices) {
  std::string text;
  for (const auto &[name, value] : choices) text += name + "=" + std::to_string(value) + "\n";
  return text;
}

}  // namespace tessel
