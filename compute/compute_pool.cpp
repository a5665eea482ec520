// Compute rules for pooling: MaxPool (with its optional Indices output), AveragePool,
// LpPool and their Global forms. Small windows (the 2x2/3x3 pools of CNNs) become one pure
// expression per output element (the argmax too) that the default schedule vectorizes;
// large windows and global pools are reductions computed into their own buffer.
#include <Halide.h>

#include <cmath>

#include "compute/root_reduction.h"
#include "graph/infer/pool_geometry.h"

namespace tessel {

using Halide::Expr;


namespace {

/// Windows with at most this many elements are unrolled into one expression.
constexpr int64_t kMaxUnrolledWindow = 64;

/// The pool's window geometry, resolved as inference resolves it (graph/infer/pool_geometry.h).
PoolGeometry checked_pool_geometry(const ComputeContext &ctx, const Shape &input_shape) {
  Result<PoolGeometry> g = pool_geometry(ctx.attrs(), Shape(input_shape.begin() + 2, input_shape.end()));
  if (!g) ctx.fail(g.error().message);
  return std::move(g).value();
}

enum class PoolKind { Max, Average, Lp };

/// Reads input elements of windows; taps in the padding read the padding value. The
/// border test is marked likely(), so Halide splits off the border iterations and the
/// interior ones load densely without clamps.
struct WindowReader {
  const TensorFunc &x;
  const PoolGeometry &g;
  Halide::Type math;
  Expr padding;
  std::vector<bool> may_leave;  // per spatial axis: some window reaches outside the input

  WindowReader(const TensorFunc &x, const PoolGeometry &g, Halide::Type math, Expr padding)
      : x(x), g(g), math(math), padding(std::move(padding)) {
    for (size_t i = 0; i < g.in.size(); ++i) {
      const int64_t last = (g.out[i] - 1) * g.strides[i] - g.pad_begin[i] + (g.kernel[i] - 1) * g.dilations[i];
      may_leave.push_back(g.pad_begin[i] > 0 || last >= g.in[i]);
    }
  }

  /// Input position along spatial axis i of kernel tap k for output position o.
  Expr position(size_t i, Expr o, Expr k) const {
    return o * static_cast<int>(g.strides[i]) - static_cast<int>(g.pad_begin[i]) + k * static_cast<int>(g.dilations[i]);
  }

  /// The tap's input index (unclamped) and whether it lies inside the input.
  std::pair<std::vector<Expr>, Expr> tap(const std::vector<Expr> &out, const std::vector<Expr> &k) const {
    std::vector<Expr> index{out[0], out[1]};
    Expr inside = Halide::Internal::const_true();
    for (size_t i = 0; i < g.in.size(); ++i) {
      Expr p = position(i, out[i + 2], k[i]);
      if (may_leave[i]) inside = inside && p >= 0 && p < static_cast<int>(g.in[i]);
      index.push_back(p);
    }
    return {index, inside};
  }

  /// The tap's value in math type (floats widen, integers stay).
  Expr value(const std::vector<Expr> &out, const std::vector<Expr> &k) const {
    auto [index, inside] = tap(out, k);
    for (size_t i = 0; i < g.in.size(); ++i)
      if (may_leave[i]) index[i + 2] = clamp_index(index[i + 2], g.in[i]);
    Expr v = x.at(index);
    if (v.type().is_float()) v = Halide::cast(math, v);
    if (Halide::Internal::is_const_one(inside)) return v;
    return Halide::select(Halide::likely(inside), v, padding);
  }

  /// How many taps along axis i for output position o lie in [lo, hi).
  Expr taps_within(size_t i, Expr o, int64_t lo, int64_t hi) const {
    const int d = static_cast<int>(g.dilations[i]);
    Expr start = position(i, o, 0);
    // First k with start + k*d >= lo, last k with start + k*d <= hi - 1 (Halide's / floors).
    Expr first = Halide::max(0, (static_cast<int>(lo) - start + d - 1) / d);
    Expr last = Halide::min(static_cast<int>(g.kernel[i]) - 1, (static_cast<int>(hi) - 1 - start) / d);
    return Halide::max(0, last - first + 1);
  }
};

/// The accumulation of one pool kind: padding value, fold and finish.
struct PoolMath {
  PoolKind kind;
  Halide::Type type;  // accumulator type
  double p;           // LpPool's exponent (an int attribute; a float before opset 2)

  Expr padding() const {
    if (kind == PoolKind::Max) return type.is_float() ? Halide::cast(type, Expr(-INFINITY)) : type.min();
    return Halide::Internal::make_zero(type);
  }
  Expr term(Expr v) const {
    if (kind != PoolKind::Lp) return v;
    if (p == 1) return Halide::abs(v);
    if (p == 2) return v * v;
    return Halide::pow(Halide::abs(v), Halide::cast(type, Expr(p)));
  }
  Expr combine(Expr acc, Expr v) const { return kind == PoolKind::Max ? Halide::max(acc, v) : acc + v; }
  Expr finish(Expr acc, Expr count) const {
    if (kind == PoolKind::Average) return acc / Halide::cast(type, count);
    if (kind == PoolKind::Lp) {
      if (p == 1) return acc;
      if (p == 2) return Halide::sqrt(acc);
      return Halide::pow(acc, Halide::cast(type, Expr(1.0 / p)));
    }
    return acc;
  }
};

/// All kernel taps in row-major order.
std::vector<std::vector<int64_t>> window_taps(const std::vector<int64_t> &kernel) {
  std::vector<std::vector<int64_t>> taps{{}};
  for (int64_t extent : kernel) {
    std::vector<std::vector<int64_t>> next;
    for (const auto &t : taps)
      for (int64_t k = 0; k < extent; ++k) {
        next.push_back(t);
        next.back().push_back(k);
      }
    taps = std::move(next);
  }
  return taps;
}

/// A tap's kernel offsets as expressions.
std::vector<Expr> tap_exprs(const std::vector<int64_t> &tap) {
  std::vector<Expr> k;
  for (int64_t offset : tap) k.push_back(static_cast<int>(offset));
  return k;
}

/// Flat input position (what MaxPool's Indices hold) of an input index, in int32 (Halide
/// buffers stay below 2^31 elements) so the argmax vectorizes well; widened at the end.
Expr flat_index(const std::vector<Expr> &index, const Shape &shape, bool column_major_spatial) {
  Expr flat = index[0] * static_cast<int>(shape[1]) + index[1];
  const size_t rank = shape.size();
  if (column_major_spatial) {
    Expr spatial = 0;
    int64_t spatial_numel = 1;
    for (size_t a = rank; a-- > 2;) spatial = spatial * static_cast<int>(shape[a]) + index[a];
    for (size_t a = 2; a < rank; ++a) spatial_numel *= shape[a];
    return flat * static_cast<int>(spatial_numel) + spatial;
  }
  for (size_t a = 2; a < rank; ++a) flat = flat * static_cast<int>(shape[a]) + index[a];
  return flat;
}

/// The flat input index of the first maximum over the window taps, as one expression.
/// The running maximum and index are Let-bound at each step so the expression stays
/// linear in the window size (a plain DAG would be walked as an exponential tree).
Expr unrolled_argmax(const WindowReader &reader, const std::vector<Expr> &o,
                     const std::vector<std::vector<int64_t>> &taps, bool column_major, Expr lowest) {
  using Halide::Internal::Let;
  using Halide::Internal::Variable;
  std::vector<std::pair<std::string, Expr>> steps;
  Expr best = lowest, index = Expr(-1);
  for (const auto &t : taps) {
    const std::vector<Expr> k = tap_exprs(t);
    auto [position, inside] = reader.tap(o, k);
    Expr v = reader.value(o, k);
    Expr take = inside && (v > best || index < 0);  // strict: the first maximum wins
    const std::string b = Halide::Internal::unique_name('b'), i = Halide::Internal::unique_name('a');
    steps.emplace_back(b, Halide::select(take, v, best));
    steps.emplace_back(i, Halide::select(take, flat_index(position, reader.x.shape, column_major), index));
    best = Variable::make(v.type(), b);
    index = Variable::make(Halide::Int(32), i);
  }
  Expr body = index;
  for (size_t s = steps.size(); s-- > 0;) body = Let::make(steps[s].first, steps[s].second, body);
  return body;
}

std::vector<TensorFunc> pool(const ComputeContext &ctx, PoolKind kind) {
  const TensorFunc &x = ctx.input(0);
  const PoolGeometry g = checked_pool_geometry(ctx, x.shape);
  const TensorType &out = ctx.output_type(0);
  Shape out_shape{x.shape[0], x.shape[1]};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  if (out_shape != out.shape)
    ctx.fail("pool output " + shape_to_string(out_shape) + " disagrees with inference " + shape_to_string(out.shape));

  const Halide::Type math = dtype_is_float(x.dtype) ? math_type(x.dtype) : halide_type(x.dtype);
  const PoolMath pm{kind, math, ctx.attrs().get_float("p", 2.0f)};
  const WindowReader reader(x, g, math, pm.padding());
  const bool count_pad = ctx.attrs().get_int("count_include_pad", 0) != 0;
  const size_t n = g.in.size();
  const bool want_indices = kind == PoolKind::Max && ctx.output_types.size() > 1;

  // Divisor of an average: taps inside the input, or inside the padded input.
  auto count = [&](const std::vector<Expr> &o) {
    Expr c = 1;
    for (size_t i = 0; i < n; ++i) {
      if (!reader.may_leave[i]) {
        c = c * static_cast<int>(g.kernel[i]);
        continue;
      }
      const int64_t lo = count_pad ? -g.pad_begin[i] : 0, hi = count_pad ? g.in[i] + g.pad_end[i] : g.in[i];
      c = c * reader.taps_within(i, o[i + 2], lo, hi);
    }
    return c;
  };

  int64_t window = 1;
  for (int64_t k : g.kernel) window *= k;
  const std::string name = halide_name(ctx.node.name);
  const bool column_major = ctx.attrs().get_int("storage_order", 0) == 1;
  if (window <= kMaxUnrolledWindow) {
    // One pure expression per output element: no intermediate buffer.
    const auto taps = window_taps(g.kernel);
    std::vector<TensorFunc> outs{define_tensor(name, out.dtype, out.shape, [&](const std::vector<Expr> &o) {
      Expr acc;
      for (const auto &t : taps) {
        Expr v = pm.term(reader.value(o, tap_exprs(t)));
        acc = acc.defined() ? pm.combine(acc, v) : v;
      }
      return pm.finish(acc, count(o));
    })};
    outs[0].windowed = true;
    if (want_indices) {
      const TensorType &t = ctx.output_type(1);
      outs.push_back(define_tensor(name + "_indices", t.dtype, t.shape, [&](const std::vector<Expr> &o) {
        return unrolled_argmax(reader, o, taps, column_major, pm.padding());
      }));
    }
    return outs;
  }

  RootReduction spec;
  spec.name = name + "_window";
  spec.kept = out.shape;
  spec.reduce = g.kernel;
  spec.vectorize_kept_inner = true;
  if (want_indices) {
    spec.init = {pm.padding(), Expr(-1)};
    spec.update = [&](const std::vector<Expr> &o, const std::vector<Expr> &k, const std::vector<Expr> &acc) {
      auto [index, inside] = reader.tap(o, k);
      Expr v = reader.value(o, k);
      // The first maximum in row-major window order wins; padding never does.
      Expr take = inside && (v > acc[0] || acc[1] < 0);
      return std::vector<Expr>{Halide::select(take, v, acc[0]),
                               Halide::select(take, flat_index(index, x.shape, column_major), acc[1])};
    };
  } else {
    spec.init = {kind == PoolKind::Max ? pm.padding() : Halide::Internal::make_zero(math)};
    spec.update = [&](const std::vector<Expr> &o, const std::vector<Expr> &k, const std::vector<Expr> &acc) {
      return std::vector<Expr>{pm.combine(acc[0], pm.term(reader.value(o, k)))};
    };
  }
  spec.scheduled = !ctx.unscheduled;
  Halide::Func acc = build_root_reduction(spec);
  auto read = [&](const std::vector<Expr> &o, int element) {
    std::vector<Expr> args(o.rbegin(), o.rend());
    return want_indices ? Expr(acc(args)[element]) : Expr(acc(args));
  };
  std::vector<TensorFunc> outs{define_tensor(
      name, out.dtype, out.shape, [&](const std::vector<Expr> &o) { return pm.finish(read(o, 0), count(o)); })};
  if (want_indices) {
    const TensorType &t = ctx.output_type(1);
    outs.push_back(
        define_tensor(name + "_indices", t.dtype, t.shape, [&](const std::vector<Expr> &o) { return read(o, 1); }));
  }
  return outs;
}

std::vector<TensorFunc> global_pool(const ComputeContext &ctx, PoolKind kind) {
  const TensorFunc &x = ctx.input(0);
  const TensorType &out = ctx.output_type(0);
  const Halide::Type math = dtype_is_float(x.dtype) ? math_type(x.dtype) : halide_type(x.dtype);
  const PoolMath pm{kind, math, ctx.attrs().get_float("p", 2.0f)};
  std::vector<int64_t> spatial(x.shape.begin() + 2, x.shape.end());
  const int64_t count = shape_numel(spatial);
  if (count == 0) ctx.fail("cannot pool over empty spatial dimensions " + shape_to_string(x.shape));
  const std::string name = halide_name(ctx.node.name);
  RootReduction spec;
  spec.name = name + "_global";
  spec.kept = {x.shape[0], x.shape[1]};
  spec.reduce = spatial;
  spec.init = {kind == PoolKind::Max ? pm.padding() : Halide::Internal::make_zero(math)};
  spec.update = [&](const std::vector<Expr> &nc, const std::vector<Expr> &r, const std::vector<Expr> &acc) {
    std::vector<Expr> index = nc;
    index.insert(index.end(), r.begin(), r.end());
    Expr v = x.at(index);
    if (v.type().is_float()) v = Halide::cast(math, v);
    return std::vector<Expr>{pm.combine(acc[0], pm.term(v))};
  };
  spec.merge = [pm](const std::vector<Expr> &a, const std::vector<Expr> &b) {
    return std::vector<Expr>{pm.combine(a[0], b[0])};
  };
  spec.scheduled = !ctx.unscheduled;
  Halide::Func acc = build_root_reduction(spec);
  return {define_tensor(name, out.dtype, out.shape, [&](const std::vector<Expr> &o) {
    return pm.finish(acc(o[1], o[0]), Expr(static_cast<int>(count)));
  })};
}

}  // namespace

void register_pool_compute(ComputeRegistry &r) {
  const std::pair<const char *, PoolKind> kinds[] = {
      {"Max", PoolKind::Max}, {"Average", PoolKind::Average}, {"Lp", PoolKind::Lp}};
  for (const auto &[prefix, kind] : kinds) {
    const PoolKind k = kind;
    r.add(std::string(prefix) + "Pool", [k](const ComputeContext &ctx) { return pool(ctx, k); });
    r.add(std::string("Global") + prefix + "Pool",
          [k](const ComputeContext &ctx) { return global_pool(ctx, k); });
  }
}

}  // namespace tessel
