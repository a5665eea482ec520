// Compute rules for the Winograd convolution's transforms (graph/passes/winograd_conv.h). Each is
// an internal stage computed at root with its own schedule: the 36 transform points (or the
// 16 positions of an output tile) are unrolled, so every coefficient is a constant and the
// zero ones vanish, and whole rows of tiles are vectorized. The rules' outputs are pure
// copies, so the default or tuned schedule applies to them, with the conv's epilogue.
#include <Halide.h>

#include <functional>

#include "compute/op_compute.h"
#include "graph/passes/winograd_conv.h"

namespace tessel {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::TailStrategy;
using Halide::Var;

constexpr int kLanes = 16;  // f32 lanes of an AVX-512 vector

/// Vector width for rows of `n` tiles: the widest power of two up to kLanes that fits in n
/// (4 when n is narrower). A vector wider than the row would run every lane under a guard.
int tile_vector_width(int64_t n) {
  int v = 4;
  while (v < kLanes && 2 * v <= n) v *= 2;
  return v;
}

/// Rows at least one vector wide end in a vector shifted back over the row's last lanes
/// (recomputing a few tiles); narrower rows run under a guard.
TailStrategy tile_row_tail(int64_t n, int vector) {
  return n >= vector ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf;
}

const WinogradTransform &transform_of(const ComputeContext &ctx) {
  const WinogradTransform *t = winograd_transform(ctx.attrs().get_int(kWinogradTileAttr, 0));
  if (!t) ctx.fail("tile must be 2 or 4");
  return *t;
}

/// Sum over i < count of coefficient(i) x term(i), leaving out the zero coefficients and
/// multiplying by none that is 1: both transforms are built of such sums.
Expr constant_weighted_sum(int count, const std::function<double(int)> &coefficient,
                           const std::function<Expr(int)> &term) {
  Expr sum;
  for (int i = 0; i < count; ++i) {
    const double c = coefficient(i);
    if (c == 0) continue;
    Expr e = term(i);
    e = c == 1 ? e : Halide::cast(e.type(), static_cast<float>(c)) * e;
    sum = sum.defined() ? sum + e : e;
  }
  return sum;
}

/// The same over a, b < extent.
Expr constant_weighted_sum(int extent, const std::function<double(int, int)> &coefficient,
                           const std::function<Expr(int, int)> &term) {
  return constant_weighted_sum(
      extent * extent, [&](int i) { return coefficient(i / extent, i % extent); },
      [&](int i) { return term(i / extent, i % extent); });
}

std::string stage_name(const ComputeContext &ctx, const std::string &suffix) {
  return halide_name(ctx.node.name.empty() ? "winograd" : ctx.node.name) + "_" + suffix;
}

/// V[n, k, c, ty, tx] = (B^T d B)[k / s, k % s] for the s x s input window d at
/// (m ty - 1, m tx - 1), zero outside the input (s = m + 2).
std::vector<TensorFunc> winograd_input_rule(const ComputeContext &ctx) {
  const WinogradTransform &t = transform_of(ctx);
  const TensorFunc &x = ctx.input(0);
  const Shape &out_shape = ctx.output_type(0).shape;
  const int64_t height = x.shape[2], width = x.shape[3], tw = out_shape[4];
  Var px("px"), py("py"), c("c"), n("n");
  // The input with its zero border, over every window the tiles reach.
  Func padded(stage_name(ctx, "padded"));
  Expr inside = px >= 1 && px <= static_cast<int>(width) && py >= 1 && py <= static_cast<int>(height);
  Expr value = x.at({n, c, clamp_index(py - 1, height), clamp_index(px - 1, width)});
  padded(px, py, c, n) = Halide::select(inside, value, Halide::Internal::make_zero(value.type()));

  // B^T d B in two passes, rows then columns (s^2 x (nonzeros of a B^T row) terms per tile
  // each, instead of s^2 x their square): first every input row's s window entries
  // transformed along x, then s of those rows combined along y.
  Var tx("tx"), ty("ty"), k("k"), nu("nu");
  std::vector<Expr> row_points;
  for (int j = 0; j < t.input_tile; ++j)
    row_points.push_back(constant_weighted_sum(
        t.input_tile, [&](int b) { return t.BT(j, b); }, [&](int b) { return padded(tx * t.tile + b, py, c, n); }));
  Func rows(stage_name(ctx, "rows"));
  rows(tx, nu, py, c, n) = Halide::mux(nu, row_points);
  std::vector<Expr> points;
  for (int xi = 0; xi < t.input_tile; ++xi)
    for (int j = 0; j < t.input_tile; ++j)
      points.push_back(constant_weighted_sum(
          t.input_tile, [&](int a) { return t.BT(xi, a); }, [&](int a) { return rows(tx, j, ty * t.tile + a, c, n); }));
  Func tiles(stage_name(ctx, "tiles"));
  tiles(tx, ty, c, k, n) = Halide::mux(k, points);
  if (!ctx.unscheduled) {
    const int vec = tile_vector_width(tw);
    tiles.compute_root()
        .bound(k, 0, t.points())
        .reorder(tx, k, ty, c, n)
        .unroll(k)
        .vectorize(tx, vec, tile_row_tail(tw, vec))
        .parallel(c);
    // One channel at a time, by the thread that transforms it: its padded plane and its
    // row transforms stay in L1/L2 instead of going through memory first.
    rows.compute_at(tiles, c)
        .bound(nu, 0, t.input_tile)
        .reorder(tx, nu, py, c, n)
        .unroll(nu)
        .vectorize(tx, vec, tile_row_tail(tw, vec));
    padded.compute_at(tiles, c).vectorize(px, kLanes, TailStrategy::GuardWithIf);
  }
  return {define_tensor(ctx.node.name, ctx.output_type(0).dtype, out_shape, [&](const std::vector<Expr> &i) {
    return tiles(i[4], i[3], i[2], i[1], i[0]);
  })};
}

/// Y[n, m, y, x] = (A^T p A)[y % t, x % t] (+ bias[m]) for the s x s products p of tile
/// (y / t, x / t), t the output tile edge and s = t + 2.
std::vector<TensorFunc> winograd_output_rule(const ComputeContext &ctx) {
  const WinogradTransform &t = transform_of(ctx);
  const TensorFunc &products = ctx.input(0);
  const Shape &out_shape = ctx.output_type(0).shape;
  const int64_t tw = products.shape[4];
  Var x("x"), y("y"), m("m"), n("n");
  Expr ty = y / t.tile, tx = x / t.tile;
  std::vector<Expr> positions;
  for (int i = 0; i < t.tile; ++i)
    for (int j = 0; j < t.tile; ++j) {
      Expr sum = constant_weighted_sum(
          t.input_tile, [&](int a, int b) { return t.AT(i, a) * t.AT(j, b); },
          [&](int a, int b) { return products.at({n, Expr(a * t.input_tile + b), m, ty, tx}); });
      if (ctx.has_input(1)) sum = sum + ctx.input(1).at({m});
      positions.push_back(sum);
    }
  Func tiles(stage_name(ctx, "tiles"));
  tiles(x, y, m, n) = Halide::mux((y % t.tile) * t.tile + x % t.tile, positions);
  if (!ctx.unscheduled) {
    Var txo("txo"), xi("xi"), tyo("tyo"), yi("yi");
    const int vec = tile_vector_width(tw);
    tiles.compute_root()
        .bound(x, 0, static_cast<int>(tw * t.tile))
        .split(x, txo, xi, t.tile)
        .split(y, tyo, yi, t.tile)
        .reorder(xi, yi, txo, tyo, m, n)
        .unroll(xi)
        .unroll(yi)
        .vectorize(txo, vec, tile_row_tail(tw, vec))
        .parallel(m);
  }
  return {define_tensor(ctx.node.name, ctx.output_type(0).dtype, out_shape, [&](const std::vector<Expr> &i) {
    return tiles(i[3], i[2], i[1], i[0]);
  })};
}

}  // namespace

void register_winograd_compute(ComputeRegistry &r) {
  r.add(kWinogradInputOp, winograd_input_rule);
  r.add(kWinogradOutputOp, winograd_output_rule);
}

}  // namespace tessel
