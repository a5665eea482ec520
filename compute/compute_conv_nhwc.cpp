// Compute rule for TesselConvNHWC (graph/passes/channels_last_conv.h): a 2-D convolution over
// channels-last activations, acc(m, x, y, n) summing over the taps and the group's input
// channels. Output channels are the innermost axis, so a vector of them reads one
// contiguous row of the [KH, KW, C/g, M] weight, and, for a depthwise conv, one contiguous
// vector of the input per tap. Like Conv's rule (compute_conv.cpp) it exposes the
// accumulator and, for stride-1 padded convs, the zero-padded input copy to the schedule;
// strided ones read through the padding instead (a copy would add a pass over an input
// several times the output).
#include <Halide.h>

#include <algorithm>

#include "base/integer_division.h"
#include "compute/op_compute.h"
#include "compute/vector_isa.h"
#include "graph/passes/block_conv_weights.h"
#include "graph/passes/block_nhwc_conv_weights.h"
#include "graph/passes/channels_last_conv.h"

namespace tessel {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::TailStrategy;
using Halide::Var;

std::string stage_name(const ComputeContext &ctx, const std::string &suffix) {
  return halide_name(ctx.node.name.empty() ? "conv_nhwc" : ctx.node.name) + "_" + suffix;
}

/// f32 lanes of a host vector: 16 with AVX-512, 8 with AVX2.
int natural_lanes() { return std::max(4, host_vector_bits() / 32); }

/// Lanes for a vector along `extent` channels: a host vector of f32 when they come in such
/// groups, else half of one when they come in those, else a whole one with a guarded tail.
int channel_lanes(int64_t extent) {
  const int natural = natural_lanes();
  return extent % natural == 0 ? natural : extent % (natural / 2) == 0 ? natural / 2 : natural;
}

/// Largest divisor of `extent` up to `limit`: a register tile that needs no tail.
int largest_divisor(int64_t extent, int limit) {
  for (int d = limit; d > 1; --d)
    if (extent % d == 0) return d;
  return 1;
}

/// Iterations the built-in schedule's parallel loop aims for: enough to share among a few
/// threads, few enough that claiming them costs little.
constexpr int64_t kEnoughParallelIterations = 32;

/// The built-in schedule's register tile: `vectors` channel vectors of `lanes` by `columns`
/// output columns by `rows` output rows, each extent dividing its axis (a guarded tail inside
/// the tile would leave it without vectors).
struct NhwcTile {
  int lanes = 1, vectors = 1, columns = 1, rows = 1;
  /// The last channel block overlaps the one before it (ShiftInwards) instead of ending past
  /// the channels: whole vectors where the channels are not a multiple of them.
  bool shifted = false;
};

/// The tile with the most accumulators within the host's register budget: two vectors where
/// they divide the channels, unless one vector covers more positions (7 columns of a 7x7 map
/// against 1); columns up to a third of the budget and rows for the rest, or, with
/// `half_budget`, rows only once a whole row fits. `half_budget`: half the accumulators (convs
/// whose every tap of a column is a read of its own, see the caller).
NhwcTile choose_nhwc_tile(int64_t channels, int64_t width, int64_t height, int64_t weight_block,
                          bool half_budget) {
  const int budget = half_budget ? accumulator_registers() / 2 : accumulator_registers();
  // Full-budget tiles (pointwise and dense convs) take at most a third of it in columns and
  // the rest in rows: 8 x 3 on AVX-512, as the 500- and 2000-trial records of MobileNet-V2's
  // and MNASNet's pointwise convs on 24x24 and 12x12 maps have it (6-8 columns by 2-4 rows).
  // One row of 24 columns, MobileNet-V2's 24 -> 144 conv on 24x24 ran 0.019 ms alone, 8 x 3
  // 0.014; the untuned model 0.567 -> 0.496 ms together with whole channel groups (below).
  const int max_columns = accumulator_registers() / 3;
  // Columns and rows of `t` with `per_position` accumulators at each output position.
  auto place = [&](NhwcTile &t, int per_position) {
    const int room = budget / per_position;
    t.columns = largest_divisor(width, half_budget ? room : std::min(room, max_columns));
    t.rows = t.columns == width || !half_budget ? largest_divisor(height, room / t.columns) : 1;
  };
  // Channels past a multiple of the vector (24, 40, 58 of mobile nets): whole vectors, the
  // last block shifted onto the one before it, where at least 3/4 of the lanes are useful.
  // MobileNet-V2's 144 -> 24 conv on 24x24 ran 8 lanes by 24 columns at 0.035 ms, 16 lanes by
  // 24 columns at 0.019 (with rows parallel, below; its 2000-trial record: 0.018).
  // Unblocked weights only: a tile over a blocked weight must cover whole blocks.
  const int natural = natural_lanes();
  const int64_t shifted_blocks = (channels + natural - 1) / natural;
  if (weight_block <= 1 && channels > natural && channels % natural != 0 &&
      4 * channels >= 3 * shifted_blocks * natural) {
    NhwcTile t;
    t.lanes = natural;
    t.shifted = true;
    place(t, 1);
    return t;
  }
  NhwcTile best;
  best.lanes = channel_lanes(channels);
  best.vectors = weight_block > best.lanes ? static_cast<int>(weight_block / best.lanes) : 1;
  for (int vectors : {2, 1}) {
    if (channels % (vectors * best.lanes) != 0 && vectors > 1) continue;
    // A tile over a blocked weight covers whole blocks: the weight's index m / B is then
    // one value per tile and m % B a dense vector (Halide cannot prove that for a tile of
    // 8 channels starting at a multiple of 8 within blocks of 16).
    if ((vectors * best.lanes) % weight_block != 0) continue;
    NhwcTile t = best;
    t.vectors = vectors;
    place(t, vectors);
    if (t.vectors * t.columns * t.rows > best.vectors * best.columns * best.rows) best = t;
  }
  return best;
}

/// The loops of the built-in schedule's tiles: channel groups (mg), blocks of a group
/// (mo), vectors of a block (mv) and their lanes (mi); column and row tiles (xo, yo) and the
/// positions inside one (xi, yi).
struct TileLoops {
  Var mo{"mo"}, mg{"mg"}, mi{"mi"}, mv{"mv"}, xo{"xo"}, xi{"xi"}, yo{"yo"}, yi{"yi"};
};

/// Splits (m, ox, oy) of a Func's pure stage or of an update into the register tile's loops,
/// vectorizes its lanes and unrolls the rest of the tile. `block_tail`: the tail strategy of
/// the split into channel blocks (a partial last block needs GuardWithIf).
template <typename StageLike>
void split_into_tiles(StageLike &stage, const NhwcTile &tile, int blocks_per_group, const TileLoops &l, Var m,
                      Var ox, Var oy, TailStrategy block_tail) {
  stage.split(m, l.mo, l.mi, tile.lanes * tile.vectors, block_tail)
      .split(l.mo, l.mg, l.mo, blocks_per_group, TailStrategy::GuardWithIf)
      .split(l.mi, l.mv, l.mi, tile.lanes)
      .split(ox, l.xo, l.xi, tile.columns)
      .split(oy, l.yo, l.yi, tile.rows)
      .vectorize(l.mi)
      .unroll(l.mv)
      .unroll(l.xi)
      .unroll(l.yi);
}

std::vector<TensorFunc> conv_nhwc_rule(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0), &w = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const Attributes &a = ctx.attrs();
  const bool nchw_input = a.get_string("input_layout", "NHWC") == "NCHW";
  const int64_t channels = nchw_input ? x.shape[1] : x.shape[3];
  const int64_t in_h = nchw_input ? x.shape[2] : x.shape[1], in_w = nchw_input ? x.shape[3] : x.shape[2];
  const std::vector<int64_t> strides = a.get_ints("strides", {1, 1}), dilations = a.get_ints("dilations", {1, 1});
  const std::vector<int64_t> pads = a.get_ints("pads", {0, 0, 0, 0});
  const int64_t group = a.get_int("group", 1);
  // A weight blocked by output channels (block_nhwc_conv_weights) is [M / B, KH, KW, C / group, B].
  const int64_t block = conv_weight_block(ctx.node);
  const std::optional<NhwcConvWeightDims> dims = nhwc_conv_weight_dims(w.shape, block);
  if (!dims) ctx.fail("W " + shape_to_string(w.shape) + " is not blocked by " + std::to_string(block));
  const int64_t kh = dims->kernel_h, kw = dims->kernel_w, in_per_group = dims->in_per_group;
  const int64_t out_channels = out.shape[3];
  const int64_t out_per_group = out_channels / group;
  if (channels != in_per_group * group) ctx.fail("W does not match the input's channels");
  const Halide::Type acc_type = math_type(out.dtype);
  const Expr zero = Halide::Internal::make_zero(halide_type(x.dtype));

  auto read = [&](Expr c, Expr ix, Expr iy, Expr n) {
    return nchw_input ? x.at({n, c, iy, ix}) : x.at({n, iy, ix, c});
  };
  bool needs_padding = false;
  for (size_t d = 0; d < 2; ++d) {
    const int64_t extent = (d == 0 ? kh : kw) - 1;
    const int64_t in = d == 0 ? in_h : in_w, o = out.shape[1 + d];
    needs_padding |= pads[d] > 0 || (o - 1) * strides[d] + extent * dilations[d] - pads[d] >= in;
  }
  // The input at padded coordinates (px, py): zero outside.
  auto padded_value = [&](Expr c, Expr px, Expr py, Expr n) {
    Expr ix = px - static_cast<int>(pads[1]), iy = py - static_cast<int>(pads[0]);
    if (!needs_padding) return read(c, ix, iy, n);
    Expr inside = ix >= 0 && ix < static_cast<int>(in_w) && iy >= 0 && iy < static_cast<int>(in_h);
    return Halide::select(inside, read(c, clamp_index(ix, in_w), clamp_index(iy, in_h), n), zero);
  };
  // The built-in schedule of a depthwise conv reads through the padding too: its copy, at
  // root, is a serial pass over the input before a parallel conv with as little work per
  // element, and the other thread then reads its half of the copy from the first one's
  // cache. Measured (AVX-512, 2 threads, against oneDNN in the same run): 960 channels on
  // 7x7 0.19x -> 0.42x, 384 on 14x14 0.29x -> 0.51x, 144 on 56x56 0.43x -> 0.60x; untuned
  // MobileNet-V2 1.60 -> 1.40 ms. Tuning keeps the copy (it places it inside the output's
  // tiles).
  const bool depthwise = in_per_group == 1 && out_per_group == 1;
  const bool copy = needs_padding && strides[0] == 1 && strides[1] == 1 && (ctx.plain || !depthwise);
  Func padded;
  if (copy) {
    Var c("c"), px("px"), py("py"), n("n");
    padded = Func(stage_name(ctx, "padded"));
    padded(c, px, py, n) = padded_value(c, px, py, n);
    if (!ctx.unscheduled) {
      const int lanes = channel_lanes(channels);
      padded.compute_root().vectorize(c, lanes, TailStrategy::GuardWithIf);
      if (shape_numel(x.shape) >= 65536) padded.parallel(py);
    }
    const int64_t read_w = (out.shape[2] - 1) + (kw - 1) * dilations[1] + 1;
    const int64_t read_h = (out.shape[1] - 1) + (kh - 1) * dilations[0] + 1;
    ctx.expose_source(TensorFunc{padded, x.dtype, Shape{x.shape[0], read_h, read_w, channels}});
  }

  const std::vector<Var> vars = make_vars(4);  // n, y, x, m
  const Var n = vars[0], oy = vars[1], ox = vars[2], m = vars[3];
  RDom r({{0, static_cast<int>(kw)}, {0, static_cast<int>(kh)}, {0, static_cast<int>(in_per_group)}},
         stage_name(ctx, "r"));
  Expr c = (m / static_cast<int>(out_per_group)) * static_cast<int>(in_per_group) + r.z;
  if (depthwise) c = m;  // the same channel
  Expr px = ox * static_cast<int>(strides[1]) + r.x * static_cast<int>(dilations[1]);
  Expr py = oy * static_cast<int>(strides[0]) + r.y * static_cast<int>(dilations[0]);
  Expr value = copy ? padded(c, px, py, n) : padded_value(c, px, py, n);
  Func acc(stage_name(ctx, "acc"));
  acc(m, ox, oy, n) = Halide::Internal::make_zero(acc_type);
  const int b = static_cast<int>(block);
  const Expr weight = block > 1 ? w.at({m / b, r.y, r.x, r.z, m % b}) : w.at({r.y, r.x, r.z, m});
  acc(m, ox, oy, n) += Halide::cast(acc_type, value) * Halide::cast(acc_type, weight);

  Func accumulated = acc;  // what the output reads
  std::shared_ptr<DeferredTiles> deferred;
  if (ctx.plain) {
    ctx.expose_stage(TensorFunc{acc, out.dtype, out.shape});
  } else if (!ctx.unscheduled) {
    // Built-in schedule: a register tile of channel vectors by output positions (columns
    // and rows), the taps (unrolled when 3x3 or smaller) and input channels around it,
    // parallel over row blocks. Where there are few row blocks (3x3 maps
    // in MNASNet's late layers, with wide weights) the parallel loop takes groups of channel
    // blocks too: over rows alone it read every weight once per row, on at most 3 threads.
    // Groups, not single blocks: each parallel iteration costs an atomic claim, which a
    // depthwise conv's small blocks do not repay.
    // Half the register tile where every tap of a column is read on its own: a depthwise
    // conv (through the padding's select; it makes no padded copy) and a stem reading an
    // NCHW image (a scalar per column and tap). With the taps unrolled LLVM keeps many of
    // those reads live, and a full tile of 24 accumulators spilled. In the model (AVX-512):
    // MobileNet-V2's 3 -> 32 stem 0.026 -> 0.018 ms (its 2000-trial record: 0.018),
    // EfficientNet-B0's 0.057 -> 0.032; MobileNet-V2's 17 depthwise convs 0.177 -> 0.152
    // ms in all (8 accumulators: 0.164, 16: 0.155).
    const NhwcTile tile =
        choose_nhwc_tile(out_channels, out.shape[2], out.shape[1], block, depthwise || nchw_input);
    const int64_t channel_blocks = ceil_div(out_channels, tile.lanes * tile.vectors);
    const int64_t row_blocks = out.shape[0] * (out.shape[1] / tile.rows);
    // No groups where the last channel block is partial (ShuffleNet's 58 channels): Halide
    // then guards every block of the group, and none keeps its vectors (5x slower measured).
    const bool whole_blocks = out_channels % (tile.lanes * tile.vectors) == 0 || tile.shifted;
    // A dense conv with few row blocks (a late layer: small map, large weight) runs every row
    // inside its channel block, so the block's weights come from memory once and from L1 for
    // the other rows; the parallel loop then takes the channel groups alone. Parallel over
    // (group, row) pairs, each row's pass streamed the whole weight again (1.6 MB for
    // MobileNet-V2's 320 -> 1280 conv on a 3x3 map, whose blocked tile covers one row).
    // Only where a block's weights outgrow L1: a 144 -> 24 conv on 24x24 (9 KB per block) ran
    // its two blocks as two parallel iterations, and whenever the second thread was late the
    // first ran both (0.037 ms against 0.021 over (block, row) pairs).
    constexpr int64_t kBlockWeightBytesFromMemory = 32 * 1024;
    const int64_t block_weight_bytes = tile.lanes * tile.vectors * kh * kw * in_per_group * 4;
    const bool rows_inside_blocks = !depthwise && whole_blocks && row_blocks < kEnoughParallelIterations &&
                                    block_weight_bytes >= kBlockWeightBytesFromMemory;
    const int64_t groups =
        rows_inside_blocks ? std::min(channel_blocks, kEnoughParallelIterations)
        : row_blocks >= kEnoughParallelIterations || !whole_blocks
            ? 1 : std::min(channel_blocks, ceil_div(kEnoughParallelIterations, row_blocks));
    // Groups of whole blocks where that leaves a few parallel iterations: a last group with
    // fewer blocks guards the block loop, and MNASNet's 40 -> 240 conv on 12x12 ran 0.015-0.017
    // ms so (15 blocks in 8 groups of 2) against 0.012 in 5 groups of 3.
    constexpr int64_t kFewParallelIterations = 8;
    const int64_t whole_groups = largest_divisor(channel_blocks, static_cast<int>(groups));
    const int blocks_per_group = static_cast<int>(
        whole_groups * (rows_inside_blocks ? 1 : row_blocks) >= kFewParallelIterations
            ? channel_blocks / whole_groups : ceil_div(channel_blocks, groups));
    const TileLoops loops;
    const Var &mo = loops.mo, &mg = loops.mg, &mi = loops.mi, &mv = loops.mv, &xo = loops.xo, &xi = loops.xi,
              &yo = loops.yo, &yi = loops.yi;
    Var block("block");
    if (whole_blocks) {
      // Each tile accumulates in registers and is stored once (tiled). Accumulating in a
      // root buffer instead cost a pass that zeroed it and one that read and wrote it back
      // per tile. MobileNet-V2 (96x96 input, AVX2, in the model): its 16 -> 96 1x1 conv on
      // 48x48 took 0.19-0.24 ms so, 0.12-0.18 ms tiled, and the 320 -> 1280 one on 3x3
      // 0.18-0.20 against 0.14-0.16; the depthwise convs measured the same either way.
      Func tiled(stage_name(ctx, "tiled"));
      tiled(m, ox, oy, n) = acc(m, ox, oy, n);
      // The tiles of `f`, a Func over (m, ox, oy, n) like the result: this one, or the
      // kernel's output that applies the epilogue to it.
      auto tile_loops = [=](Func f) mutable {
        const std::vector<Var> args = f.args();  // Halide order: m, ox, oy, n
        const Var fm = args[0], fx = args[1], fy = args[2], fn = args[3];
        split_into_tiles(f, tile, blocks_per_group, loops, fm, fx, fy,
                         tile.shifted ? TailStrategy::ShiftInwards : TailStrategy::Auto);
        Var tile_loop = xo;  // the innermost loop outside the tile
        if (rows_inside_blocks) {
          f.reorder(mi, mv, xi, yi, xo, yo, mo, mg, fn).parallel(mg);
        } else {
          // A pointwise or dense conv sweeps a row per channel block (that block's weights
          // stay in cache); a depthwise one reads each pixel's channels together.
          if (depthwise) {
            f.reorder(mi, mv, xi, yi, mo, xo, mg, yo, fn);
            tile_loop = mo;
          } else {
            f.reorder(mi, mv, xi, yi, xo, mo, mg, yo, fn);
          }
          f.fuse(mg, yo, block).parallel(block);
        }
        acc.compute_at(f, tile_loop);
      };
      auto alone = [=]() mutable {
        tiled.compute_root();
        tile_loops(tiled);
      };
      if (ctx.gpu) {
        alone();
      } else {
        // The epilogue in the tile: MobileNet-V2's built-in pointwise convs wrote every tile
        // to a root buffer that the Clip or residual Add read back in a pass of its own.
        deferred = std::make_shared<DeferredTiles>();
        deferred->into = [=](Func consumer) mutable { tile_loops(consumer); };
        deferred->alone = alone;
      }
      acc.split(m, mv, mi, tile.lanes).vectorize(mi).unroll(mv).unroll(ox).unroll(oy);
      Halide::Stage update = acc.update();
      update.split(m, mv, mi, tile.lanes)
          .vectorize(mi)
          .unroll(mv)
          .unroll(ox)
          .unroll(oy)
          .reorder(mi, mv, ox, oy, r.x, r.y, r.z, n);
      if (kh * kw <= 9) update.unroll(r.x).unroll(r.y);
      accumulated = tiled;
    } else {
      acc.compute_root().vectorize(m, tile.lanes, TailStrategy::GuardWithIf).parallel(oy);
      Halide::Stage update = acc.update();
      split_into_tiles(update, tile, blocks_per_group, loops, m, ox, oy, TailStrategy::GuardWithIf);
      if (depthwise) update.reorder(mi, mv, xi, yi, r.x, r.y, r.z, mo, xo, mg, yo, n);
      else update.reorder(mi, mv, xi, yi, r.x, r.y, r.z, xo, mo, mg, yo, n);
      update.fuse(mg, yo, block).parallel(block);
      if (kh * kw <= 9) update.unroll(r.x).unroll(r.y);
    }
  }
  const bool has_bias = ctx.has_input(2);
  const TensorFunc bias = has_bias ? ctx.input(2) : TensorFunc{};
  TensorFunc result = define_tensor(stage_name(ctx, "out"), out.dtype, out.shape, [&](const std::vector<Expr> &i) {
    Expr v = accumulated(i[3], i[2], i[1], i[0]);
    if (has_bias) v = v + Halide::cast(acc_type, bias.at({i[3]}));
    return v;
  });
  result.tiles = deferred;
  return {result};
}

}  // namespace

void register_conv_nhwc_compute(ComputeRegistry &r) { r.add(kConvNhwcOp, conv_nhwc_rule); }

}  // namespace tessel
