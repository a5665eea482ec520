#pragma once
// Sketch generation for CPUs (Ansor's sketches on tessel's schedule IR). Rules look at the
// structure of a task's compute, not at op types: which Funcs are outputs, which reduction
// Func ("anchor") each output applies its epilogue to, which Funcs must be materialized.
// Each sketch fixes a schedule's structure (which loops are split, how they nest, where
// the anchor is computed) and lists the numbers it leaves free; the sampler (sampler.h)
// fills them in and the builder (sketch_schedule.h) writes the steps.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compute/compute_desc.h"
#include "search/cpu/cpu_target.h"

namespace tessel {

/// What a sketch does with one Func.
enum class FuncRule {
  /// A pure intermediate substituted into its readers (no steps: tessel's default).
  Inline,
  /// An output without anchor: vectorize the innermost axis, fuse outer axes for parallel.
  InjectiveOutput,
  /// An output with an anchor: axes split into outer (fused, parallel) and inner tile loops.
  TiledOutput,
  /// The anchor, computed at a loop of its output's tile (cache write: the accumulator lives
  /// for one tile); its update runs R S R S (innermost last): the reduction's outer part, the
  /// tile's spatial remainder, the reduction's inner part, the register tile.
  TiledAnchor,
  /// As TiledAnchor with the tile's spatial remainder split once more: S R S R S.
  TiledAnchorMultiLevel,
  /// A non-inlinable Func that anchors no output: computed at root, each stage vectorized
  /// and parallel over its pure loops.
  Root,
  /// A reduction with little pure parallelism: its reduction is split and rfactored into a
  /// root intermediate with a parallel chunk var (and a vector lane var when it divides).
  RootRfactor,
  /// GPU: an output with an anchor, each axis split into block, thread and register tiles;
  /// the block loops fused and bound to blocks, the thread loops fused and bound to threads.
  GpuTiledOutput,
  /// GPU: the anchor computed per thread at its output's thread loop, in registers, its
  /// reduction split and the register tile unrolled innermost.
  GpuRegisterAnchor,
  /// GPU: an output without anchor: all axes fused, split into blocks of threads.
  GpuInjectiveOutput,
  /// GPU: an output with an anchor, one warp per block, a register tile per lane
  /// (search/gpu/gpu_warp_tile.h).
  GpuWarpTiledOutput,
  /// GPU: its anchor, once per block in lane-striped registers, operands staged in shared
  /// memory at its reduction's outer loop.
  GpuWarpAnchor,
  /// GPU: an output with an anchor whose reduction is split over a block's threads
  /// (search/gpu/gpu_split_k.h): one output element per thread, blocks fused.
  GpuSplitKOutput,
  /// GPU: its anchor, per thread in a register, folding the partials an rfactored
  /// intermediate keeps in shared memory.
  GpuSplitKAnchor,
};
const char *to_text(FuncRule rule);

/// The kind of a free parameter: which choice of the schedule it fixes.
enum class ParamKind {
  TileSize,        ///< an output axis' tile (split factor, shift_inwards)
  RegisterTile,    ///< an anchor axis' register tile (divides the anchor's region)
  InnerTile,       ///< S R S R S: the inner spatial level of the anchor's tile remainder
  ReductionSplit,  ///< inner factor of a reduction var (divides its extent)
  VectorWidth,     ///< lanes of a vectorized loop
  Unroll,          ///< 0/1 toggle, or an unroll factor
  ParallelFuse,    ///< how many outermost loops are fused into the parallel loop
  LoopOrder,       ///< 0: outer tile loops in axis order; 1: the vector axis' outermost
  ComputeLevel,    ///< 0: the anchor at the innermost outer loop of its output; 1: one out
  RfactorChunks,   ///< parallel chunks of an rfactored reduction
  ThreadTile,      ///< GPU: threads of a block along one axis
  ThreadCount,     ///< GPU: threads per block of an injective output
  /// Where an anchor's materialized input (FuncDesc::placeable_source) is computed: 0 at
  /// root (its built-in schedule), 1 inside the output's parallel loop (each thread copies
  /// the part its tasks read), 2 at the anchor's own compute level (one tile's part).
  SourcePlacement,
};
const char *to_text(ParamKind kind);

/// One free parameter: a name the sampler, the builder and the tuner's features share
/// ("out.tile.j", "acc.register.i", ...), and the values it may take before the
/// constraints between parameters (a register tile must divide the anchor's region, which
/// follows from the tiles, the parallel fusion and the compute level) narrow them.
struct SketchParam {
  std::string name;
  ParamKind kind = ParamKind::TileSize;
  std::vector<int64_t> values;
};

/// The rule for one Func; `partner` is the anchor of a TiledOutput and the output of a
/// TiledAnchor.
struct FuncPlan {
  std::string func;
  FuncRule rule = FuncRule::Inline;
  std::string partner;
};

struct Sketch {
  std::string name;  ///< "tile", "tile_srsrs", "rfactor", "injective"
  std::vector<FuncPlan> funcs;  ///< one per Func of the compute, in its order
  std::vector<SketchParam> params;

  const FuncPlan *plan(const std::string &func) const;
  const SketchParam *param(const std::string &name) const;
  /// The rules and parameters, one per line.
  std::string to_text() const;
};

/// For each output, the anchor it reads: a non-output, non-inlinable Func with a pure init
/// and a reduction update 0 whose pure axes are the output's (same names and extents), read
/// by that output only. Pairs (output, anchor) in the compute's order.
std::vector<std::pair<std::string, std::string>> find_anchors(const ComputeDesc &compute);

/// How one pure axis of an anchor relates to its output's axes. Besides the output's own
/// axes, an anchor may split one output axis x into x_lane (its innermost axis, `lanes`
/// wide) and x_block (at x's place), x = x_block * lanes + x_lane (a convolution over a
/// weight blocked by output channels, compute_conv.cpp).
struct AxisLink {
  enum class Kind { Same, Lane, Block };
  size_t out_axis = 0;
  Kind kind = Kind::Same;
  int64_t lanes = 1;
};

/// One link per anchor pure axis, or nothing when the anchor's axes are not the output's
/// (same names, extents and order) or such a blocked form of them.
std::optional<std::vector<AxisLink>> link_axes(const FuncDesc &out, const FuncDesc &anchor);

/// The anchor's region, in its own axis order, for a region of the output; nothing when a
/// blocked axis's region is not whole blocks or does not tile its axis exactly (a shifted
/// tail tile would straddle blocks).
std::optional<std::vector<int64_t>> anchor_region(const FuncDesc &out, const FuncDesc &anchor,
                                                  const std::vector<int64_t> &out_region);

/// The materialized input (FuncDesc::placeable_source) `anchor` reads, if it has one.
const FuncDesc *placeable_source_of(const ComputeDesc &compute, const std::string &anchor);

/// Whether a non-inlinable reduction Func has so little pure parallelism (pure points <
/// threads x 64) and so big a reduction (>= 1024 points) that rfactoring it pays.
bool wants_rfactor(const FuncDesc &func, const CpuTargetDesc &target);

/// The sketches of a task: "tile" and "tile_srsrs" when an output has an anchor (plus
/// "rfactor" when a reduction wants it), else "injective" (plus "rfactor" when a root
/// reduction wants it). Never empty.
std::vector<Sketch> generate_sketches(const ComputeDesc &compute, const CpuTargetDesc &target);

// ---- helpers the sampler and builder share ----

/// Vector widths worth trying for an axis of `extent` elements of `bytes` bytes: the
/// register's lanes and its halves down to 4 lanes, those <= extent; {1} when none fits.
std::vector<int64_t> vector_width_candidates(int64_t extent, int64_t bytes, const CpuTargetDesc &target);
/// The reduction vars an rfactor sketch splits: the one with the most points becomes
/// parallel chunks, the innermost one vector lanes (they may be the same var).
struct RfactorAxes {
  AxisDesc chunked, laned;
};
RfactorAxes rfactor_axes(const FuncDesc &func);
/// Divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n);
/// Divisors of n that are <= limit, ascending.
std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit);
/// The product of the values (1 for none).
int64_t product_of(const std::vector<int64_t> &values);
/// The reduction axes of a Func's update 0, innermost first (none without an update).
std::vector<AxisDesc> update_reduction_axes(const FuncDesc &func);

}  // namespace tessel
