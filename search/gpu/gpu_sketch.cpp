// GPU sketch rules and the checks every GPU schedule passes (gpu_sketch.h); the sampler is
// gpu_sampler.cpp, the steps gpu_sketch_schedule.cpp.
#include "search/gpu/gpu_sketch.h"

#include <algorithm>

#include "search/exact_cover.h"
#include "search/gpu/gpu_split_k.h"
#include "search/gpu/gpu_warp_tile.h"

namespace tessel {
namespace {

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
        for (const AxisDesc &r : update_reduction_axes(f))
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
  if (anchors.size() == 1) {
    if (std::optional<Sketch> warp = make_warp_tile_sketch(compute, anchors[0].first, anchors[0].second))
      sketches.push_back(std::move(*warp));
    if (std::optional<Sketch> split = make_split_k_sketch(compute, anchors[0].first, anchors[0].second))
      sketches.push_back(std::move(*split));
  }
  return sketches;
}

GpuLaunchShape gpu_launch_shape(const ScheduleTree &tree) {
  GpuLaunchShape shape;
  int64_t shared = 0;
  walk_launch(tree, 0, false, 1, 1, shape, shared);
  return shape;
}

int gpu_register_cap(const GpuLaunchShape &shape, const GpuTargetDesc &target) {
  const int64_t threads = std::max<int64_t>(target.warp_size, shape.max_threads_per_block);
  const int64_t fit = target.registers_per_block / threads / 8 * 8;
  return static_cast<int>(std::clamp<int64_t>(fit, 16, target.max_registers_per_thread));
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
      return make_error(ErrorKind::InvalidInput,
                        "line " + std::to_string(step_line_number(i)) + ": a tile of " + std::to_string(split->factor) +
                        " does not divide the loop's " + std::to_string(*extents[i]));
  }
  // Every output must run on the GPU: its pure definition has a block loop.
  for (const FuncDesc &f : compute.funcs) {
    if (!f.is_output || f.pure_axes.empty()) continue;
    bool bound = false;
    for (const ScheduleNode &n : tree->nodes)
      if (n.kind == ScheduleNodeKind::Loop && n.func == f.name && n.update < 0 && n.loop_kind == LoopKind::GpuBlock)
        bound = true;
    if (!bound)
      return make_error(ErrorKind::InvalidInput,
                        "output " + f.name + " has no loop bound to GPU blocks (it would run on the host)");
  }
  const GpuLaunchShape shape = gpu_launch_shape(*tree);
  if (shape.max_threads_per_block > target.max_threads_per_block)
    return make_error(ErrorKind::InvalidInput,
                      std::to_string(shape.max_threads_per_block) + " threads per block exceed the device's " +
                      std::to_string(target.max_threads_per_block));
  if (shape.max_shared_bytes > target.shared_bytes_per_block)
    return make_error(ErrorKind::InvalidInput,
                      std::to_string(shape.max_shared_bytes) + " bytes of shared memory per block exceed the " +
                      std::to_string(target.shared_bytes_per_block) + " a block may use");
  const int64_t register_words = shape.max_register_bytes / 4;
  if (register_words > target.max_accumulators())
    return make_error(ErrorKind::InvalidInput,
                      "a thread keeps " + std::to_string(register_words) + " accumulators in registers, more than " +
                      std::to_string(target.max_accumulators()));
  return tree;
}

}  // namespace tessel
