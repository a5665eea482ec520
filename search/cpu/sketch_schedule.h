#pragma once
// Turns a sketch plus a value for each of its free parameters into schedule steps. The
// sampler and default_cpu_schedule (sampler.h) choose the values; this file only writes
// the steps they imply, so every schedule of one sketch has the same shape.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/cpu_target.h"
#include "search/cpu/sketch.h"

namespace tessel {

/// A value per parameter name (SketchParam::name).
using SketchChoices = std::map<std::string, int64_t>;

/// Where a TiledOutput's loops end up for given tiles, loop order, parallel fusion and
/// compute level, and the region its anchor then computes per tile.
struct TiledOutputLayout {
  std::vector<std::string> inner_loops;  ///< the tile's loops, innermost first
  std::vector<std::string> outer_loops;  ///< after fusion, innermost first
  std::string parallel_loop;             ///< empty when none runs in parallel
  int64_t parallel_extent = 1;
  std::string compute_at;               ///< the anchor's loop of the output; empty: at root
  std::vector<int64_t> anchor_region;   ///< per pure axis, innermost first
};

/// The layout of `output` under `choices` (the output's tile, order and parallel values and
/// the anchor's compute level; missing values read as "no split", 0, 0 and 0).
TiledOutputLayout layout_tiled_output(const FuncDesc &output, const std::string &anchor, const SketchChoices &choices);

/// Number of outer loops `output` has before fusion under `choices` (its tile values).
int count_outer_loops(const FuncDesc &output, const SketchChoices &choices);

/// The steps of `sketch` with `choices`. Errors name a parameter whose value the sketch
/// cannot use (a register tile that does not divide the anchor's region, ...); the result
/// is not validated here (see sampler.h).
Result<Schedule> build_sketch_schedule(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                                       const SketchChoices &choices);

/// The choices as "name=value" lines, sorted by name.
std::string to_text(const SketchChoices &choices);

}  // namespace tessel
