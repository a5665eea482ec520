// Compute rules for Conv and ConvTranspose, both as one direct convolution kernel.
//
// The input is first materialized into a "source" Func that may be read anywhere the
// kernel window reaches: zero padding for Conv. A strided ConvTranspose is computed per
// output phase (conv_transpose_by_phases); otherwise a transposed convolution is a
// stride-1 convolution with the kernel flipped over the input spread out by the stride
// (zeros between elements) and padded. The source layout keeps every read a dense vector
// (strided axes split into phases; short 2-D rows flattened, see lower_conv). The convolution accumulates a register
// tile (one or two vectors along the innermost output axis, times several output channels and rows) over all input
// channels and kernel taps; the output Func is a pure copy, so the default schedule applies to it unchanged.
#include <Halide.h>

#include <algorithm>

#include "compute/compute_desc.h"
#include "compute/op_compute.h"
#include "compute/vector_isa.h"
#include "graph/passes/block_conv_weights.h"

namespace tessel {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::TailStrategy;
using Halide::Var;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/// (begin, end) of a total padding: the extra element goes to the end for SAME_UPPER and
/// to the beginning otherwise (the ONNX reference rule, with floor division).
std::pair<int64_t, int64_t> split_padding(int64_t total, bool upper) {
  const int64_t half = floor_div(total, 2);
  return upper ? std::make_pair(half, total - half) : std::make_pair(total - half, half);
}

/// Name of one of a node's Funcs.
std::string func_name(const std::string &node_name, const std::string &suffix) {
  return halide_name(node_name.empty() ? "conv" : node_name) + "_" + suffix;
}

/// Geometry of one convolution, per spatial axis in ONNX order.
struct ConvGeometry {
  std::vector<int64_t> kernel, strides, dilations, pad_begin;
};

ConvGeometry read_geometry(const ComputeContext &ctx, size_t spatial) {
  const Attributes &attrs = ctx.attrs();
  const Shape &w = ctx.input(1).shape;
  ConvGeometry g;
  g.kernel = attrs.get_ints("kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  g.strides = attrs.get_ints("strides", std::vector<int64_t>(spatial, 1));
  g.dilations = attrs.get_ints("dilations", std::vector<int64_t>(spatial, 1));
  if (g.kernel.size() != spatial || g.strides.size() != spatial || g.dilations.size() != spatial)
    ctx.fail("kernel_shape, strides and dilations need one entry per spatial axis");
  return g;
}

/// What the shared convolution kernel needs to know about one op.
struct DirectConv {
  std::string name;
  std::vector<int64_t> out_spatial;  // output positions per axis, ONNX order
  std::vector<int64_t> kernel;       // taps per kernel dim, in the weight's order
  /// The source element output position `pos` reads at taps `tap` (both ONNX order) in
  /// input channel `c` of batch `n`.
  std::function<Expr(const std::vector<Expr> &pos, const std::vector<Expr> &tap, Expr c, Expr n)> read;
  int64_t batch = 1, out_channels = 1;
  int64_t channels_per_group = 1;  // input channels each output channel sees
  int64_t out_channels_per_group = 1;
  /// Weight of output channel m, input channel ic (within its group), one index per tap,
  /// at output position pos (weights may depend on the position's phase).
  std::function<Expr(Expr m, Expr ic, const std::vector<Expr> &k, const std::vector<Expr> &pos)> weight;
  std::function<Expr(Expr m)> bias;  // empty when there is none
  Halide::Type acc_type;
};

int vector_width_for(int64_t n, int natural) {
  for (int v = natural; v >= 4; v /= 2)
    if (n >= v) return v;
  return 1;
}

/// Register tile along the innermost output axis: vector width and tile extent (one or two
/// vectors, never more than the axis).
struct RowTile {
  int vec;
  int64_t extent;
};

RowTile row_tile(int64_t width, int natural) {
  const int vec = vector_width_for(width, natural);
  return {vec, vec == 1 ? width : vec * std::min<int64_t>(2, width / vec)};
}

/// Fraction of full-width vector lanes doing useful work when `useful` of `width`
/// positions along a tiled axis are needed.
double lane_efficiency(int64_t useful, int64_t width, int natural) {
  const RowTile t = row_tile(width, natural);
  const int64_t tiles = (width + t.extent - 1) / t.extent;
  return static_cast<double>(useful) / static_cast<double>(tiles * t.extent) * t.vec / natural;
}

/// The convolution as a Func in Halide order (spatial innermost-first, m, n), computed at
/// root with a register-tiled schedule. Tiles use ShiftInwards, so every tile lies inside
/// the output and the register tile has constant extents.
Func direct_conv(const DirectConv &c) {
  const size_t spatial = c.out_spatial.size();
  std::vector<Var> pos;  // ONNX spatial order
  for (size_t d = 0; d < spatial; ++d) pos.emplace_back("o" + std::to_string(d));
  Var m("m"), n("n");
  std::vector<Var> args(pos.rbegin(), pos.rend());
  args.push_back(m);
  args.push_back(n);
  Expr init = c.bias ? Halide::cast(c.acc_type, c.bias(m)) : Halide::Internal::make_zero(c.acc_type);

  // No input channels (or an empty kernel): the sum is empty (and an RDom cannot be).
  bool empty_sum = c.channels_per_group == 0;
  for (int64_t k : c.kernel) empty_sum |= k == 0;
  if (empty_sum) {
    Func tiled(c.name + "_tiled");
    tiled(args) = init;
    tiled.compute_root();
    return tiled;
  }

  // Reduction over taps (the last kernel dim innermost) and the input channels of the group.
  const size_t tap_count = c.kernel.size();
  Halide::Region region;
  for (size_t t = tap_count; t-- > 0;) region.push_back({0, static_cast<int>(c.kernel[t])});
  region.push_back({0, static_cast<int>(c.channels_per_group)});
  RDom r(region, c.name + "_r");
  std::vector<Expr> tap(tap_count);
  for (size_t t = 0; t < tap_count; ++t) tap[t] = r[static_cast<int>(tap_count - 1 - t)];
  Expr ic = r[static_cast<int>(tap_count)];
  const int64_t groups = c.out_channels / c.out_channels_per_group;
  Expr channel =
      groups == 1 ? ic : (m / static_cast<int>(c.out_channels_per_group)) * static_cast<int>(c.channels_per_group) + ic;

  Func acc(c.name + "_acc");
  acc(args) = init;
  acc(args) += Halide::cast(c.acc_type, c.read(to_exprs(pos), tap, channel, n)) *
               Halide::cast(c.acc_type, c.weight(m, ic, tap, to_exprs(pos)));

  Func tiled(c.name + "_tiled");
  tiled(args) = acc(args);

  // Register tile: about 16 accumulators of (vector along x) x (channels) x (rows).
  const int64_t width = c.out_spatial.back();
  const int64_t height = spatial >= 2 ? c.out_spatial[spatial - 2] : 1;
  const int natural = std::max(1, host_vector_bits() / c.acc_type.bits());
  const RowTile xt = row_tile(width, natural);
  const int vec = xt.vec;
  const int64_t tile_x = xt.extent;
  const int64_t tile_y = std::min<int64_t>(height, tile_x > vec ? 1 : 2);
  // 8 channels of (x vectors x rows), fewer where the host has fewer registers.
  const int64_t tile_m = std::min<int64_t>(
      {c.out_channels, 8, std::max<int64_t>(1, accumulator_registers() / ((tile_x / vec) * tile_y))});

  Var x = args[0];
  Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), mo("mo"), mi("mi");
  tiled.compute_root()
      .split(x, xo, xi, static_cast<int>(tile_x), TailStrategy::ShiftInwards)
      .split(m, mo, mi, static_cast<int>(tile_m), TailStrategy::ShiftInwards);
  std::vector<Halide::VarOrRVar> order = {xi};
  if (spatial >= 2) {
    tiled.split(args[1], yo, yi, static_cast<int>(tile_y), TailStrategy::ShiftInwards);
    order.push_back(yi);
  }
  order.push_back(mi);
  order.push_back(xo);
  if (spatial >= 2) order.push_back(yo);
  for (size_t d = 2; d < spatial; ++d) order.push_back(args[d]);
  order.push_back(mo);
  order.push_back(n);
  tiled.reorder(order);
  // Everything outside the x tiles is fused into one parallel loop.
  Var outer = spatial >= 2 ? yo : mo;
  for (size_t k = spatial >= 2 ? 5 : 4; k < order.size(); ++k) {
    Var v = order[k].var;
    Var wider(outer.name() + "_" + v.name());
    tiled.fuse(outer, v, wider);
    outer = wider;
  }
  int64_t flops = c.batch * c.out_channels * c.channels_per_group;
  for (int64_t o : c.out_spatial) flops *= o;
  for (int64_t k : c.kernel) flops *= k;
  if (flops >= 65536 && c.batch * c.out_channels * height > 1) tiled.parallel(outer);
  if (vec > 1) tiled.vectorize(xi, vec);

  acc.compute_at(tiled, xo);
  if (vec > 1) acc.vectorize(x, vec);
  Halide::Stage update = acc.update();
  std::vector<Halide::VarOrRVar> update_order;
  Var xv("xv"), xvo("xvo");
  if (vec > 1) {
    update.split(x, xvo, xv, vec, TailStrategy::RoundUp);
    update_order = {xv, xvo};
  } else {
    update_order = {x};
  }
  if (spatial >= 2) update_order.push_back(args[1]);
  update_order.push_back(m);
  for (int k = 0; k <= static_cast<int>(tap_count); ++k) update_order.push_back(r[k]);
  update.reorder(update_order);
  if (vec > 1)
    update.vectorize(xv).unroll(xvo);
  else if (tile_x <= 8)
    update.unroll(x);
  if (spatial >= 2) update.unroll(args[1]);
  update.unroll(m);
  return tiled;
}

/// A convolution before the choice of layout: what the (padded, or spread) source holds at
/// each coordinate, the kernel geometry and the weights. Output position o along an axis
/// reads the source at o * stride + tap * dilation.
struct ConvProblem {
  std::string name;
  /// Source value at spatial coordinates (ONNX order), channel c and batch n. Reads of the
  /// input in it must be clamped: the source may be evaluated anywhere.
  std::function<Expr(const std::vector<Expr> &coords, Expr c, Expr n)> source_value;
  /// The input itself when the source needs no padding (read without a copy).
  Func unpadded_input;
  /// A Conv's input, its shape (ONNX order) and padding before each spatial axis, for
  /// zero_padded_input; undefined for a ConvTranspose's spread-out source.
  Func input;
  Shape input_shape;
  std::vector<int64_t> pad_begin;
  int64_t input_elements = 0;
  std::vector<int64_t> kernel, strides, dilations;
  Shape out_shape;
  int64_t channels_per_group = 1, out_channels_per_group = 1;
  std::function<Expr(Expr m, Expr ic, const std::vector<Expr> &k)> weight;
  /// With a blocked weight: the weight of output channel block * B + lane.
  std::function<Expr(Expr block, Expr lane, Expr ic, const std::vector<Expr> &k)> blocked_weight;
  std::function<Expr(Expr m)> bias;
};

/// The conv's input with its zero padding, materialized at root (Halide order: spatial
/// innermost first, channel, batch): zeros, then the input copied in over an RDom of its
/// extent. Every read of it is affine, so a strided one becomes dense loads and shuffles;
/// through source_value's clamped index and select each element was a scalar gather
/// (RegNet-Y's stride-2 grouped 3x3 conv, 104 channels on 24x24, spent 0.15 ms of its
/// 0.18 in that copy, on one thread).
Func zero_padded_input(const ConvProblem &p) {
  const size_t spatial = p.kernel.size();
  std::vector<Var> args;
  for (size_t d = spatial; d-- > 0;) args.emplace_back("u" + std::to_string(d));
  Var ch("ch"), batch("batch");
  args.insert(args.end(), {ch, batch});
  Halide::Region extents;
  for (size_t d = spatial; d-- > 0;) extents.push_back({0, static_cast<int>(p.input_shape[2 + d])});
  RDom r(extents, func_name(p.name, "in"));
  std::vector<Expr> from, to;
  for (size_t h = 0; h < spatial; ++h) {
    from.push_back(r[static_cast<int>(h)]);
    to.push_back(r[static_cast<int>(h)] + static_cast<int>(p.pad_begin[spatial - 1 - h]));
  }
  for (const Var &v : {ch, batch}) {
    from.push_back(v);
    to.push_back(v);
  }
  Func padded(func_name(p.name, "zero_padded"));
  padded(args) = Halide::Internal::make_zero(p.input.value().type());
  padded(to) = p.input(from);
  padded.compute_root().vectorize(args[0], 16, TailStrategy::RoundUp);
  Halide::Stage copy = padded.update();
  copy.vectorize(r[0], 16, TailStrategy::GuardWithIf);
  // Below 16K elements a parallel loop costs more than it saves.
  if (p.input_elements >= 16384) {
    padded.parallel(ch);
    copy.parallel(ch);
  }
  return padded;
}

/// Computes a materialized source at root: vectorized along its innermost axis, parallel
/// over channels when large.
void schedule_source(Func &f, int64_t elements, int channel_dim) {
  f.compute_root().vectorize(f.args()[0], 16, TailStrategy::RoundUp);
  if (elements >= 65536) f.parallel(f.args()[channel_dim]);
}

/// A 2-D problem (equal strides) as a 1-D one over "wide rows": each phase plane of the
/// source flattened with row pitch P, so output (y, x) lives at position y * P + x and every
/// tap is a constant offset from it (the columns x >= width are computed and dropped).
/// The source element wide-row position `at` reads at taps `tap` (ONNX order) in channel ch.
using WideRowRead = std::function<Expr(Expr at, const std::vector<Expr> &tap, Expr ch, Expr n)>;

/// The row pitch that keeps every tap of a row inside its wide row.
int64_t wide_row_pitch(const ConvProblem &p) {
  return p.out_shape[3] + (p.kernel[1] - 1) * p.dilations[1] / p.strides[1];
}

/// Positions of the wide-row problem: every row but the last padded to the pitch.
int64_t wide_row_positions(const ConvProblem &p, int64_t pitch) { return (p.out_shape[2] - 1) * pitch + p.out_shape[3]; }

/// The source laid out in wide rows (materialized at root), and how a position's taps read it.
WideRowRead wide_rows(const ConvProblem &p, int64_t pitch) {
  // flat(q, [px, py,] c, n) = source at (s * (q / P) + py, s * (q % P) + px).
  const int s = static_cast<int>(p.strides[0]), row = static_cast<int>(pitch);
  const std::vector<int64_t> dilations = p.dilations;
  Var q("q"), px("px"), py("py"), ch("ch"), n("n");
  std::vector<Var> args = {q};
  if (s > 1) args.insert(args.end(), {px, py});
  args.insert(args.end(), {ch, n});
  Expr phase_x = s > 1 ? Expr(px) : Expr(0), phase_y = s > 1 ? Expr(py) : Expr(0);
  Func flat(func_name(p.name, "flat"));
  if (p.input.defined()) {
    // Row by row from the materialized padding: dense stores along each wide row and
    // affine (for a stride, dense and shuffled) loads, where q / P and q % P made every
    // element a gather. The rows cover every position a tap reads.
    const Func padded = zero_padded_input(p);
    const int64_t reach = wide_row_positions(p, pitch) + ((p.kernel[0] - 1) * p.dilations[0] / s) * pitch +
                          (p.kernel[1] - 1) * p.dilations[1] / s;
    const int rows = static_cast<int>((reach + pitch - 1) / pitch);
    RDom r(0, row, 0, rows, func_name(p.name, "rows"));
    std::vector<Expr> to = {r.y * row + r.x}, from = {r.x * s + phase_x, r.y * s + phase_y, ch, n};
    if (s > 1) to.insert(to.end(), {px, py});
    to.insert(to.end(), {ch, n});
    flat(args) = Halide::Internal::make_zero(p.input.value().type());
    flat(to) = padded(from);
    flat.compute_root().vectorize(q, 16, TailStrategy::RoundUp);
    // Each (r.x < P, r.y) writes its own q = r.y * P + r.x, which Halide cannot prove.
    Halide::Stage copy = flat.update();
    copy.allow_race_conditions().vectorize(r.x, 16, TailStrategy::GuardWithIf);
    if (p.input_elements >= 16384) {
      flat.parallel(ch);
      copy.parallel(ch);
    }
  } else {
    flat(args) = p.source_value({(q / row) * s + phase_y, (q % row) * s + phase_x}, ch, n);
    schedule_source(flat, p.input_elements, static_cast<int>(args.size()) - 2);
  }
  return [flat, s, row, dilations](Expr at, const std::vector<Expr> &tap, Expr ch, Expr n) {
    Expr oy = tap[0] * static_cast<int>(dilations[0]), ox = tap[1] * static_cast<int>(dilations[1]);
    Expr from = at + (oy / s) * row + ox / s;
    return s > 1 ? flat(from, ox % s, oy % s, ch, n) : flat(from, ch, n);
  };
}

/// Builds the kernel for one convolution, choosing the source layout:
///  - strided axes are split into phases (source coordinate s * u + phase, stored with u
///    innermost), so every tap reads a dense vector instead of a strided one;
///  - 2-D problems whose rows are too short for full vectors (the 14x14 and 7x7 layers of
///    a ResNet, 1x1 kernels) use a "wide row" layout: each phase plane is flattened with
///    row pitch P, output (y, x) lives at y * P + x of a 1-D convolution whose vertical
///    taps step by P, and the columns x >= width are computed and dropped.
TensorFunc lower_conv(const ComputeContext &ctx, const ConvProblem &p) {
  const size_t spatial = p.kernel.size();
  const TensorType &out = ctx.output_type(0);
  const Halide::Type acc_type = math_type(out.dtype);
  const int natural = std::max(1, host_vector_bits() / acc_type.bits());
  const int64_t width = p.out_shape.back(), height = spatial >= 2 ? p.out_shape[spatial] : 1;
  const std::string output_name = func_name(ctx.node.name, "out");
  const std::vector<int64_t> strides = p.strides, dilations = p.dilations;

  DirectConv c;
  c.name = p.name;
  c.kernel = p.kernel;
  c.batch = p.out_shape[0];
  c.out_channels = p.out_shape[1];
  c.channels_per_group = p.channels_per_group;
  c.out_channels_per_group = p.out_channels_per_group;
  c.weight = [weight = p.weight](Expr m, Expr ic, const std::vector<Expr> &k, const std::vector<Expr> &) {
    return weight(m, ic, k);
  };
  c.bias = p.bias;
  c.acc_type = acc_type;

  bool wide = false;
  int64_t pitch = 0, positions = 0;
  if (spatial == 2 && strides[0] == strides[1]) {
    pitch = wide_row_pitch(p);
    positions = wide_row_positions(p, pitch);
    wide = lane_efficiency(height * width, positions, natural) > 1.1 * lane_efficiency(width, width, natural);
  }
  if (wide) {
    c.out_spatial = {positions};
    c.read = [read = wide_rows(p, pitch)](const std::vector<Expr> &pos, const std::vector<Expr> &tap, Expr ch, Expr n) {
      return read(pos[0], tap, ch, n);
    };
    const int row = static_cast<int>(pitch);
    Func conv = direct_conv(c);
    return define_tensor(output_name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      return conv(i[2] * row + i[3], i[1], i[0]);
    });
  }

  bool strided = false;
  for (int64_t s : strides) strided |= s > 1;
  c.out_spatial.assign(p.out_shape.begin() + 2, p.out_shape.end());
  if (p.unpadded_input.defined() && !strided) {
    Func input = p.unpadded_input;
    c.read = [input, dilations](const std::vector<Expr> &pos, const std::vector<Expr> &tap, Expr ch, Expr n) {
      std::vector<Expr> index;  // Halide order
      for (size_t d = pos.size(); d-- > 0;) index.push_back(pos[d] + tap[d] * static_cast<int>(dilations[d]));
      index.push_back(ch);
      index.push_back(n);
      return input(index);
    };
  } else {
    // source(u_last, [phase_last,] ..., c, n): coordinate s * u + phase along strided axes.
    std::vector<Var> args;
    std::vector<Expr> coords(spatial);
    for (size_t d = spatial; d-- > 0;) {
      Var u("u" + std::to_string(d));
      args.push_back(u);
      coords[d] = u;
      if (strides[d] > 1) {
        Var phase("phase" + std::to_string(d));
        args.push_back(phase);
        coords[d] = u * static_cast<int>(strides[d]) + phase;
      }
    }
    Var ch("ch"), n("n");
    args.insert(args.end(), {ch, n});
    Func source(func_name(p.name, "source"));
    if (p.input.defined() && !p.unpadded_input.defined()) {
      const Func padded = zero_padded_input(p);
      std::vector<Expr> at;  // Halide order
      for (size_t d = spatial; d-- > 0;) at.push_back(coords[d]);
      at.insert(at.end(), {ch, n});
      source(args) = padded(at);
    } else {
      source(args) = p.source_value(coords, ch, n);
    }
    schedule_source(source, p.input_elements, static_cast<int>(args.size()) - 2);
    c.read = [source, strides, dilations](const std::vector<Expr> &pos, const std::vector<Expr> &tap, Expr ch, Expr n) {
      std::vector<Expr> index;  // Halide order
      for (size_t d = pos.size(); d-- > 0;) {
        const int s = static_cast<int>(strides[d]);
        Expr offset = tap[d] * static_cast<int>(dilations[d]);
        if (s == 1) {
          index.push_back(pos[d] + offset);
        } else {
          index.push_back(pos[d] + offset / s);
          index.push_back(offset % s);
        }
      }
      index.push_back(ch);
      index.push_back(n);
      return source(index);
    };
  }
  Func conv = direct_conv(c);
  return define_tensor(output_name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
    return conv(std::vector<Expr>(i.rbegin(), i.rend()));
  });
}

/// The zero-padded input as a Func in Halide order (spatial innermost first, channel,
/// batch), computed at root when `schedule` (Halide's autoschedulers place it themselves).
Func padded_input(const ConvProblem &p, bool schedule) {
  const size_t spatial = p.kernel.size();
  std::vector<Var> args;
  std::vector<Expr> coords(spatial);
  for (size_t d = spatial; d-- > 0;) {
    args.emplace_back("u" + std::to_string(d));
    coords[d] = args.back();
  }
  Var ch("ch"), batch("batch");
  args.insert(args.end(), {ch, batch});
  Func padded(func_name(p.name, "padded"));
  padded(args) = p.source_value(coords, ch, batch);
  if (schedule) schedule_source(padded, p.input_elements, static_cast<int>(spatial));
  return padded;
}

/// The built-in kernel of a convolution (1-D, 2-D or 3-D) over a weight blocked by B output
/// channels (block_conv_weights): acc(lane, positions..., block, n) accumulates a register
/// tile of one or two blocks of B channels (vectors) by a few positions of a row over all
/// input channels and taps, each input element read as one broadcast; the output reads it
/// back per channel.
///
/// The positions are the output map's (x, y[, t]), or, where rows are too short for a full
/// tile (7x7, 13x13 and 14x14 maps: a tile that must divide the row gets 1, 1 and 2
/// positions, and the 512-channel 7x7 conv ran at 19% of the FMA peak so), one axis of wide
/// rows (wide_rows): tiles then run across rows at constant offsets, overlapping at the end.
TensorFunc blocked_direct_conv(const ComputeContext &ctx, const ConvProblem &p, int64_t block) {
  const TensorType &out = ctx.output_type(0);
  const Halide::Type acc_type = math_type(out.dtype);
  const size_t spatial = p.kernel.size();
  const int64_t width = p.out_shape.back(), blocks = p.out_shape[1] / block;
  const int bl = static_cast<int>(block);

  // Register tile: blocks by up to 7 positions, within the host's accumulator registers. Two
  // blocks where a block of 16 floats is one register (AVX-512); one where it is two (AVX2),
  // which ran ResNet-18 and VGG-11 faster there than two blocks of up to 3 positions (6.5
  // against 8.4-9.0 ms and 84 against 99 ms).
  const int registers_per_block = std::max(1, bl * acc_type.bits() / host_vector_bits());
  const int tile_b = blocks % 2 == 0 && registers_per_block == 1 ? 2 : 1;
  const int most_x = std::clamp(accumulator_registers() / (tile_b * registers_per_block), 1, 7);
  int64_t tile_x = 1;  // within a row: its largest divisor
  for (int d = 1; d <= most_x; ++d)
    if (width % d == 0) tile_x = d;
  // Wide rows where the row's own tile is poor (at most 2 positions) and theirs holds at least
  // twice as many useful positions. Their tile is one position short of the register budget:
  // on AVX2 the 7x7 and 14x14 convs ran 10-20% slower with 6 than with 5. On rows whose
  // tile holds 4 positions (56x56, 28x28) wide rows measured 5-40% slower, so they stay.
  int64_t pitch = 0, wide_positions = 0, wide_tile = 0;
  if (spatial == 2 && p.strides[0] == p.strides[1] && tile_x <= 2 && most_x > 2) {
    pitch = wide_row_pitch(p);
    wide_positions = wide_row_positions(p, pitch);
    wide_tile = std::min<int64_t>(most_x - 1, wide_positions);
    const double useful = static_cast<double>(p.out_shape[2] * width) /
                          static_cast<double>((wide_positions + wide_tile - 1) / wide_tile);
    if (useful < 2.0 * static_cast<double>(tile_x)) wide_tile = 0;
  }
  const bool wide = wide_tile > 0;
  // A whole row too short for enough independent accumulators takes the fewest further rows
  // into the tile that give them (8: two FMA pipes of four cycles), within the register
  // budget. A late layer's 3x3 map (512 channels, 9.4 MB of weight) had 3 positions x 2
  // blocks: six accumulators, each weight vector loaded once per row; with 9 positions its
  // conv ran 0.21 -> 0.14 ms (2 threads, weights cold). A 6x6 map's 12 accumulators ran
  // slower with 24 (0.14 -> 0.21 ms).
  constexpr int64_t kLatencyHidingAccumulators = 8;
  int64_t tile_y = 1;
  const int64_t per_position = tile_b * registers_per_block;
  if (!wide && spatial == 2 && tile_x == width && tile_x * per_position < kLatencyHidingAccumulators) {
    const int64_t most_positions = accumulator_registers() / per_position;
    for (int64_t d = 2; d <= p.out_shape[2]; ++d) {
      if (p.out_shape[2] % d != 0 || tile_x * d > most_positions) continue;
      tile_y = d;
      if (tile_x * d * per_position >= kLatencyHidingAccumulators) break;
    }
  }

  // Taps innermost, the row's first (Halide order), then the input channels.
  Halide::Region extents;
  for (size_t d = spatial; d-- > 0;) extents.push_back({0, static_cast<int>(p.kernel[d])});
  extents.push_back({0, static_cast<int>(p.channels_per_group)});
  RDom r(extents, func_name(p.name, "r"));
  std::vector<Expr> taps(spatial);  // ONNX order
  for (size_t h = 0; h < spatial; ++h) taps[spatial - 1 - h] = r[static_cast<int>(h)];
  const Expr ic = r[static_cast<int>(spatial)];
  Var lane("lane"), b("b"), n("n");
  // Input channel ic of the block's group (a block lies inside one group).
  const Expr channel =
      p.out_channels_per_group == p.out_shape[1]
          ? ic
          : (b * bl / static_cast<int>(p.out_channels_per_group)) * static_cast<int>(p.channels_per_group) + ic;
  // Position axes, Halide order: the row (x) first.
  std::vector<Var> pos;
  for (size_t h = 0; h < (wide ? 1 : spatial); ++h)
    pos.push_back(Var(std::string(1, "xyt"[std::min<size_t>(h, 2)]) + (h > 2 ? std::to_string(h) : "")));
  std::vector<Var> args = {lane};
  args.insert(args.end(), pos.begin(), pos.end());
  args.insert(args.end(), {b, n});
  Expr value;
  if (wide) {
    value = wide_rows(p, pitch)(pos[0], taps, channel, n);
  } else {
    const Func source = p.unpadded_input.defined() ? p.unpadded_input : padded_input(p, true);
    std::vector<Expr> read;  // Halide order
    for (size_t h = 0; h < spatial; ++h) {
      const size_t d = spatial - 1 - h;  // the ONNX axis of Halide position h
      read.push_back(pos[h] * static_cast<int>(p.strides[d]) + taps[d] * static_cast<int>(p.dilations[d]));
    }
    read.push_back(channel);
    read.push_back(n);
    value = source(read);
  }
  Func acc(func_name(p.name, "acc")), tiled(func_name(p.name, "tiled"));
  acc(args) = p.bias ? Halide::cast(acc_type, p.bias(b * bl + lane)) : Halide::Internal::make_zero(acc_type);
  acc(args) += Halide::cast(acc_type, value) * Halide::cast(acc_type, p.blocked_weight(b, lane, ic, taps));
  tiled(args) = acc(args);

  Var xo("xo"), xi("xi"), bo("bo"), bi("bi"), outer("outer");
  tiled.compute_root().split(b, bo, bi, tile_b);
  Var fused = bo;
  if (wide) {
    // Tiles shifted inwards at the end keep constant extents; a parallel task runs a wide
    // row's worth of them, so there are rows x blocks tasks as on the map.
    const int64_t tiles = (wide_positions + wide_tile - 1) / wide_tile;
    const int64_t chunk = std::min<int64_t>(tiles, (pitch + wide_tile - 1) / wide_tile);
    Var xc("xc"), xt("xt");
    tiled.split(pos[0], xo, xi, static_cast<int>(wide_tile), TailStrategy::ShiftInwards)
        .split(xo, xc, xt, static_cast<int>(chunk), TailStrategy::GuardWithIf)
        .reorder(lane, xi, bi, xt, xc, bo, n)
        .fuse(xc, bo, outer);
    fused = outer;
    acc.compute_at(tiled, xt);
  } else {
    tiled.split(pos[0], xo, xi, static_cast<int>(tile_x));
    std::vector<Halide::VarOrRVar> order = {lane, xi};
    std::vector<Var> outside = pos;  // the position loops outside the tile
    Var yo("yo"), yi("yi");
    if (tile_y > 1) {
      tiled.split(pos[1], yo, yi, static_cast<int>(tile_y));
      order.push_back(yi);
      outside[1] = yo;
    }
    order.push_back(bi);
    order.push_back(xo);
    for (size_t h = 1; h < spatial; ++h) order.push_back(outside[h]);
    order.push_back(bo);
    order.push_back(n);
    tiled.reorder(order);
    // The parallel loop: the rows outside the row tile, the pairs of blocks and the batch.
    // (Running all rows per pair of blocks, so that a late layer's weights stream from
    // memory once, measured the same on ResNet-18/50, VGG-11 and mc3_18: not done.)
    if (spatial >= 2) {
      fused = outer;
      tiled.fuse(outside[spatial - 1], bo, outer);
      for (size_t h = spatial - 1; h-- > 1;) tiled.fuse(outside[h], outer, outer);
    }
    acc.compute_at(tiled, xo);
  }
  int64_t rows = 1;  // output positions outside the row
  for (size_t d = 2; d + 1 < p.out_shape.size(); ++d) rows *= p.out_shape[d];
  tiled.fuse(fused, n, fused).vectorize(lane);
  if (blocks * rows * p.out_shape[0] > 1) tiled.parallel(fused);
  acc.vectorize(lane);
  std::vector<Halide::VarOrRVar> update_order = {lane, pos[0]};
  if (tile_y > 1) update_order.push_back(pos[1]);
  update_order.push_back(b);
  for (size_t h = 0; h <= spatial; ++h) update_order.push_back(r[static_cast<int>(h)]);
  for (size_t h = tile_y > 1 ? 2 : 1; h < pos.size(); ++h) update_order.push_back(pos[h]);
  update_order.push_back(n);
  acc.update().reorder(update_order).vectorize(lane).unroll(pos[0]).unroll(b);
  if (tile_y > 1) acc.update().unroll(pos[1]);
  const int row = static_cast<int>(pitch);
  return define_tensor(func_name(ctx.node.name, "out"), out.dtype, out.shape, [&](const std::vector<Expr> &i) {
    std::vector<Expr> at = {i[1] % bl};
    if (wide) {
      at.push_back(i[2] * row + i[3]);
    } else {
      for (size_t h = 0; h < spatial; ++h) at.push_back(i[i.size() - 1 - h]);
    }
    at.push_back(i[1] / bl);
    at.push_back(i[0]);
    return tiled(at);
  });
}

/// The tunable form of a convolution: acc over the output's own axes (make_vars: n, m,
/// spatial...) summed over taps (innermost, last spatial axis first) and input channels,
/// reading the zero-padded input inline; exposed to the schedule, no schedule here.
///
/// With a weight blocked by B output channels (block_conv_weights), the accumulator splits
/// m into m_lane (B, innermost) and m_block (at m's place): acc(m_lane, spatial..., m_block,
/// n). Its innermost axis, the one the schedule vectorizes, then runs along output channels
/// and reads the weight densely, and each input element is one broadcast.
TensorFunc plain_conv(const ComputeContext &ctx, const ConvProblem &p, int64_t block) {
  const TensorType &out = ctx.output_type(0);
  const size_t spatial = p.kernel.size();
  const Halide::Type acc_type = math_type(out.dtype);
  std::vector<Var> vars = make_vars(out.shape.size());
  std::vector<Var> halide_order(vars.rbegin(), vars.rend());
  Halide::Region taps_and_channels;
  for (size_t d = spatial; d-- > 0;) taps_and_channels.push_back({0, static_cast<int>(p.kernel[d])});
  taps_and_channels.push_back({0, static_cast<int>(p.channels_per_group)});
  RDom r(taps_and_channels, func_name(p.name, "r"));
  Expr n = vars[0], m = vars[1], ic = r[static_cast<int>(spatial)];
  bool strided = false;
  for (int64_t s : p.strides) strided |= s > 1;
  Var lane(lane_axis_name(vars[1].name())), block_index(block_axis_name(vars[1].name()));
  Shape acc_shape = out.shape;
  if (block > 1) {
    m = block_index * static_cast<int>(block) + lane;
    halide_order.insert(halide_order.begin(), lane);
    halide_order[halide_order.size() - 2] = block_index;
    acc_shape[1] = out.shape[1] / block;
    acc_shape.push_back(block);
  }
  // A block lies inside one group (block_conv_weights), so its group follows from the block
  // alone: the read stays one broadcast per input element instead of one per lane.
  Expr first_of_block = block > 1 ? block_index * static_cast<int>(block) : m;
  Expr channel = (first_of_block / static_cast<int>(p.out_channels_per_group)) * static_cast<int>(p.channels_per_group) + ic;
  std::vector<Expr> coords(spatial), taps(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    taps[d] = r[static_cast<int>(spatial - 1 - d)];
    coords[d] = vars[2 + d] * static_cast<int>(p.strides[d]) + taps[d] * static_cast<int>(p.dilations[d]);
  }
  Expr value;
  if (p.unpadded_input.defined()) {
    std::vector<Expr> index;  // Halide order
    for (size_t d = spatial; d-- > 0;) index.push_back(coords[d]);
    index.push_back(channel);
    index.push_back(n);
    value = p.unpadded_input(index);
  } else if (p.channels_per_group == 1 && strided) {
    // Strided depthwise: every input element feeds a few taps of one output channel and the
    // input is several times the output, so a padded copy would double the traffic of a
    // memory-bound kernel; read through the padding instead (MobileNet-V2's 112x112 stride-2
    // layer tuned to 0.105 ms against 0.178 ms with the copy, 96 trials each).
    value = p.source_value(coords, channel, n);
  } else {
    // The zero-padded input, materialized once (a fixed internal stage, not part of the
    // schedule): the accumulation loop then reads it without bounds selects.
    Func padded = padded_input(p, !ctx.unscheduled);
    // The schedule may move the copy into the output's loops (a tile's rows at a time).
    Shape read_shape{p.out_shape[0], (p.out_shape[1] / p.out_channels_per_group) * p.channels_per_group};
    for (size_t d = 0; d < spatial; ++d)
      read_shape.push_back((p.out_shape[2 + d] - 1) * p.strides[d] + (p.kernel[d] - 1) * p.dilations[d] + 1);
    ctx.expose_source(TensorFunc{padded, ctx.input(0).dtype, read_shape});
    std::vector<Expr> index;  // Halide order
    for (size_t d = spatial; d-- > 0;) index.push_back(coords[d]);
    index.push_back(channel);
    index.push_back(n);
    value = padded(index);
  }
  Expr weight = block > 1 ? p.blocked_weight(block_index, lane, ic, taps) : p.weight(m, ic, taps);
  Func acc(func_name(p.name, "acc"));
  acc(halide_order) = Halide::Internal::make_zero(acc_type);
  acc(halide_order) += Halide::cast(acc_type, value) * Halide::cast(acc_type, weight);
  ctx.expose_stage(TensorFunc{acc, out.dtype, acc_shape});
  return define_tensor(func_name(ctx.node.name, "out"), out.dtype, out.shape, [&](const std::vector<Expr> &index) {
    std::vector<Expr> at(index.rbegin(), index.rend());  // Halide order
    if (block > 1) {
      const int b = static_cast<int>(block);
      at.insert(at.begin(), index[1] % b);
      at[at.size() - 2] = index[1] / b;
    }
    Expr v = acc(at);
    if (p.bias) v = v + Halide::cast(acc_type, p.bias(index[1]));
    return v;
  });
}

std::function<Expr(Expr m)> bias_reader(const ComputeContext &ctx) {
  if (!ctx.has_input(2)) return {};
  TensorFunc b = ctx.input(2);
  return [b](Expr m) { return b.at({m}); };
}

std::vector<TensorFunc> conv_rule(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0), &w = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const size_t spatial = x.shape.size() - 2;
  ConvGeometry g = read_geometry(ctx, spatial);
  const std::string auto_pad = ctx.attrs().get_string("auto_pad", "NOTSET");
  const std::vector<int64_t> pads = ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  const int64_t group = ctx.attrs().get_int("group", 1);

  // Pad before each spatial axis, and whether any read falls outside the input.
  bool needs_padding = false;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = x.shape[2 + d], o = out.shape[2 + d];
    const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
    int64_t begin = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = std::max<int64_t>(0, (o - 1) * g.strides[d] + extent - in);
      begin = split_padding(total, auto_pad == "SAME_UPPER").first;
    } else if (auto_pad != "VALID") {
      begin = pads.at(d);
    }
    g.pad_begin.push_back(begin);
    const int64_t last_read = (o - 1) * g.strides[d] + extent - 1 - begin;
    needs_padding |= begin > 0 || last_read >= in;
  }

  ConvProblem p;
  p.name = func_name(ctx.node.name, "conv");
  const Shape in_shape = x.shape;
  const std::vector<int64_t> pad_begin = g.pad_begin;
  Func input = x.func;
  p.input = input;
  p.input_shape = in_shape;
  p.pad_begin = pad_begin;
  p.source_value = [input, in_shape, pad_begin](const std::vector<Expr> &coords, Expr c, Expr n) {
    const size_t s = coords.size();
    std::vector<Expr> read(s + 2);  // Halide order
    Expr inside = Halide::Internal::const_true();
    for (size_t d = 0; d < s; ++d) {
      Expr i = coords[d] - static_cast<int>(pad_begin[d]);
      inside = inside && i >= 0 && i < static_cast<int>(in_shape[2 + d]);
      read[s - 1 - d] = clamp_index(i, in_shape[2 + d]);
    }
    read[s] = c;
    read[s + 1] = n;
    return Halide::select(inside, input(read), Halide::Internal::make_zero(input.value().type()));
  };
  if (!needs_padding) p.unpadded_input = x.func;
  p.input_elements = shape_numel(x.shape);
  p.kernel = g.kernel;
  p.strides = g.strides;
  p.dilations = g.dilations;
  p.out_shape = out.shape;
  p.channels_per_group = w.shape[1];
  p.out_channels_per_group = out.shape[1] / group;
  // A weight blocked by B output channels (block_conv_weights) is [M / B, C, kernel..., B].
  const int64_t block = conv_weight_block(ctx.node);
  p.blocked_weight = [w](Expr block_index, Expr lane, Expr ic, const std::vector<Expr> &k) {
    std::vector<Expr> index = {block_index, ic};
    index.insert(index.end(), k.begin(), k.end());
    index.push_back(lane);
    return w.at(index);
  };
  p.weight = [w](Expr m, Expr ic, const std::vector<Expr> &k) {  // unblocked only
    std::vector<Expr> index = {m, ic};
    index.insert(index.end(), k.begin(), k.end());
    return w.at(index);
  };
  p.bias = bias_reader(ctx);
  if (ctx.plain) return {plain_conv(ctx, p, block)};
  if (block > 1) return {blocked_direct_conv(ctx, p, block)};
  return {lower_conv(ctx, p)};
}

/// A strided ConvTranspose (dilation 1) computed per output phase: with
/// o + pad = s * q + r (0 <= r < s), out[o] = sum_t X[q - t] * W[r + s * t]. Output
/// positions o = s * o' + ph become a convolution over (ph, o') per axis whose reads of X
/// are dense along o' and which only visits the ceil(K / s) taps each phase uses (taps past
/// the kernel get weight 0), instead of K taps over a mostly-zero spread-out input.
TensorFunc conv_transpose_by_phases(const ComputeContext &ctx, const ConvGeometry &g,
                                    const std::vector<int64_t> &pad_begin) {
  const TensorFunc &x = ctx.input(0), &w = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const size_t spatial = g.kernel.size();
  const int64_t group = ctx.attrs().get_int("group", 1);
  const std::vector<int64_t> strides = g.strides, kernel = g.kernel;

  // Source: X with zeros outside, indexed by X's own coordinates (reads go negative).
  const Shape in_shape = x.shape;
  std::vector<Var> u = make_vars(spatial + 2, "u");  // Halide order
  std::vector<Expr> read(u.begin(), u.end());
  Expr inside = Halide::Internal::const_true();
  for (size_t h = 0; h < spatial; ++h) {
    const int64_t extent = in_shape[1 + spatial - h];
    inside = inside && u[h] >= 0 && u[h] < static_cast<int>(extent);
    read[h] = clamp_index(u[h], extent);
  }
  Func source(func_name(ctx.node.name, "convt_source"));
  source(u) = Halide::select(inside, x.func(read), Halide::Internal::make_zero(halide_type(x.dtype)));
  schedule_source(source, shape_numel(in_shape), static_cast<int>(spatial));

  DirectConv c;
  c.name = func_name(ctx.node.name, "convt");
  // Conv axes, ONNX order: the phases of every axis, then the positions o' of every axis.
  std::vector<int64_t> per_phase(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    per_phase[d] = (out.shape[2 + d] + strides[d] - 1) / strides[d];
    c.out_spatial.push_back(strides[d]);
    c.kernel.push_back((kernel[d] + strides[d] - 1) / strides[d]);
  }
  c.out_spatial.insert(c.out_spatial.end(), per_phase.begin(), per_phase.end());
  c.batch = out.shape[0];
  c.out_channels = out.shape[1];
  c.channels_per_group = x.shape[1] / group;
  c.out_channels_per_group = w.shape[1];
  c.acc_type = math_type(out.dtype);
  c.bias = bias_reader(ctx);
  c.read = [source, strides, pad_begin](const std::vector<Expr> &pos, const std::vector<Expr> &tap, Expr ch, Expr n) {
    const size_t s = tap.size();
    std::vector<Expr> index(s + 2);  // Halide order
    for (size_t d = 0; d < s; ++d) {
      const int stride = static_cast<int>(strides[d]);
      // q = (s * o' + ph + pad) / s = o' + (ph + pad) / s (floor division).
      index[s - 1 - d] = pos[s + d] + (pos[d] + static_cast<int>(pad_begin[d])) / stride - tap[d];
    }
    index[s] = ch;
    index[s + 1] = n;
    return source(index);
  };
  const int64_t in_per_group = c.channels_per_group, out_per_group = c.out_channels_per_group;
  c.weight = [w, strides, kernel, pad_begin, in_per_group, out_per_group](Expr m, Expr ic, const std::vector<Expr> &tap,
                                                                          const std::vector<Expr> &pos) {
    std::vector<Expr> index = {(m / static_cast<int>(out_per_group)) * static_cast<int>(in_per_group) + ic,
                               m % static_cast<int>(out_per_group)};
    Expr valid = Halide::Internal::const_true();
    for (size_t d = 0; d < tap.size(); ++d) {
      const int stride = static_cast<int>(strides[d]);
      Expr k = (pos[d] + static_cast<int>(pad_begin[d])) % stride + tap[d] * stride;  // Euclidean %
      valid = valid && k < static_cast<int>(kernel[d]);
      index.push_back(clamp_index(k, kernel[d]));
    }
    return Halide::select(valid, w.at(index), Halide::Internal::make_zero(halide_type(w.dtype)));
  };
  Func conv = direct_conv(c);
  return 
      define_tensor(func_name(ctx.node.name, "out"), out.dtype, out.shape, [&](const std::vector<Expr> &i) {
        std::vector<Expr> args;  // Halide order of conv: positions (innermost first), phases, m, n
        for (size_t d = spatial; d-- > 0;) args.push_back(i[2 + d] / static_cast<int>(strides[d]));
        for (size_t d = spatial; d-- > 0;) args.push_back(i[2 + d] % static_cast<int>(strides[d]));
        args.push_back(i[1]);
        args.push_back(i[0]);
        return conv(args);
      });
}

std::vector<TensorFunc> conv_transpose_rule(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0), &w = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const size_t spatial = x.shape.size() - 2;
  ConvGeometry g = read_geometry(ctx, spatial);
  const Attributes &attrs = ctx.attrs();
  const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  const std::vector<int64_t> pads = attrs.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  const std::vector<int64_t> output_padding = attrs.get_ints("output_padding", std::vector<int64_t>(spatial, 0));
  const bool explicit_shape = attrs.has("output_shape");
  const int64_t group = attrs.get_int("group", 1);

  std::vector<int64_t> offset(spatial), pad_begin(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = x.shape[2 + d], o = out.shape[2 + d];
    const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
    int64_t begin = 0;
    if (explicit_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = g.strides[d] * (in - 1) + output_padding.at(d) + extent - o;
      begin = split_padding(total, auto_pad == "SAME_UPPER").first;
    } else if (auto_pad != "VALID") {
      begin = pads.at(d);
    }
    pad_begin[d] = begin;
    offset[d] = extent - 1 - begin;
  }
  bool strided = false, dilated = false;
  for (size_t d = 0; d < spatial; ++d) strided |= g.strides[d] > 1, dilated |= g.dilations[d] > 1;
  if (strided && !dilated) return {conv_transpose_by_phases(ctx, g, pad_begin)};

  // Otherwise: a stride-1 convolution with the kernel flipped over a spread-out source
  // U[u] = X[(u - offset) / stride] where that divides exactly, else 0, with
  // offset = (kernel extent - 1) - pad_begin.
  ConvProblem p;
  p.name = func_name(ctx.node.name, "convt");
  const Shape in_shape = x.shape;
  const std::vector<int64_t> strides = g.strides;
  Func input = x.func;
  p.source_value = [input, in_shape, offset, strides](const std::vector<Expr> &coords, Expr c, Expr n) {
    const size_t s = coords.size();
    std::vector<Expr> read(s + 2);  // Halide order
    Expr inside = Halide::Internal::const_true();
    for (size_t d = 0; d < s; ++d) {
      const int stride = static_cast<int>(strides[d]);
      Expr shifted = coords[d] - static_cast<int>(offset[d]);
      Expr i = stride == 1 ? shifted : shifted / stride;  // Halide division floors
      if (stride != 1) inside = inside && shifted % stride == 0;
      inside = inside && i >= 0 && i < static_cast<int>(in_shape[2 + d]);
      read[s - 1 - d] = clamp_index(i, in_shape[2 + d]);
    }
    read[s] = c;
    read[s + 1] = n;
    return Halide::select(inside, input(read), Halide::Internal::make_zero(input.value().type()));
  };
  p.kernel = g.kernel;
  p.strides = std::vector<int64_t>(spatial, 1);
  p.dilations = g.dilations;
  p.out_shape = out.shape;
  p.channels_per_group = x.shape[1] / group;
  p.out_channels_per_group = w.shape[1];
  const int64_t in_per_group = p.channels_per_group, out_per_group = p.out_channels_per_group;
  const std::vector<int64_t> kernel = g.kernel;
  p.weight = [w, kernel, in_per_group, out_per_group](Expr m, Expr ic, const std::vector<Expr> &k) {
    Expr group_index = m / static_cast<int>(out_per_group);
    std::vector<Expr> index = {group_index * static_cast<int>(in_per_group) + ic, m % static_cast<int>(out_per_group)};
    for (size_t d = 0; d < k.size(); ++d) index.push_back(static_cast<int>(kernel[d] - 1) - k[d]);
    return w.at(index);
  };
  p.bias = bias_reader(ctx);
  p.input_elements = shape_numel(out.shape) / std::max<int64_t>(out.shape[1], 1) * x.shape[1];
  return {lower_conv(ctx, p)};
}

}  // namespace

void register_conv_compute(ComputeRegistry &r) {
  r.add("Conv", conv_rule);
  r.add("ConvTranspose", conv_transpose_rule);
}

}  // namespace tessel
