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

#include "compute/op_compute.h"
#include "compute/vector_isa.h"
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

/// Lanes for a vector along `extent` channels: a host vector of f32 (16 with AVX-512, 8 with
/// AVX2) when they come in such groups, else half of one when they come in those, else a
/// whole one with a guarded tail.
int channel_lanes(int64_t extent) {
  const int natural = std::max(4, host_vector_bits() / 32);
  return extent % natural == 0 ? natural : extent % (natural / 2) == 0 ? natural / 2 : natural;
}

/// Largest divisor of `extent` up to `limit`: a register tile that needs no tail.
int largest_divisor(int64_t extent, int limit) {
  for (int d = limit; d > 1; --d)
    if (extent % d == 0) return d;
  return 1;
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
  const int64_t kh = w.shape[0], kw = w.shape[1], in_per_group = w.shape[2], out_channels = out.shape[3];
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
  const bool copy = needs_padding && strides[0] == 1 && strides[1] == 1;
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
  if (in_per_group == 1 && out_per_group == 1) c = m;  // depthwise: the same channel
  Expr px = ox * static_cast<int>(strides[1]) + r.x * static_cast<int>(dilations[1]);
  Expr py = oy * static_cast<int>(strides[0]) + r.y * static_cast<int>(dilations[0]);
  Expr value = copy ? padded(c, px, py, n) : padded_value(c, px, py, n);
  Func acc(stage_name(ctx, "acc"));
  acc(m, ox, oy, n) = Halide::Internal::make_zero(acc_type);
  acc(m, ox, oy, n) += Halide::cast(acc_type, value) * Halide::cast(acc_type, w.at({r.y, r.x, r.z, m}));

  if (ctx.plain) {
    ctx.expose_stage(TensorFunc{acc, out.dtype, out.shape});
  } else if (!ctx.unscheduled) {
    // Built-in schedule: a register tile of up to two channel vectors by up to 4 columns,
    // the taps (unrolled when 3x3 or smaller) and input channels around it, parallel over
    // output rows.
    // Two vectors only where they divide the channels: a guarded tail inside the register
    // tile leaves the whole tile without vectors.
    const int lanes = channel_lanes(out_channels);
    const int vectors = out_channels % (2 * lanes) == 0 ? 2 : 1;
    const int columns = largest_divisor(out.shape[2], 4);
    Var mo("mo"), mi("mi"), mv("mv"), xo("xo"), xi("xi");
    acc.compute_root().vectorize(m, lanes, TailStrategy::GuardWithIf).parallel(oy);
    Halide::Stage update = acc.update();
    update.split(m, mo, mi, lanes * vectors, TailStrategy::GuardWithIf)
        .split(mi, mv, mi, lanes)
        .split(ox, xo, xi, columns)
        .reorder(mi, mv, xi, r.x, r.y, r.z, mo, xo, oy, n)
        .vectorize(mi)
        .unroll(mv)
        .unroll(xi)
        .parallel(oy);
    if (kh * kw <= 9) update.unroll(r.x).unroll(r.y);
  }
  const bool has_bias = ctx.has_input(2);
  const TensorFunc bias = has_bias ? ctx.input(2) : TensorFunc{};
  return {define_tensor(stage_name(ctx, "out"), out.dtype, out.shape, [&](const std::vector<Expr> &i) {
    Expr v = acc(i[3], i[2], i[1], i[0]);
    if (has_bias) v = v + Halide::cast(acc_type, bias.at({i[3]}));
    return v;
  })};
}

}  // namespace

void register_conv_nhwc_compute(ComputeRegistry &r) { r.add(kConvNhwcOp, conv_nhwc_rule); }

}  // namespace tessel
