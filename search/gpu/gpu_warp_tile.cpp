// The gpu_warp_tile sketch (gpu_warp_tile.h). Loop names: A_blk (block part), A_lane,
// A_reg (a lane's register tile), R_o/R_i (the staged reduction variable's stage and the
// elements within it); the fused block loop is "blocks".
#include "search/gpu/gpu_warp_tile.h"

#include <algorithm>
#include <numeric>

#include "search/gpu/single_anchor_plans.h"
#include "search/loop_names.h"
#include "search/sketch_writer.h"

namespace tessel {
namespace {

/// The first axis 32 lanes divide (the lanes then read and write neighbouring elements
/// when it is the innermost one); -1 when none.
int lane_axis(const FuncDesc &out) {
  for (size_t a = 0; a < out.pure_axes.size(); ++a)
    if (out.pure_axes[a].extent % kWarpTileLanes == 0) return static_cast<int>(a);
  return -1;
}

/// Up to two other axes with more than one element: their register tiles.
std::vector<int> register_axes(const FuncDesc &out, int lane) {
  std::vector<int> axes;
  for (size_t a = 0; a < out.pure_axes.size() && axes.size() < 2; ++a)
    if (static_cast<int>(a) != lane && out.pure_axes[a].extent > 1) axes.push_back(static_cast<int>(a));
  return axes;
}

/// Stage sizes for the outermost reduction variable: divisors in [2, 32] below its extent.
std::vector<int64_t> stage_sizes(int64_t extent) {
  std::vector<int64_t> sizes;
  for (int64_t d : divisors_up_to(extent, 32))
    if (d >= 2 && d < extent) sizes.push_back(d);
  return sizes;
}

std::string register_param(const FuncDesc &out, int axis) {
  return out.name + ".warp.register." + out.pure_axes[axis].name;
}

}  // namespace

std::optional<Sketch> make_warp_tile_sketch(const ComputeDesc &compute, const std::string &out_name,
                                            const std::string &anchor_name) {
  const FuncDesc *out = compute.find(out_name);
  const FuncDesc *anchor = compute.find(anchor_name);
  if (!out || !anchor || anchor->stages.size() != 2 || anchor->pure_axes.size() != out->pure_axes.size()) return std::nullopt;
  const int lane = lane_axis(*out);
  const std::vector<AxisDesc> r = update_reduction_axes(*anchor);
  if (lane < 0 || r.empty() || stage_sizes(r.back().extent).empty()) return std::nullopt;
  std::optional<std::vector<FuncPlan>> plans =
      single_anchor_plans(compute, out_name, anchor_name, FuncRule::GpuWarpTiledOutput, FuncRule::GpuWarpAnchor);
  if (!plans) return std::nullopt;
  Sketch sketch;
  sketch.name = "gpu_warp_tile";
  sketch.funcs = std::move(*plans);
  auto add = [&](std::string name, ParamKind kind, std::vector<int64_t> values) {
    sketch.params.push_back(SketchParam{std::move(name), kind, std::move(values)});
  };
  std::vector<int64_t> lane_tiles;
  for (int64_t t : {1, 2, 4})
    if (out->pure_axes[lane].extent % (kWarpTileLanes * t) == 0) lane_tiles.push_back(t);
  add(register_param(*out, lane), ParamKind::RegisterTile, lane_tiles);
  // Up to 32 along the first other axis: a 4 x 32 tile reads 160 operand words per 128 FMAs
  // from L2 and shared memory, against 144 per 64 for 2 x 16 (the warp's only reuse is its
  // own register tile; Nsight Compute found 2 x 16 bound by L1/shared-memory throughput).
  bool first_other = true;
  for (int a : register_axes(*out, lane)) {
    add(register_param(*out, a), ParamKind::RegisterTile, divisors_up_to(out->pure_axes[a].extent, first_other ? 32 : 16));
    first_other = false;
  }
  add(anchor_name + ".warp.reduce." + r.back().name, ParamKind::ReductionSplit, stage_sizes(r.back().extent));
  add(anchor_name + ".warp.vector", ParamKind::VectorWidth, {0, 1});
  // Not offered: several warps per block (ANCHOR.warp.warps, which write_warp_tile takes).
  // Halide 14 then keeps the block's accumulator tile in local memory indexed by the warp,
  // not in registers: measured on an H100, 4096^3 took 7.2 ms with 2 or 4 warps against
  // 5.6 ms with one (bench/results/gpu.md).
  add(anchor_name + ".warp.load_vector", ParamKind::VectorWidth, {1, 4});
  // Reduction steps unrolled within a stage (the writer takes the largest that divides KT).
  add(anchor_name + ".warp.unroll_k", ParamKind::Unroll, {1, 2, 4, 8});
  return sketch;
}

SketchChoices choose_warp_tile(const Sketch &sketch, const GpuTargetDesc &target, std::mt19937_64 *rng) {
  auto draw = [&](const std::vector<int64_t> &values, int64_t fallback) {
    if (!rng || values.empty()) return fallback;
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(*rng)];
  };
  // The largest value <= wanted (the default), or the smallest there is.
  auto largest_up_to = [](const std::vector<int64_t> &values, int64_t wanted) {
    int64_t best = values.empty() ? 1 : values.front();
    for (int64_t v : values)
      if (v <= wanted) best = v;
    return best;
  };
  SketchChoices choices;
  // One warp per block leaves each lane up to 255 registers (gpu_register_cap): tiles of up
  // to 128 accumulators assemble without spills.
  const int64_t budget = target.max_accumulators();
  for (int attempt = 0; attempt < 64; ++attempt) {
    choices.clear();
    int64_t accumulators = 1;
    int registers_seen = 0;
    for (const SketchParam &p : sketch.params) {
      int64_t v = 1;
      if (p.kind == ParamKind::RegisterTile) {
        // Defaults: 4 along the lane axis (its parameter comes first), 32 along the next, with
        // stages of 8: the fastest of 14 variants of matmul 4096^3 timed side by side on an
        // H200 once the driver's register cap was lifted (4.07 ms; 2 x 16, the best under the
        // cap, 5.65 ms; bench/results/gpu.md).
        v = draw(p.values, largest_up_to(p.values, registers_seen == 0 ? 4 : registers_seen == 1 ? 32 : 1));
        accumulators *= v;
        ++registers_seen;
      } else if (p.kind == ParamKind::ReductionSplit) {
        v = draw(p.values, largest_up_to(p.values, 8));
      } else if (p.kind == ParamKind::VectorWidth) {
        v = draw(p.values, p.values.empty() ? 1 : p.values.back());  // vectors on, float4 loads
      } else {
        v = draw(p.values, 1);
      }
      choices[p.name] = v;
    }
    if (accumulators <= budget || !rng) break;
  }
  return choices;
}

Result<std::vector<ScheduleStep>> write_warp_tile(const FuncDesc &out, const FuncDesc &anchor,
                                                  const SketchChoices &choices) {
  std::vector<ScheduleStep> steps;
  const int lane = lane_axis(out);
  const std::vector<AxisDesc> r = update_reduction_axes(anchor);
  if (lane < 0 || r.empty() || anchor.pure_axes.size() != out.pure_axes.size())
    return make_error(ErrorKind::Unsupported,
                      out.name + ": no axis that 32 lanes divide, or an anchor without a reduction");
  const size_t n = out.pure_axes.size();
  const std::vector<int> others = register_axes(out, lane);
  const int warp_axis = others.empty() || others.front() < lane ? -1 : others.front();
  const int64_t warps = warp_axis < 0 ? 1 : choice_or(choices, anchor.name + ".warp.warps", 1);
  const int64_t load_vector = choice_or(choices, anchor.name + ".warp.load_vector", 1);
  if (warps < 1 || warps > 32 || (load_vector != 1 && load_vector != 2 && load_vector != 4))
    return make_error(ErrorKind::InvalidInput,
                      anchor.name + ": " + std::to_string(warps) + " warps or a load vector of " +
                      std::to_string(load_vector) + " is out of range");
  // Elements of axis `a` one block covers: the lanes' or the warps' share times the register tile.
  auto block_tile = [&](int a, int64_t reg) {
    return reg * (a == lane ? kWarpTileLanes : a == warp_axis ? warps : 1);
  };
  std::vector<int64_t> regs(n, 1);
  int64_t accumulators = 1;
  for (size_t a = 0; a < n; ++a) {
    regs[a] = choice_or(choices, register_param(out, static_cast<int>(a)), 1);
    const int64_t tile = block_tile(static_cast<int>(a), regs[a]);
    if (regs[a] < 1 || out.pure_axes[a].extent % tile != 0)
      return make_error(ErrorKind::InvalidInput,
                        register_param(out, static_cast<int>(a)) + "=" + std::to_string(regs[a]) +
                        ": the block tile must divide the axis' " + std::to_string(out.pure_axes[a].extent));
    accumulators *= regs[a];
  }
  // What check_gpu_schedule lets through, said here in the sketch's own terms.
  const int64_t most = GpuTargetDesc{}.max_accumulators();
  if (accumulators * warps > most)
    return make_error(ErrorKind::InvalidInput, out.name + ": " + std::to_string(accumulators * warps) +
                                               " accumulators per lane (all warps') exceed " + std::to_string(most));
  const AxisDesc &staged = r.back();
  const int64_t kt = choice_or(choices, anchor.name + ".warp.reduce." + staged.name, 16);
  if (kt < 2 || kt >= staged.extent || staged.extent % kt != 0)
    return make_error(ErrorKind::InvalidInput,
                      anchor.name + ".warp.reduce." + staged.name + "=" + std::to_string(kt) +
                      ": a stage must divide the reduction's " + std::to_string(staged.extent) + " and be smaller");
  const bool vector = choice_or(choices, anchor.name + ".warp.vector", 0) == 1 && regs[lane] > 1;
  const int64_t unroll_wanted = choice_or(choices, anchor.name + ".warp.unroll_k", 1);
  if (unroll_wanted < 1 || unroll_wanted > kt)
    return make_error(ErrorKind::InvalidInput, anchor.name + ".warp.unroll_k=" + std::to_string(unroll_wanted) +
                                               ": out of [1, the stage's " + std::to_string(kt) + "]");
  const int64_t unroll_k = std::gcd(unroll_wanted, kt);

  // The output: blocks of (32 x register tile) along the lane axis, (warps x register tile)
  // along the warp axis, register tiles along the others; the block loops fused, the lane
  // loop bound to gpu_lanes, the warp loop to the next thread dimension.
  const StageRef o{out.name, -1};
  LoopNames names(out.pure_axes);
  std::vector<std::string> block_loops, register_loops;
  std::string lane_loop, warp_loop;
  for (size_t a = 0; a < n; ++a) {
    const AxisDesc &axis = out.pure_axes[a];
    const int64_t tile = block_tile(static_cast<int>(a), regs[a]);
    std::string inner = axis.name;
    if (tile == 1) {
      block_loops.push_back(axis.name);
      continue;
    }
    if (tile < axis.extent) {
      const std::string blk = names.fresh(axis.name + "_blk");
      inner = names.fresh(axis.name + "_in");
      steps.push_back(SplitStep{o, axis.name, blk, inner, tile, TailStrategy::ShiftInwards});
      block_loops.push_back(blk);
    }
    if (static_cast<int>(a) == warp_axis && warps > 1) {
      warp_loop = names.fresh(axis.name + "_warp");
      const std::string reg = names.fresh(axis.name + "_reg");
      steps.push_back(SplitStep{o, inner, warp_loop, reg, regs[a], TailStrategy::ShiftInwards});
      inner = reg;
    }
    if (static_cast<int>(a) != lane) {
      register_loops.push_back(inner);
      continue;
    }
    if (regs[a] > 1) {
      lane_loop = names.fresh(axis.name + "_lane");
      const std::string reg = names.fresh(axis.name + "_reg");
      steps.push_back(SplitStep{o, inner, lane_loop, reg, regs[a], TailStrategy::ShiftInwards});
      register_loops.insert(register_loops.begin(), reg);
    } else {
      lane_loop = inner;
    }
  }
  if (block_loops.empty())
    return make_error(ErrorKind::InvalidInput,
                      out.name + ": the register tiles cover the whole output; no block loop is left");
  std::vector<std::string> order = register_loops;
  order.push_back(lane_loop);
  if (!warp_loop.empty()) order.push_back(warp_loop);
  order.insert(order.end(), block_loops.begin(), block_loops.end());
  steps.push_back(ReorderStep{o, order});
  std::string blocks = block_loops.front();
  for (size_t i = 1; i < block_loops.size(); ++i) {
    const std::string fused = names.fresh("blocks");
    steps.push_back(FuseStep{o, blocks, block_loops[i], fused});
    blocks = fused;
  }
  steps.push_back(BindStep{o, blocks, GpuAxis::Block, 0});
  steps.push_back(BindStep{o, lane_loop, GpuAxis::Lane, 0});
  if (!warp_loop.empty()) steps.push_back(BindStep{o, warp_loop, GpuAxis::Thread, 1});
  for (size_t i = 0; i < register_loops.size(); ++i) {
    if (i == 0 && regs[lane] > 1 && vector) steps.push_back(VectorizeStep{o, register_loops[i], std::nullopt});
    else steps.push_back(UnrollStep{o, register_loops[i], std::nullopt});
  }

  // The anchor: once per block, in registers striped over the lanes.
  steps.push_back(ComputeAtStep{anchor.name, o, blocks});
  steps.push_back(StoreInStep{anchor.name, MemoryKind::Register});
  // Its pure definition, then its update: the same lane split; the update's staged
  // reduction variable outside the lanes, the rest of the reduction inside them.
  for (int update = -1; update <= 0; ++update) {
    const StageRef stage{anchor.name, update};
    const std::vector<AxisDesc> &axes = update < 0 ? anchor.pure_axes : anchor.stages[1].axes;
    LoopNames stage_names(axes);
    const std::string lane_name = anchor.pure_axes[lane].name;
    std::string lane_var = lane_name, reg_var;
    if (regs[lane] > 1) {
      lane_var = stage_names.fresh(lane_name + "_lane");
      reg_var = stage_names.fresh(lane_name + "_reg");
      // The block's region is whole lane tiles; an update may not shift its tail inwards.
      steps.push_back(SplitStep{stage, lane_name, lane_var, reg_var, regs[lane],
                                update < 0 ? TailStrategy::ShiftInwards : TailStrategy::RoundUp});
    }
    std::vector<std::string> inner;  // register loops, then the reduction inside the lanes
    if (!reg_var.empty()) inner.push_back(reg_var);
    std::vector<std::string> unrolled;
    std::string warp_var;
    for (size_t a = 0; a < n; ++a)
      if (static_cast<int>(a) != lane) {
        std::string name = anchor.pure_axes[a].name;
        if (static_cast<int>(a) == warp_axis && warps > 1) {
          warp_var = stage_names.fresh(name + "_warp");
          const std::string reg = stage_names.fresh(name + "_reg");
          steps.push_back(SplitStep{stage, name, warp_var, reg, regs[a],
                                    update < 0 ? TailStrategy::ShiftInwards : TailStrategy::RoundUp});
          name = reg;
        }
        inner.push_back(name);
        if (regs[a] > 1) unrolled.push_back(name);
      }
    std::string stage_loop, within;
    if (update == 0) {
      for (size_t i = 0; i + 1 < r.size(); ++i) inner.push_back(r[i].name);
      stage_loop = stage_names.fresh(staged.name + "_o");
      within = stage_names.fresh(staged.name + "_i");
      steps.push_back(SplitStep{stage, staged.name, stage_loop, within, kt, TailStrategy::Auto});
      inner.push_back(within);
    }
    std::vector<std::string> stage_order = inner;
    stage_order.push_back(lane_var);
    if (!warp_var.empty()) stage_order.push_back(warp_var);
    if (!stage_loop.empty()) stage_order.push_back(stage_loop);
    steps.push_back(ReorderStep{stage, stage_order});
    steps.push_back(BindStep{stage, lane_var, GpuAxis::Lane, 0});
    if (!warp_var.empty()) steps.push_back(BindStep{stage, warp_var, GpuAxis::Thread, 1});
    if (!reg_var.empty()) {
      if (vector) steps.push_back(VectorizeStep{stage, reg_var, std::nullopt});
      else steps.push_back(UnrollStep{stage, reg_var, std::nullopt});
    }
    for (const std::string &u : unrolled) steps.push_back(UnrollStep{stage, u, std::nullopt});
    if (update == 0) {
      // Unrolled reduction steps within a stage let the next steps' shared loads issue
      // while this step's FMAs run.
      if (unroll_k > 1)
        steps.push_back(UnrollStep{stage, within, unroll_k == kt ? std::nullopt : std::optional<int64_t>(unroll_k)});
      steps.push_back(CacheInputsStep{stage, stage_loop, warps, load_vector});
    }
  }
  return steps;
}

}  // namespace tessel
