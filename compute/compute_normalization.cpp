// Compute rules for normalization ops (BatchNormalization, InstanceNormalization,
// LayerNormalization, MeanVarianceNormalization, LRN) and the softmax family (Softmax,
// LogSoftmax, Hardmax). Statistics are reductions computed into their own buffers
// (compute_root, scheduled here); the outputs stay pure so the default schedule
// vectorizes and parallelizes them. Float16 math runs in float32.
#include <Halide.h>

#include <cctype>
#include <cmath>

#include "compute/root_reduction.h"

namespace tessel {

using Halide::Expr;

namespace {


/// A reduction of a tensor over some of its axes; `reduced[a]` marks the folded axes.
struct AxisReduction {
  Halide::Func func;
  std::vector<bool> reduced;

  /// The result for the element at `index` of the reduced tensor (reduced axes ignored).
  Expr at(const std::vector<Expr> &index, int tuple_element = -1) const {
    std::vector<Expr> kept;
    for (size_t a = 0; a < reduced.size(); ++a)
      if (!reduced[a]) kept.push_back(index[a]);
    return read_root(func, kept, tuple_element);
  }
};

using AxisUpdate = std::function<std::vector<Expr>(const std::vector<Expr> &index, const std::vector<Expr> &acc)>;
using Merge = std::function<std::vector<Expr>(const std::vector<Expr> &a, const std::vector<Expr> &b)>;

std::vector<Expr> add_merge(const std::vector<Expr> &a, const std::vector<Expr> &b) { return {a[0] + b[0]}; }
std::vector<Expr> max_merge(const std::vector<Expr> &a, const std::vector<Expr> &b) {
  return {Halide::max(a[0], b[0])};
}

/// Folds a tensor over the axes marked in `reduced`; `merge` (for associative folds) lets
/// a reduction over the innermost axis run across vector lanes.
AxisReduction reduce_axes(bool scheduled, const std::string &name, const Shape &shape, const std::vector<bool> &reduced,
                          std::vector<Expr> init, AxisUpdate update, Merge merge = nullptr) {
  RootReduction spec;
  spec.scheduled = scheduled;
  spec.name = name;
  for (size_t a = 0; a < shape.size(); ++a) (reduced[a] ? spec.reduce : spec.kept).push_back(shape[a]);
  spec.init = std::move(init);
  spec.vectorize_kept_inner = !shape.empty() && !reduced.back();
  spec.merge = std::move(merge);
  spec.update = [reduced, update](const std::vector<Expr> &kept, const std::vector<Expr> &r,
                                  const std::vector<Expr> &acc) {
    std::vector<Expr> index;
    size_t ki = 0, ri = 0;
    for (bool red : reduced) index.push_back(red ? r[ri++] : kept[ki++]);
    return update(index, acc);
  };
  return {build_root_reduction(spec), reduced};
}

/// Element count of the reduced axes.
int64_t reduced_count(const Shape &shape, const std::vector<bool> &reduced) {
  int64_t n = 1;
  for (size_t a = 0; a < shape.size(); ++a)
    if (reduced[a]) n *= shape[a];
  return n;
}

Expr as_math(const TensorFunc &t, const std::vector<Expr> &index, Halide::Type math) {
  return Halide::cast(math, t.at(index));
}

Expr math_const(Halide::Type t, double v) { return Halide::cast(t, Expr(v)); }

/// Mean and (population) variance over the reduced axes, by two passes for accuracy.
struct Moments {
  AxisReduction mean, var;
};

Moments moments(bool scheduled, const std::string &name, const TensorFunc &x, const std::vector<bool> &reduced, Halide::Type math) {
  const int64_t count = reduced_count(x.shape, reduced);
  AxisReduction sum = reduce_axes(scheduled,
      name + "_sum", x.shape, reduced, {math_const(math, 0)},
      [&](const std::vector<Expr> &i, const std::vector<Expr> &acc) {
        return std::vector<Expr>{acc[0] + as_math(x, i, math)};
      },
      add_merge);
  // The mean as its own stage keeps the division out of the variance's inner loop.
  std::vector<Halide::Var> kv =
      make_vars(static_cast<size_t>(std::count(reduced.begin(), reduced.end(), false)), name + "_m");
  Halide::Func mean(name + "_mean");
  std::vector<Halide::Var> mean_args(kv.rbegin(), kv.rend());
  mean(mean_args) = sum.func(mean_args) / math_const(math, static_cast<double>(count));
  if (scheduled) mean.compute_root();
  AxisReduction mean_r{mean, reduced};
  AxisReduction sq = reduce_axes(scheduled,
      name + "_sqsum", x.shape, reduced, {math_const(math, 0)},
      [&](const std::vector<Expr> &i, const std::vector<Expr> &acc) {
        Expr d = as_math(x, i, math) - mean_r.at(i);
        return std::vector<Expr>{acc[0] + d * d};
      },
      add_merge);
  Halide::Func var(name + "_var");
  var(mean_args) = sq.func(mean_args) / math_const(math, static_cast<double>(count));
  if (scheduled) var.compute_root();
  return {mean_r, AxisReduction{var, reduced}};
}

void require_nonempty(const ComputeContext &ctx, const Shape &shape, const std::vector<bool> &reduced) {
  for (size_t a = 0; a < shape.size(); ++a)
    if (reduced[a] && shape[a] == 0)
      ctx.fail("cannot normalize over empty axis " + std::to_string(a) + " of input " + shape_to_string(shape));
}

int64_t normalized_axis(const ComputeContext &ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<TensorFunc> batch_norm(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0);
  const Halide::Type math = math_type(x.dtype);
  const float epsilon = ctx.attrs().get_float("epsilon", 1e-5f);
  const size_t rank = x.shape.size();
  const bool training = ctx.opset >= 14 && ctx.attrs().get_int("training_mode", 0) != 0;
  const TensorFunc &scale = ctx.input(1), &bias = ctx.input(2), &in_mean = ctx.input(3), &in_var = ctx.input(4);
  // Statistics are per channel, or per [C, D1, ...] element when spatial=0 (opset < 9).
  const bool per_element = scale.rank() > 1;
  auto param_index = [&](const std::vector<Expr> &i) {
    return per_element ? std::vector<Expr>(i.begin() + 1, i.end()) : std::vector<Expr>{i[1]};
  };
  const Expr eps = math_const(math, epsilon);
  const std::string name = halide_name(ctx.node.name);

  if (!training) {
    // y = (x - mean) * (scale / sqrt(var + eps)) + bias, the factor once per channel.
    const size_t prank = per_element ? rank - 1 : 1;
    std::vector<Halide::Var> pv = make_vars(prank, name + "_c");
    std::vector<Halide::Var> pargs(pv.rbegin(), pv.rend());
    std::vector<Expr> pidx = to_exprs(pv);
    Halide::Func factor(name + "_factor");
    factor(pargs) = as_math(scale, pidx, math) / Halide::sqrt(as_math(in_var, pidx, math) + eps);
    if (!ctx.unscheduled) factor.compute_root();
    TensorFunc y = define_tensor(name, x.dtype, x.shape, [&](const std::vector<Expr> &i) {
      std::vector<Expr> p = param_index(i);
      return (as_math(x, i, math) - as_math(in_mean, p, math)) * factor(std::vector<Expr>(p.rbegin(), p.rend())) +
             as_math(bias, p, math);
    });
    return {y};
  }

  if (per_element) ctx.fail("training mode needs per-channel statistics");
  std::vector<bool> reduced(rank, true);
  reduced[1] = false;
  require_nonempty(ctx, x.shape, reduced);
  Moments m = moments(!ctx.unscheduled, name, x, reduced, math);
  TensorFunc y = define_tensor(name, x.dtype, x.shape, [&](const std::vector<Expr> &i) {
    return (as_math(x, i, math) - m.mean.at(i)) / Halide::sqrt(m.var.at(i) + eps) * as_math(scale, {i[1]}, math) +
           as_math(bias, {i[1]}, math);
  });
  std::vector<TensorFunc> outs{y};
  const double momentum = ctx.attrs().get_float("momentum", 0.9f);
  const AxisReduction *stats[] = {&m.mean, &m.var};
  const TensorFunc *running[] = {&in_mean, &in_var};
  for (size_t o = 1; o < ctx.output_types.size() && o < 3; ++o) {
    const TensorType &t = ctx.output_type(o);
    outs.push_back(define_tensor(name + (o == 1 ? "_running_mean" : "_running_var"), t.dtype, t.shape,
                                 [&](const std::vector<Expr> &i) {
                                   Expr stat = read_root(stats[o - 1]->func, {i[0]});
                                   return as_math(*running[o - 1], i, math) * math_const(math, momentum) +
                                          stat * math_const(math, 1.0 - momentum);
                                 }));
  }
  return outs;
}

std::vector<TensorFunc> instance_norm(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0), &scale = ctx.input(1), &bias = ctx.input(2);
  const Halide::Type math = math_type(x.dtype);
  const Expr eps = math_const(math, ctx.attrs().get_float("epsilon", 1e-5f));
  std::vector<bool> reduced(x.shape.size(), true);
  reduced[0] = reduced[1] = false;
  require_nonempty(ctx, x.shape, reduced);
  const std::string name = halide_name(ctx.node.name);
  Moments m = moments(!ctx.unscheduled, name, x, reduced, math);
  Halide::Func inv(name + "_scaled_inv_std");
  Halide::Var c("c"), n("n");
  inv(c, n) = as_math(scale, {c}, math) / Halide::sqrt(m.var.func(c, n) + eps);
  if (!ctx.unscheduled) inv.compute_root();
  return {define_tensor(name, x.dtype, x.shape, [&](const std::vector<Expr> &i) {
    return (as_math(x, i, math) - m.mean.at(i)) * inv(i[1], i[0]) + as_math(bias, {i[1]}, math);
  })};
}

std::vector<TensorFunc> layer_norm(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0);
  const int64_t rank = x.rank();
  const int64_t axis = normalized_axis(ctx, ctx.attrs().get_int("axis", -1), rank);
  const DType stash = ctx.output_types.size() > 1                  ? ctx.output_type(1).dtype
                      : ctx.attrs().get_int("stash_type", 1) == 11 ? DType::Float64
                                                                   : DType::Float32;
  const Halide::Type math = stash == DType::Float64 ? Halide::Float(64) : Halide::Float(32);
  const Expr eps = math_const(math, ctx.attrs().get_float("epsilon", 1e-5f));
  std::vector<bool> reduced(rank, false);
  for (int64_t a = axis; a < rank; ++a) reduced[a] = true;
  require_nonempty(ctx, x.shape, reduced);
  const std::string name = halide_name(ctx.node.name);
  Moments m = moments(!ctx.unscheduled, name, x, reduced, math);
  const size_t kept = static_cast<size_t>(axis);
  std::vector<Halide::Var> kv = make_vars(kept, name + "_s");
  std::vector<Halide::Var> kargs(kv.rbegin(), kv.rend());
  Halide::Func inv_std(name + "_inv_std");
  inv_std(kargs) = math_const(math, 1) / Halide::sqrt(m.var.func(kargs) + eps);
  if (!ctx.unscheduled) inv_std.compute_root();
  AxisReduction inv{inv_std, reduced};

  const TensorFunc &scale = ctx.input(1);
  const bool has_bias = ctx.has_input(2);
  std::vector<TensorFunc> outs{define_tensor(name, x.dtype, x.shape, [&](const std::vector<Expr> &i) {
    Expr y = (as_math(x, i, math) - m.mean.at(i)) * inv.at(i) * Halide::cast(math, broadcast_read(scale, i));
    if (has_bias) y = y + Halide::cast(math, broadcast_read(ctx.input(2), i));
    return y;
  })};
  const AxisReduction *stats[] = {&m.mean, &inv};
  for (size_t o = 1; o < ctx.output_types.size() && o < 3; ++o) {
    const TensorType &t = ctx.output_type(o);
    outs.push_back(define_tensor(name + (o == 1 ? "_mean_out" : "_inv_std_out"), t.dtype, t.shape,
                                 [&](const std::vector<Expr> &i) { return stats[o - 1]->at(i); }));
  }
  return outs;
}

std::vector<TensorFunc> mean_variance_norm(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0);
  const Halide::Type math = math_type(x.dtype);
  const int64_t rank = x.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : ctx.attrs().get_ints("axes", {0, 2, 3})) reduced[normalized_axis(ctx, a, rank)] = true;
  require_nonempty(ctx, x.shape, reduced);
  const std::string name = halide_name(ctx.node.name);
  Moments m = moments(!ctx.unscheduled, name, x, reduced, math);
  // ONNX's function body: (x - E[x]) / (sqrt(Var[x]) + 1e-9).
  return {define_tensor(name, x.dtype, x.shape, [&](const std::vector<Expr> &i) {
    return (as_math(x, i, math) - m.mean.at(i)) / (Halide::sqrt(m.var.at(i)) + math_const(math, 1e-9));
  })};
}

std::vector<TensorFunc> lrn(const ComputeContext &ctx) {
  const TensorFunc &x = ctx.input(0);
  const Halide::Type math = math_type(x.dtype);
  const int64_t size = ctx.attrs().get_int("size");
  const double alpha = ctx.attrs().get_float("alpha", 1e-4f), beta = ctx.attrs().get_float("beta", 0.75f),
               bias = ctx.attrs().get_float("bias", 1.0f);
  const int64_t before = (size - 1) / 2, channels = x.shape[1];
  const std::string name = halide_name(ctx.node.name);
  auto square = [&](std::vector<Expr> i, Expr channel) {
    Expr inside = channel >= 0 && channel < static_cast<int>(channels);
    i[1] = clamp_index(channel, channels);
    Expr v = as_math(x, i, math);
    return Halide::select(inside, v * v, math_const(math, 0));
  };
  std::function<Expr(const std::vector<Expr> &)> window_sum;
  if (size <= 32) {
    window_sum = [&](const std::vector<Expr> &i) {
      Expr s = math_const(math, 0);
      for (int64_t k = 0; k < size; ++k) s = s + square(i, i[1] + static_cast<int>(k - before));
      return s;
    };
  } else {
    RootReduction spec;
    spec.name = name + "_square_sum";
    spec.kept = x.shape;
    spec.reduce = {size};
    spec.init = {math_const(math, 0)};
    spec.vectorize_kept_inner = true;
    spec.scheduled = !ctx.unscheduled;
    spec.update = [&](const std::vector<Expr> &i, const std::vector<Expr> &r, const std::vector<Expr> &acc) {
      return std::vector<Expr>{acc[0] + square(i, i[1] + r[0] - static_cast<int>(before))};
    };
    Halide::Func sums = build_root_reduction(spec);
    window_sum = [sums](const std::vector<Expr> &i) { return read_root(sums, i); };
  }
  return {define_tensor(name, x.dtype, x.shape, [&](const std::vector<Expr> &i) {
    Expr base = math_const(math, bias) + math_const(math, alpha / static_cast<double>(size)) * window_sum(i);
    Expr denom = beta == 0.75 ? Halide::sqrt(base * Halide::sqrt(base)) : Halide::pow(base, math_const(math, beta));
    return as_math(x, i, math) / denom;
  })};
}

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

std::vector<TensorFunc> softmax_family(const ComputeContext &ctx, SoftmaxKind kind) {
  const TensorFunc &x = ctx.input(0);
  const Halide::Type math = math_type(x.dtype);
  const int64_t rank = x.rank();
  const int64_t axis = normalized_axis(ctx, ctx.attrs().get_int("axis", ctx.opset >= 13 ? -1 : 1), rank);
  // Opset 13 works along one axis; older opsets flatten [axis, rank) into one row.
  std::vector<bool> reduced(rank, false);
  for (int64_t a = axis; a < (ctx.opset >= 13 ? axis + 1 : rank); ++a) reduced[a] = true;
  require_nonempty(ctx, x.shape, reduced);
  const std::string name = halide_name(ctx.node.name);
  const TensorType &out = ctx.output_type(0);
  const bool scheduled = !ctx.unscheduled;

  if (kind == SoftmaxKind::Hardmax) {
    // Row-major position inside the reduced block, to find the first maximum.
    auto position = [&](const std::vector<Expr> &i) {
      Expr p = 0;
      for (int64_t a = 0; a < rank; ++a)
        if (reduced[a]) p = p * static_cast<int>(x.shape[a]) + i[a];
      return p;
    };
    AxisReduction best = reduce_axes(scheduled,
        name + "_argmax", x.shape, reduced, {Halide::cast(math, lowest_value(x.dtype)), Expr(-1)},
        [&](const std::vector<Expr> &i, const std::vector<Expr> &acc) {
          Expr v = as_math(x, i, math);
          Expr take = v > acc[0] || acc[1] < 0;
          return std::vector<Expr>{Halide::select(take, v, acc[0]), Halide::select(take, position(i), acc[1])};
        });
    return {define_tensor(name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      return Halide::select(position(i) == best.at(i, 1), math_const(math, 1), math_const(math, 0));
    })};
  }

  AxisReduction max = reduce_axes(scheduled,
      name + "_max", x.shape, reduced, {Halide::cast(math, lowest_value(x.dtype))},
      [&](const std::vector<Expr> &i, const std::vector<Expr> &acc) {
        return std::vector<Expr>{Halide::max(acc[0], as_math(x, i, math))};
      },
      max_merge);
  AxisReduction sum = reduce_axes(scheduled,
      name + "_expsum", x.shape, reduced, {math_const(math, 0)},
      [&](const std::vector<Expr> &i, const std::vector<Expr> &acc) {
        return std::vector<Expr>{acc[0] + Halide::exp(as_math(x, i, math) - max.at(i))};
      },
      add_merge);
  if (kind == SoftmaxKind::LogSoftmax) {
    const size_t kept = static_cast<size_t>(std::count(reduced.begin(), reduced.end(), false));
    std::vector<Halide::Var> kv = make_vars(kept, name + "_l");
    std::vector<Halide::Var> kargs(kv.rbegin(), kv.rend());
    Halide::Func shift(name + "_log_norm");  // max + log(sum), once per row
    shift(kargs) = max.func(kargs) + Halide::log(sum.func(kargs));
    if (!ctx.unscheduled) shift.compute_root();
    AxisReduction shift_r{shift, reduced};
    return {define_tensor(name, out.dtype, out.shape,
                          [&](const std::vector<Expr> &i) { return as_math(x, i, math) - shift_r.at(i); })};
  }
  return {define_tensor(name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
    return Halide::exp(as_math(x, i, math) - max.at(i)) / sum.at(i);
  })};
}

}  // namespace

void register_normalization_compute(ComputeRegistry &r) {
  r.add("BatchNormalization", batch_norm);
  r.add("InstanceNormalization", instance_norm);
  r.add("LayerNormalization", layer_norm);
  r.add("MeanVarianceNormalization", mean_variance_norm);
  r.add("LRN", lrn);
  for (SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax, SoftmaxKind::Hardmax}) {
    const char *op = kind == SoftmaxKind::Softmax      ? "Softmax"
                     : kind == SoftmaxKind::LogSoftmax ? "LogSoftmax"
                                                       : "Hardmax";
    r.add(op, [kind](const ComputeContext &ctx) { return softmax_family(ctx, kind); });
  }
}

}  // namespace tessel
