#pragma once
// What a schedule applies to, as plain data: the Funcs of one pipeline with their stages,
// loop axes and extents. No Halide here, so the tuner and tests can reason about schedules
// (schedule_tree.h) without paying for Halide.h.
#include <cstdint>
#include <string>
#include <vector>

namespace tessel {

/// One loop axis: a pure Var, or a reduction variable (an RDom's RVar) when `reduction`.
struct AxisDesc {
  std::string name;
  int64_t extent = 1;
  bool reduction = false;
};

/// One definition of a Func: the pure one or an update.
struct StageDesc {
  int update = -1;  ///< -1 for the pure definition, k >= 0 for update k
  /// The stage's loops, innermost first, in Halide's default order. For an update that is
  /// the RDom's variables innermost (r.x, then r.y, ...) and then the pure vars (x, y, ...);
  /// measured on Halide 14 with Func::print_loop_nest and the stage's schedule dims.
  std::vector<AxisDesc> axes;
  /// The Funcs of this pipeline that this definition reads (never the Func itself). When
  /// every stage of a Func leaves this empty, each of its stages counts as reading every
  /// Func that lists it as a consumer; filling it lets a producer be computed inside an
  /// update that alone reads it.
  std::vector<std::string> reads;
};

/// One Func of the pipeline.
struct FuncDesc {
  std::string name;
  std::vector<AxisDesc> pure_axes;     ///< innermost first; extent = region computed
  std::vector<StageDesc> stages;       ///< stage 0 = pure definition, then the updates
  std::vector<std::string> consumers;  ///< Funcs that read this one
  bool is_output = false;
  bool inlinable = true;  ///< false when it has update stages
  /// A materialized input of one anchor (a convolution's zero-padded copy): computed at
  /// root with its own built-in loops unless a compute_at step places it inside the loops
  /// of the anchor's output; no other step names it. Listed as inlinable so a schedule
  /// that does not place it (and every GPU schedule) leaves it alone.
  bool placeable_source = false;
  int64_t bytes_per_element = 4;
  std::string element_type = "f32";  ///< how storage is printed (f32, i32, u8, ...)
  int64_t flops_per_point = 0;
};

/// The Funcs of one pipeline, producers before consumers and outputs last.
struct ComputeDesc {
  std::vector<FuncDesc> funcs;

  const FuncDesc *find(const std::string &name) const {
    for (const FuncDesc &f : funcs)
      if (f.name == name) return &f;
    return nullptr;
  }
};

/// Names of the two axes a blocked layout splits `axis` into (the channels-blocked conv's
/// weight): its lanes (the vector, innermost) and its blocks. The compute rules name their
/// Vars this way and the sketch rules find the pair by these names.
inline std::string lane_axis_name(const std::string &axis) { return axis + "_lane"; }
inline std::string block_axis_name(const std::string &axis) { return axis + "_block"; }

}  // namespace tessel
