#pragma once
// Internal to schedule/: a reduction computed into its own buffer and scheduled so its
// accumulator stays in registers. Used by pooling and normalization rules. Include
// <Halide.h> before this header.
#include "compute/op_compute.h"

namespace tessel {

/// A fold over a box, computed into its own buffer: func(kept) = fold over r of update.
struct RootReduction {
  std::string name;
  Shape kept;                   // extents of the result, ONNX order
  std::vector<int64_t> reduce;  // extents of the reduction domain, ONNX order (>= 1 each)
  std::vector<Halide::Expr> init;       // one value, or several for a Tuple (argmax)
  /// New accumulator values from the kept index, the reduction index and the current values.
  std::function<std::vector<Halide::Expr>(const std::vector<Halide::Expr> &kept, const std::vector<Halide::Expr> &r,
                                  const std::vector<Halide::Expr> &acc)>
      update;
  /// The reads are contiguous along the innermost kept axis, so vectorize across it.
  bool vectorize_kept_inner = false;
  /// Combines two partial accumulators (associative and commutative). When set, the
  /// innermost reduction axis (contiguous in memory) is split across vector lanes.
  std::function<std::vector<Halide::Expr>(const std::vector<Halide::Expr> &a, const std::vector<Halide::Expr> &b)> merge;
  /// False (ComputeContext::unscheduled): a plain fold with no directive, for a scheduler
  /// that places stages itself (Halide's autoschedulers, the GPU placement).
  bool scheduled = true;
};

/// Builds and schedules a RootReduction; read it with func(kept index reversed).
/// The result is a pure Func computed at root over the kept axes, vectorized and
/// parallelized; each block of it folds into a small accumulator computed inside that
/// block, so the fold's state stays in registers.
Halide::Func build_root_reduction(const RootReduction &spec);

/// Reads a RootReduction result at its kept index (ONNX order).
Halide::Expr read_root(const Halide::Func &f, const std::vector<Halide::Expr> &kept, int tuple_element = -1);

}  // namespace tessel
