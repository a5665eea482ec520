// Compute rules for normalization ops (BatchNormalization, InstanceNormalization,
// LayerNormalization, MeanVarianceNormalization, LRN) and the softmax family (Softmax,
// LogSoftmax, Hardmax). Statistics are reductions computed into their own buffers
// (compute_root, scheduled here); the outputs stay pure so the default schedule
// vectorizes and parallelizes them. Float16 math runs in float32.
#include <Halide.h>

#include <cctype>
#include <cmath>

#include "schedule/op_compute.h"

namespace tessel {

using Halide::Expr;

/// A fold over a box, computed into its own buffer: func(kept) = fold over r of update.
/// Used by the pooling rules too (compute_pool.cpp declares it).
struct RootReduction {
  std::string name;
  Shape kept;                   // extents of the result, ONNX order
  std::vector<int64_t> reduce;  // extents of the reduction domain, ONNX order (>= 1 each)
  std::vector<Expr> init;       // one value, or several for a Tuple (argmax)
  /// New accumulator values from the kept index, the reduction index and the current values.
  std::function<std::vector<Expr>(const std::vector<Expr> &kept, const std::vector<Expr> &r,
                                  const std::vector<Expr> &acc)>
      update;
  /// The reads are contiguous along the innermost kept axis, so vectorize across it.
  bool vectorize_kept_inner = false;
  /// Combines two partial accumulators (associative and commutative). When set, the
  /// innermost reduction axis (contiguous in memory) is split across vector lanes.
  std::function<std::vector<Expr>(const std::vector<Expr> &a, const std::vector<Expr> &b)> merge;
};

/// Builds and schedules a RootReduction; read it with func(kept index reversed).
/// The result is a pure Func computed at root over the kept axes, vectorized and
/// parallelized; each block of it folds into a small accumulator computed inside that
/// block, so the fold's state stays in registers.
Halide::Func build_root_reduction(const RootReduction &spec) {
  const size_t k = spec.kept.size(), nr = spec.reduce.size();
  std::vector<Halide::Var> onnx_vars = make_vars(k, spec.name + "_k");
  std::vector<Halide::Var> vars(onnx_vars.rbegin(), onnx_vars.rend());  // Halide order
  std::vector<Expr> kept_index = to_exprs(onnx_vars);
  const bool tuple = spec.init.size() > 1;
  const int width = spec.init[0].type().bits() == 64 ? 8 : 16;
  const int64_t inner_extent = nr > 0 ? spec.reduce.back() : 0;
  const bool lanes = spec.merge && !spec.vectorize_kept_inner && inner_extent >= 2 * width;

  auto assign = [tuple](Halide::Func &g, const std::vector<Expr> &args, const std::vector<Expr> &values) {
    if (tuple)
      g(args) = Halide::Tuple(values);
    else
      g(args) = values[0];
  };
  auto current = [tuple, &spec](Halide::Func &g, const std::vector<Expr> &args) {
    std::vector<Expr> values;
    if (!tuple) return std::vector<Expr>{g(args)};
    for (size_t j = 0; j < spec.init.size(); ++j) values.push_back(g(args)[static_cast<int>(j)]);
    return values;
  };
  std::vector<Expr> args(vars.begin(), vars.end());

  // The reduction domain, innermost axis first; with lanes its innermost axis counts chunks.
  Halide::Region box;
  for (size_t i = 0; i < nr; ++i) {
    int64_t extent = spec.reduce[nr - 1 - i];
    if (lanes && i == 0) extent = (extent + width - 1) / width;
    box.emplace_back(0, static_cast<int>(extent));
  }
  Halide::RDom r;
  std::vector<Expr> r_index;
  if (nr > 0) {
    r = Halide::RDom(box, spec.name + "_r");
    for (size_t i = 0; i < nr; ++i) r_index.push_back(r[static_cast<int>(nr - 1 - i)]);
  }

  Halide::Func acc(spec.name + "_acc"), partial(spec.name + "_lanes");
  Halide::Var lane(spec.name + "_lane");
  if (!lanes) {
    assign(acc, args, spec.init);
    assign(acc, args, spec.update(kept_index, r_index, current(acc, args)));
  } else {
    // partial(lane, kept) folds elements lane, lane + width, ... of the innermost axis.
    std::vector<Expr> largs{lane};
    largs.insert(largs.end(), args.begin(), args.end());
    assign(partial, largs, spec.init);
    Expr position = r_index.back() * width + lane;
    const bool ragged = inner_extent % width != 0;
    std::vector<Expr> index = r_index;
    index.back() = ragged ? Halide::min(position, static_cast<int>(inner_extent - 1)) : position;
    std::vector<Expr> before = current(partial, largs);
    std::vector<Expr> next = spec.update(kept_index, index, before);
    if (ragged)
      for (size_t j = 0; j < next.size(); ++j)
        next[j] = Halide::select(position < static_cast<int>(inner_extent), next[j], before[j]);
    assign(partial, largs, next);
    std::vector<Expr> first{Expr(0)}, others;
    first.insert(first.end(), args.begin(), args.end());
    assign(acc, args, current(partial, first));
    Halide::RDom other_lanes(1, width - 1, spec.name + "_l");
    others.push_back(other_lanes);
    others.insert(others.end(), args.begin(), args.end());
    assign(acc, args, spec.merge(current(acc, args), current(partial, others)));
  }

  Halide::Func f(spec.name);
  if (tuple)
    f(args) = Halide::Tuple(acc(args));
  else
    f(args) = acc(args);
  f.compute_root();
  if (k == 0) {
    acc.compute_root();
    if (lanes) partial.compute_root().vectorize(lane).update().reorder(lane, r[0]).vectorize(lane);
    return f;
  }

  int64_t work = shape_numel(spec.kept);
  for (int64_t e : spec.reduce) work *= e;
  const bool parallel = work >= 65536 && shape_numel(spec.kept) > 1;
  if (spec.vectorize_kept_inner && spec.kept.back() >= width) {
    // Each block is one row of the innermost kept axis: the reduction loops run around
    // a vector loop along that row, which reads the input densely.
    f.vectorize(vars[0], width, Halide::TailStrategy::GuardWithIf);
    if (k >= 2) {
      Halide::Var block = vars[1];
      for (size_t d = 2; d < k; ++d) {
        Halide::Var fused(block.name() + "_f" + std::to_string(d));
        f.fuse(block, vars[d], fused);
        block = fused;
      }
      if (parallel) f.parallel(block);
      acc.compute_at(f, block);
    } else {
      acc.compute_root();
    }
    acc.vectorize(vars[0], width, Halide::TailStrategy::GuardWithIf);
    Halide::Stage u = acc.update(0);
    std::vector<Halide::VarOrRVar> order{vars[0]};
    for (size_t i = 0; i < nr; ++i) order.push_back(r[static_cast<int>(i)]);
    u.reorder(order);
    u.vectorize(vars[0], width, Halide::TailStrategy::GuardWithIf);
    return f;
  }
  // Otherwise each block is one kept element, folded in registers.
  Halide::Var block = vars[0];
  for (size_t d = 1; d < k; ++d) {
    Halide::Var fused(block.name() + "_f" + std::to_string(d));
    f.fuse(block, vars[d], fused);
    block = fused;
  }
  if (parallel) f.parallel(block);
  acc.compute_at(f, block);
  if (lanes) {
    partial.compute_at(f, block).vectorize(lane);
    std::vector<Halide::VarOrRVar> order{lane};
    for (size_t i = 0; i < nr; ++i) order.push_back(r[static_cast<int>(i)]);
    partial.update().reorder(order).vectorize(lane);
  }
  return f;
}

/// The node's name made safe for Halide Funcs ('.' is Halide's separator; exported ONNX
/// names such as "/layer1/conv.0/MaxPool" are full of them).
std::string func_name(const ComputeContext &ctx) {
  std::string name = ctx.node.name.empty() ? ctx.node.op_type : ctx.node.name;
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (std::isdigit(static_cast<unsigned char>(name[0]))) name = "n" + name;
  return name;
}

/// Wraps a compute rule so that its outputs declare their exact dense shapes to Halide:
/// with constant extents, bounds and vector tails of the stages inside become constants.
/// (The executor always passes dense outputs of the inferred shape.)
ComputeFn with_pinned_outputs(ComputeFn rule) {
  return [rule](const ComputeContext &ctx) {
    std::vector<TensorFunc> outs = rule(ctx);
    for (TensorFunc &t : outs) {
      if (!t.defined() || t.func.outputs() != 1) continue;
      int64_t stride = 1;
      for (int d = 0; d < t.rank(); ++d) {  // Halide dim d is ONNX axis rank-1-d
        const int64_t extent = t.shape[t.rank() - 1 - d];
        t.func.output_buffer().dim(d).set_bounds(0, static_cast<int>(extent)).set_stride(static_cast<int>(stride));
        stride *= std::max<int64_t>(extent, 1);
      }
    }
    return outs;
  };
}

namespace {

/// Reads a RootReduction result at its kept index (ONNX order).
Expr read_root(const Halide::Func &f, const std::vector<Expr> &kept, int tuple_element = -1) {
  std::vector<Expr> args(kept.rbegin(), kept.rend());
  if (tuple_element >= 0) return f(args)[tuple_element];
  return f(args);
}

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
AxisReduction reduce_axes(const std::string &name, const Shape &shape, const std::vector<bool> &reduced,
                          std::vector<Expr> init, AxisUpdate update, Merge merge = nullptr) {
  RootReduction spec;
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

Moments moments(const std::string &name, const TensorFunc &x, const std::vector<bool> &reduced, Halide::Type math) {
  const int64_t count = reduced_count(x.shape, reduced);
  AxisReduction sum = reduce_axes(
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
  mean.compute_root();
  AxisReduction mean_r{mean, reduced};
  AxisReduction sq = reduce_axes(
      name + "_sqsum", x.shape, reduced, {math_const(math, 0)},
      [&](const std::vector<Expr> &i, const std::vector<Expr> &acc) {
        Expr d = as_math(x, i, math) - mean_r.at(i);
        return std::vector<Expr>{acc[0] + d * d};
      },
      add_merge);
  Halide::Func var(name + "_var");
  var(mean_args) = sq.func(mean_args) / math_const(math, static_cast<double>(count));
  var.compute_root();
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
  const std::string name = func_name(ctx);

  if (!training) {
    // y = (x - mean) * (scale / sqrt(var + eps)) + bias, the factor once per channel.
    const size_t prank = per_element ? rank - 1 : 1;
    std::vector<Halide::Var> pv = make_vars(prank, name + "_c");
    std::vector<Halide::Var> pargs(pv.rbegin(), pv.rend());
    std::vector<Expr> pidx = to_exprs(pv);
    Halide::Func factor(name + "_factor");
    factor(pargs) = as_math(scale, pidx, math) / Halide::sqrt(as_math(in_var, pidx, math) + eps);
    factor.compute_root();
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
  Moments m = moments(name, x, reduced, math);
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
  const std::string name = func_name(ctx);
  Moments m = moments(name, x, reduced, math);
  Halide::Func inv(name + "_scaled_inv_std");
  Halide::Var c("c"), n("n");
  inv(c, n) = as_math(scale, {c}, math) / Halide::sqrt(m.var.func(c, n) + eps);
  inv.compute_root();
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
  const std::string name = func_name(ctx);
  Moments m = moments(name, x, reduced, math);
  const size_t kept = static_cast<size_t>(axis);
  std::vector<Halide::Var> kv = make_vars(kept, name + "_s");
  std::vector<Halide::Var> kargs(kv.rbegin(), kv.rend());
  Halide::Func inv_std(name + "_inv_std");
  inv_std(kargs) = math_const(math, 1) / Halide::sqrt(m.var.func(kargs) + eps);
  inv_std.compute_root();
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
  const std::string name = func_name(ctx);
  Moments m = moments(name, x, reduced, math);
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
  const std::string name = func_name(ctx);
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
  const std::string name = func_name(ctx);
  const TensorType &out = ctx.output_type(0);

  if (kind == SoftmaxKind::Hardmax) {
    // Row-major position inside the reduced block, to find the first maximum.
    auto position = [&](const std::vector<Expr> &i) {
      Expr p = 0;
      for (int64_t a = 0; a < rank; ++a)
        if (reduced[a]) p = p * static_cast<int>(x.shape[a]) + i[a];
      return p;
    };
    AxisReduction best = reduce_axes(
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

  AxisReduction max = reduce_axes(
      name + "_max", x.shape, reduced, {Halide::cast(math, lowest_value(x.dtype))},
      [&](const std::vector<Expr> &i, const std::vector<Expr> &acc) {
        return std::vector<Expr>{Halide::max(acc[0], as_math(x, i, math))};
      },
      max_merge);
  AxisReduction sum = reduce_axes(
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
    shift.compute_root();
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
  r.add("BatchNormalization", with_pinned_outputs(batch_norm));
  r.add("InstanceNormalization", with_pinned_outputs(instance_norm));
  r.add("LayerNormalization", with_pinned_outputs(layer_norm));
  r.add("MeanVarianceNormalization", with_pinned_outputs(mean_variance_norm));
  r.add("LRN", with_pinned_outputs(lrn));
  for (SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax, SoftmaxKind::Hardmax}) {
    const char *op = kind == SoftmaxKind::Softmax      ? "Softmax"
                     : kind == SoftmaxKind::LogSoftmax ? "LogSoftmax"
                                                       : "Hardmax";
    r.add(op, with_pinned_outputs([kind](const ComputeContext &ctx) { return softmax_family(ctx, kind); }));
  }
}

}  // namespace tessel
