// Sketch rules: which structure each Func gets, and the free parameters each structure
// leaves (sketch.h). The values listed are the candidates before the constraints between
// parameters; the sampler applies those.
#include "search/cpu/sketch.h"

#include <algorithm>
#include <set>

namespace tessel {
namespace {

bool has_reduction_update(const FuncDesc &f) {
  if (f.stages.size() < 2 || f.stages[1].update != 0) return false;
  for (const AxisDesc &a : f.stages[1].axes)
    if (a.reduction) return true;
  return false;
}

/// The pure axes of update 0, innermost first, must be the Func's pure axes in order.
bool update_pure_axes_match(const FuncDesc &f) {
  std::vector<std::string> update_pure;
  for (const AxisDesc &a : f.stages[1].axes)
    if (!a.reduction) update_pure.push_back(a.name);
  if (update_pure.size() != f.pure_axes.size()) return false;
  for (size_t i = 0; i < update_pure.size(); ++i)
    if (update_pure[i] != f.pure_axes[i].name) return false;
  return true;
}

std::vector<int64_t> sorted_unique(std::set<int64_t> values) { return {values.begin(), values.end()}; }

/// Output tile sizes worth trying: small round numbers, divisors, and the whole axis.
std::vector<int64_t> tile_candidates(int64_t extent) {
  std::set<int64_t> values{extent};
  for (int64_t v : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128})
    if (v <= extent) values.insert(v);
  for (int64_t d : divisors(extent))
    if (d <= 128) values.insert(d);
  return sorted_unique(values);
}

/// Tiles of the vectorized axis: a few vectors of each candidate width, or the whole axis.
std::vector<int64_t> vector_tile_candidates(int64_t extent, const std::vector<int64_t> &widths) {
  if (widths == std::vector<int64_t>{1}) return tile_candidates(extent);
  std::set<int64_t> values{extent};
  for (int64_t w : widths)
    for (int64_t k : {1, 2, 3, 4, 6, 8, 16})
      if (w * k <= extent) values.insert(w * k);
  return sorted_unique(values);
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

int64_t pure_points(const FuncDesc &f) {
  int64_t n = 1;
  for (const AxisDesc &a : f.pure_axes) n *= a.extent;
  return n;
}

int64_t reduction_points(const FuncDesc &f) {
  int64_t n = 1;
  for (const AxisDesc &a : f.stages[1].axes)
    if (a.reduction) n *= a.extent;
  return n;
}

class SketchWriter {
 public:
  SketchWriter(const ComputeDesc &compute, const CpuTargetDesc &target) : compute_(compute), target_(target) {}

  void add(const std::string &name, ParamKind kind, std::vector<int64_t> values) {
    sketch_.params.push_back(SketchParam{name, kind, std::move(values)});
  }

  void tiled_output(const FuncDesc &out, const FuncDesc &anchor, bool multi_level) {
    const int64_t bytes = anchor.bytes_per_element;
    const std::vector<AxisLink> links = *link_axes(out, anchor);
    const bool blocked = links.front().kind == AxisLink::Kind::Lane;
    // The anchor's vectors run along its axis 0: the output's axis 0, or a blocked axis's lanes.
    const std::vector<int64_t> widths = vector_width_candidates(anchor.pure_axes[0].extent, bytes, target_);
    for (size_t a = 0; a < out.pure_axes.size(); ++a) {
      const AxisDesc &axis = out.pure_axes[a];
      std::vector<int64_t> tiles;
      if (blocked && a == links.front().out_axis) {
        for (int64_t d : divisors(axis.extent))  // whole blocks that tile the axis exactly
          if (d % links.front().lanes == 0) tiles.push_back(d);
      } else if (a == 0 && !blocked) {
        tiles = vector_tile_candidates(axis.extent, widths);
      } else {
        tiles = tile_candidates(axis.extent);
      }
      add(out.name + ".tile." + axis.name, ParamKind::TileSize, tiles);
    }
    add(out.name + ".order", ParamKind::LoopOrder, {0, 1});
    add(out.name + ".parallel", ParamKind::ParallelFuse, range(0, static_cast<int64_t>(out.pure_axes.size())));
    add(out.name + ".vector", ParamKind::VectorWidth,
        vector_width_candidates(out.pure_axes[0].extent, out.bytes_per_element, target_));
    add(out.name + ".unroll", ParamKind::Unroll, {0, 1});

    add(anchor.name + ".compute_level", ParamKind::ComputeLevel, {0, 1});
    std::vector<int64_t> anchor_widths = widths;
    if (anchor_widths.front() != 1) anchor_widths.insert(anchor_widths.begin(), 1);
    add(anchor.name + ".vector", ParamKind::VectorWidth, anchor_widths);
    const int64_t budget = target_.accumulator_budget();
    for (size_t a = 0; a < anchor.pure_axes.size(); ++a) {
      const AxisDesc &axis = anchor.pure_axes[a];
      std::set<int64_t> values;
      if (a == 0)
        for (int64_t w : anchor_widths)
          for (int64_t u = 1; u <= 4 && u <= budget; ++u)
            if (w * u <= axis.extent) values.insert(w * u);
      for (int64_t r = 1; r <= std::min(budget, axis.extent); ++r) values.insert(r);
      add(anchor.name + ".register." + axis.name, ParamKind::RegisterTile, sorted_unique(values));
      if (multi_level) add(anchor.name + ".inner." + axis.name, ParamKind::InnerTile, divisors(axis.extent));
    }
    for (const AxisDesc &axis : anchor.stages[1].axes)
      if (axis.reduction)
        add(anchor.name + ".reduce." + axis.name, ParamKind::ReductionSplit, divisors(axis.extent));
    add(anchor.name + ".unroll_reduce", ParamKind::Unroll, {0, 1});
    if (const FuncDesc *source = placeable_source_of(compute_, anchor.name))
      add(source->name + ".at", ParamKind::SourcePlacement, {0, 1, 2});
  }

  void injective_output(const FuncDesc &out) {
    std::vector<int64_t> widths = vector_width_candidates(out.pure_axes[0].extent, out.bytes_per_element, target_);
    if (widths.front() != 1) widths.push_back(1);
    add(out.name + ".vector", ParamKind::VectorWidth, widths);
    add(out.name + ".unroll", ParamKind::Unroll, {1, 2, 4});
    if (out.pure_axes.size() >= 2)
      add(out.name + ".parallel", ParamKind::ParallelFuse, range(0, static_cast<int64_t>(out.pure_axes.size()) - 1));
    else
      add(out.name + ".task", ParamKind::ParallelFuse, {0, 1, 2, 4, 8, 16, 32, 64});
  }

  void root(const FuncDesc &f) {
    if (f.pure_axes.empty()) return;
    std::vector<int64_t> widths = vector_width_candidates(f.pure_axes[0].extent, f.bytes_per_element, target_);
    if (widths.front() != 1) widths.push_back(1);
    add(f.name + ".vector", ParamKind::VectorWidth, widths);
  }

  void rfactor(const FuncDesc &f) {
    const RfactorAxes axes = rfactor_axes(f);
    std::vector<int64_t> chunks;
    for (int64_t d : divisors(axes.chunked.extent))
      if (d >= 2 && d <= 256) chunks.push_back(d);
    add(f.name + ".rfactor.chunks", ParamKind::RfactorChunks, chunks);
    std::vector<int64_t> lanes{1};
    for (int64_t w : vector_width_candidates(axes.laned.extent, f.bytes_per_element, target_))
      if (w > 1) lanes.push_back(w);
    add(f.name + ".rfactor.lanes", ParamKind::VectorWidth, lanes);
  }

  /// One sketch: `tiled` says which outputs are tiled around their anchor, `rfactored`
  /// which reductions are rfactored.
  Sketch make(const std::string &name, const std::vector<std::pair<std::string, std::string>> &tiled,
              const std::set<std::string> &rfactored, bool multi_level) {
    sketch_ = Sketch{};
    sketch_.name = name;
    for (const FuncDesc &f : compute_.funcs) {
      FuncPlan plan{f.name, FuncRule::Inline, ""};
      for (const auto &[out, anchor] : tiled) {
        if (f.name == out) plan = FuncPlan{f.name, FuncRule::TiledOutput, anchor};
        if (f.name == anchor)
          plan = FuncPlan{f.name, multi_level ? FuncRule::TiledAnchorMultiLevel : FuncRule::TiledAnchor, out};
      }
      if (plan.rule == FuncRule::Inline) {
        if (f.is_output)
          plan.rule = FuncRule::InjectiveOutput;
        else if (rfactored.count(f.name))
          plan.rule = FuncRule::RootRfactor;
        else if (!f.inlinable)
          plan.rule = FuncRule::Root;
      }
      sketch_.funcs.push_back(plan);
    }
    for (const FuncPlan &plan : sketch_.funcs) {
      const FuncDesc &f = *compute_.find(plan.func);
      switch (plan.rule) {
        case FuncRule::TiledOutput:
          tiled_output(f, *compute_.find(plan.partner), multi_level);
          break;
        case FuncRule::InjectiveOutput: injective_output(f); break;
        case FuncRule::Root: root(f); break;
        case FuncRule::RootRfactor: rfactor(f); break;
        default: break;
      }
    }
    return sketch_;
  }

 private:
  const ComputeDesc &compute_;
  CpuTargetDesc target_;
  Sketch sketch_;
};

}  // namespace

const char *to_text(FuncRule rule) {
  switch (rule) {
    case FuncRule::Inline: return "inline";
    case FuncRule::InjectiveOutput: return "injective_output";
    case FuncRule::TiledOutput: return "tiled_output";
    case FuncRule::TiledAnchor: return "tiled_anchor";
    case FuncRule::TiledAnchorMultiLevel: return "tiled_anchor_srsrs";
    case FuncRule::Root: return "root";
    case FuncRule::RootRfactor: return "root_rfactor";
    case FuncRule::GpuTiledOutput: return "gpu_tiled_output";
    case FuncRule::GpuRegisterAnchor: return "gpu_register_anchor";
    case FuncRule::GpuInjectiveOutput: return "gpu_injective_output";
    case FuncRule::GpuWarpTiledOutput: return "gpu_warp_tiled_output";
    case FuncRule::GpuWarpAnchor: return "gpu_warp_anchor";
    case FuncRule::GpuSplitKOutput: return "gpu_split_k_output";
    case FuncRule::GpuSplitKAnchor: return "gpu_split_k_anchor";
  }
  return "inline";
}

const char *to_text(ParamKind kind) {
  switch (kind) {
    case ParamKind::TileSize: return "tile_size";
    case ParamKind::RegisterTile: return "register_tile";
    case ParamKind::InnerTile: return "inner_tile";
    case ParamKind::ReductionSplit: return "reduction_split";
    case ParamKind::VectorWidth: return "vector_width";
    case ParamKind::Unroll: return "unroll";
    case ParamKind::ParallelFuse: return "parallel_fuse";
    case ParamKind::LoopOrder: return "loop_order";
    case ParamKind::ComputeLevel: return "compute_level";
    case ParamKind::RfactorChunks: return "rfactor_chunks";
    case ParamKind::ThreadTile: return "thread_tile";
    case ParamKind::ThreadCount: return "thread_count";
    case ParamKind::SourcePlacement: return "source_placement";
  }
  return "tile_size";
}

const FuncDesc *placeable_source_of(const ComputeDesc &compute, const std::string &anchor) {
  for (const FuncDesc &f : compute.funcs)
    if (f.placeable_source && std::find(f.consumers.begin(), f.consumers.end(), anchor) != f.consumers.end()) return &f;
  return nullptr;
}

const FuncPlan *Sketch::plan(const std::string &func) const {
  for (const FuncPlan &p : funcs)
    if (p.func == func) return &p;
  return nullptr;
}

const SketchParam *Sketch::param(const std::string &param_name) const {
  for (const SketchParam &p : params)
    if (p.name == param_name) return &p;
  return nullptr;
}

std::string Sketch::to_text() const {
  std::string text = "sketch " + name + "\n";
  for (const FuncPlan &p : funcs) {
    text += "  " + p.func + ": " + tessel::to_text(p.rule);
    if (!p.partner.empty()) text += " (" + p.partner + ")";
    text += "\n";
  }
  for (const SketchParam &p : params) {
    text += "  param " + p.name + " " + tessel::to_text(p.kind) + " {";
    for (size_t i = 0; i < p.values.size(); ++i) text += (i ? "," : "") + std::to_string(p.values[i]);
    text += "}\n";
  }
  return text;
}

RfactorAxes rfactor_axes(const FuncDesc &func) {
  std::vector<AxisDesc> rvars;
  for (const AxisDesc &a : func.stages.at(1).axes)
    if (a.reduction) rvars.push_back(a);
  RfactorAxes axes{rvars.at(0), rvars.at(0)};
  for (const AxisDesc &a : rvars)
    if (a.extent > axes.chunked.extent) axes.chunked = a;
  return axes;
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d) large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit) {
  std::vector<int64_t> d;
  for (int64_t v : divisors(n))
    if (v <= limit) d.push_back(v);
  return d;
}

std::vector<int64_t> vector_width_candidates(int64_t extent, int64_t bytes, const CpuTargetDesc &target) {
  std::vector<int64_t> widths;
  // tessel's replay allows at most 64 lanes.
  for (int64_t w = std::min<int64_t>(64, target.lanes(bytes)); w >= 4; w /= 2)
    if (w <= extent && widths.size() < 3) widths.push_back(w);
  if (widths.empty()) widths.push_back(1);
  return widths;
}

std::optional<std::vector<AxisLink>> link_axes(const FuncDesc &out, const FuncDesc &anchor) {
  auto out_axis = [&](const std::string &name) -> std::optional<size_t> {
    for (size_t o = 0; o < out.pure_axes.size(); ++o)
      if (out.pure_axes[o].name == name) return o;
    return std::nullopt;
  };
  std::vector<AxisLink> links;
  std::vector<size_t> walked;  // output axes in the anchor's order, lanes left out
  const AxisDesc *lane = nullptr;
  for (size_t a = 0; a < anchor.pure_axes.size(); ++a) {
    const AxisDesc &axis = anchor.pure_axes[a];
    if (std::optional<size_t> o = out_axis(axis.name)) {
      if (out.pure_axes[*o].extent != axis.extent) return std::nullopt;
      links.push_back({*o, AxisLink::Kind::Same, 1});
      walked.push_back(*o);
      continue;
    }
    bool linked = false;
    for (size_t o = 0; o < out.pure_axes.size() && !linked; ++o) {
      const AxisDesc &x = out.pure_axes[o];
      if (a == 0 && axis.name == lane_axis_name(x.name) && axis.extent > 1 && x.extent % axis.extent == 0) {
        lane = &axis;
        links.push_back({o, AxisLink::Kind::Lane, axis.extent});
        linked = true;
      } else if (lane && lane->name == lane_axis_name(x.name) && axis.name == block_axis_name(x.name) &&
                 axis.extent * lane->extent == x.extent) {
        links.push_back({o, AxisLink::Kind::Block, lane->extent});
        walked.push_back(o);
        linked = true;
      }
    }
    if (!linked) return std::nullopt;
  }
  if (walked.size() != out.pure_axes.size()) return std::nullopt;  // an axis missing, or a lane without its block
  for (size_t i = 0; i < walked.size(); ++i)
    if (walked[i] != i) return std::nullopt;
  return links;
}

std::optional<std::vector<int64_t>> anchor_region(const FuncDesc &out, const FuncDesc &anchor,
                                                  const std::vector<int64_t> &out_region) {
  const std::optional<std::vector<AxisLink>> links = link_axes(out, anchor);
  if (!links || out_region.size() != out.pure_axes.size()) return std::nullopt;
  std::vector<int64_t> region;
  for (const AxisLink &l : *links) {
    const int64_t r = out_region[l.out_axis];
    if (l.kind == AxisLink::Kind::Same) {
      region.push_back(r);
      continue;
    }
    if (r % l.lanes != 0 || out.pure_axes[l.out_axis].extent % r != 0) return std::nullopt;
    region.push_back(l.kind == AxisLink::Kind::Lane ? l.lanes : r / l.lanes);
  }
  return region;
}

std::vector<std::pair<std::string, std::string>> find_anchors(const ComputeDesc &compute) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> taken;
  for (const FuncDesc &out : compute.funcs) {
    if (!out.is_output || out.pure_axes.empty()) continue;
    for (const FuncDesc &f : compute.funcs) {
      if (f.is_output || f.inlinable || taken.count(f.name) || !has_reduction_update(f)) continue;
      if (f.consumers != std::vector<std::string>{out.name}) continue;
      if (!link_axes(out, f) || !update_pure_axes_match(f)) continue;
      pairs.emplace_back(out.name, f.name);
      taken.insert(f.name);
      break;
    }
  }
  return pairs;
}

bool wants_rfactor(const FuncDesc &func, const CpuTargetDesc &target) {
  if (func.is_output || func.inlinable || !has_reduction_update(func)) return false;
  if (!update_pure_axes_match(func)) return false;
  return pure_points(func) < int64_t{target.threads} * 64 && reduction_points(func) >= 1024;
}

std::vector<Sketch> generate_sketches(const ComputeDesc &compute, const CpuTargetDesc &target) {
  SketchWriter writer(compute, target);
  const std::vector<std::pair<std::string, std::string>> anchors = find_anchors(compute);
  std::set<std::string> rfactored;
  for (const FuncDesc &f : compute.funcs)
    if (wants_rfactor(f, target)) rfactored.insert(f.name);

  std::vector<Sketch> sketches;
  if (!anchors.empty()) {
    sketches.push_back(writer.make("tile", anchors, {}, false));
    sketches.push_back(writer.make("tile_srsrs", anchors, {}, true));
  } else {
    sketches.push_back(writer.make("injective", {}, {}, false));
  }
  if (!rfactored.empty()) {
    // Rfactored anchors give up their tiling: their outputs become injective.
    std::vector<std::pair<std::string, std::string>> still_tiled;
    for (const auto &pair : anchors)
      if (!rfactored.count(pair.second)) still_tiled.push_back(pair);
    sketches.push_back(writer.make("rfactor", still_tiled, rfactored, false));
  }
  return sketches;
}

int64_t product_of(const std::vector<int64_t> &values) {
  int64_t p = 1;
  for (int64_t v : values) p *= v;
  return p;
}

std::vector<AxisDesc> update_reduction_axes(const FuncDesc &func) {
  std::vector<AxisDesc> r;
  if (func.stages.size() > 1)
    for (const AxisDesc &a : func.stages[1].axes)
      if (a.reduction) r.push_back(a);
  return r;
}

}  // namespace tessel
