// Compute rules for reductions (Reduce*), ArgMax/ArgMin and CumSum. Each folds its input
// in an intermediate compute_root Func with an RDom; the output Func stays pure so the
// default schedule applies to it. Float16 accumulates in float32.
#include <Halide.h>

#include <cmath>

#include "compute/op_compute.h"
#include "graph/infer/reduce_axes.h"

namespace tessel {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::Internal::make_one;
using Halide::Internal::make_zero;
using Halide::select;

/// Work (output elements times reduced elements) below which threads cost more than they save.
constexpr int64_t kParallelWork = 1 << 15;

/// Which input axes a Reduce* node reduces, read as inference reads them (graph/infer/reduce_axes.h).
std::vector<bool> reduced_axes(const ComputeContext &ctx, int rank) {
  const std::vector<int64_t> input_axes = ctx.attrs().has("axes") ? std::vector<int64_t>{} : ctx.ints_value(1);
  Result<std::vector<bool>> mask = reduced_axis_mask(ctx.attrs(), input_axes, rank);
  if (!mask) ctx.fail(mask.error().message);
  return std::move(mask).value();
}

/// Folds a tensor of shape `in_shape` over the axes in `mask`. Returns a Func over the kept
/// axes (ONNX order, as TensorFunc::at expects) whose value starts at `init` and becomes
/// step(value, index) for every reduced position, in row-major order. When a reduced axis
/// is empty, the fold is skipped: the value stays `init` (an RDom cannot have extent 0).
using FoldStep = std::function<std::vector<Expr>(const std::vector<Expr> &acc, const std::vector<Expr> &in_index)>;

TensorFunc fold_axes(bool scheduled, const std::string &name, const Shape &in_shape, const std::vector<bool> &mask,
                     const std::vector<Expr> &init, const FoldStep &step) {
  const int rank = static_cast<int>(in_shape.size());
  TensorFunc acc;
  acc.func = Func(halide_name(name));
  std::vector<Halide::Var> kept_vars;  // ONNX order
  Halide::Region reduced_ranges;
  std::vector<int> reduced_axes;  // Halide order: innermost first, so loops run row-major
  int64_t reduced_count = 1;
  for (int d = 0; d < rank; ++d) {
    if (mask[d]) {
      reduced_count *= in_shape[d];
    } else {
      kept_vars.emplace_back("k" + std::to_string(d));
      acc.shape.push_back(in_shape[d]);
    }
  }
  for (int d = rank - 1; d >= 0; --d) {
    if (!mask[d]) continue;
    reduced_axes.push_back(d);
    reduced_ranges.emplace_back(0, static_cast<int>(in_shape[d]));
  }
  std::vector<Halide::Var> halide_vars(kept_vars.rbegin(), kept_vars.rend());
  std::vector<Expr> halide_args(halide_vars.begin(), halide_vars.end());
  const bool is_tuple = init.size() > 1;
  if (is_tuple) acc.func(halide_vars) = Halide::Tuple(init);
  else acc.func(halide_vars) = init[0];
  if (scheduled) acc.func.compute_root();
  if (reduced_count == 0) return acc;

  std::vector<Expr> in_index(rank);
  Halide::RDom r;
  if (!reduced_ranges.empty()) {
    r = Halide::RDom(reduced_ranges, halide_name(name + "_r"));
    for (size_t k = 0; k < reduced_axes.size(); ++k) in_index[reduced_axes[k]] = r[static_cast<int>(k)];
  }
  for (int d = 0, k = 0; d < rank; ++d)
    if (!mask[d]) in_index[d] = kept_vars[k++];
  std::vector<Expr> current;
  if (is_tuple) {
    for (size_t i = 0; i < init.size(); ++i) current.push_back(acc.func(halide_args)[static_cast<int>(i)]);
  } else {
    current.push_back(acc.func(halide_args));
  }
  std::vector<Expr> next = step(current, in_index);
  if (is_tuple) acc.func(halide_args) = Halide::Tuple(next);
  else acc.func(halide_args) = next[0];

  // The kept loops may run inside the reduction loops, vectorized where the innermost kept
  // axis is the input's contiguous one.
  if (scheduled)
    schedule_independent_fold(acc.func.update(), kept_vars, acc.shape, r, rank > 0 && !mask[rank - 1] && !reduced_ranges.empty(),
                            reduced_count);
  return acc;
}

/// The kept entries of a full input index (drops the reduced axes).
std::vector<Expr> kept_index(const std::vector<Expr> &in_index, const std::vector<bool> &mask) {
  std::vector<Expr> kept;
  for (size_t d = 0; d < in_index.size(); ++d)
    if (!mask[d]) kept.push_back(in_index[d]);
  return kept;
}

/// Maps an output index to the kept index of the fold (keepdims leaves size-1 axes in place).
std::vector<Expr> fold_index(const std::vector<Expr> &out_index, const std::vector<bool> &mask, bool keepdims) {
  return keepdims ? kept_index(out_index, mask) : out_index;
}

/// The identity of max (lowest) or min (highest) in type t: infinities for floats.
Expr extreme_value(Halide::Type t, bool lowest) {
  if (t.is_bool()) return lowest ? Halide::Internal::const_false() : Halide::Internal::const_true();
  if (t.is_float()) return Halide::cast(t, Expr(lowest ? -INFINITY : INFINITY));
  return lowest ? t.min() : t.max();
}

/// max/min that let NaN win, as numpy's reductions do.
Expr nan_max(Expr acc, Expr v) {
  if (!acc.type().is_float()) return acc.type().is_bool() ? (acc || v) : Halide::max(acc, v);
  return select(acc > v || Halide::is_nan(acc), acc, v);
}
Expr nan_min(Expr acc, Expr v) {
  if (!acc.type().is_float()) return acc.type().is_bool() ? (acc && v) : Halide::min(acc, v);
  return select(acc < v || Halide::is_nan(acc), acc, v);
}


/// Type of the running value: float32 for float16, double for integer results that go
/// through real math (mean, roots, logs), the element type otherwise.
Halide::Type accumulator_type(ReduceKind kind, DType dtype) {
  if (dtype_is_float(dtype)) return math_type(dtype);
  if (dtype == DType::Bool) return Halide::Bool();
  switch (kind) {
    case ReduceKind::Mean: case ReduceKind::L2: case ReduceKind::LogSum: case ReduceKind::LogSumExp:
      return Halide::Float(64);
    default:
      return halide_type(dtype);
  }
}

std::vector<TensorFunc> compute_reduce(const ComputeContext &ctx, ReduceKind kind) {
  const TensorFunc &in = ctx.input(0);
  const TensorType &out = ctx.output_type(0);
  const int rank = in.rank();
  const std::vector<bool> mask = reduced_axes(ctx, rank);
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  const Halide::Type acc_type = accumulator_type(kind, in.dtype);
  if (in.dtype == DType::Bool && kind != ReduceKind::Max && kind != ReduceKind::Min)
    ctx.fail("bool input is only supported by ReduceMax and ReduceMin");
  int64_t count = 1;
  for (int d = 0; d < rank; ++d)
    if (mask[d]) count *= in.shape[d];
  auto read = [&](const std::vector<Expr> &i) { return Halide::cast(acc_type, in.at(i)); };

  // LogSumExp subtracts the running maximum first so exp cannot overflow.
  TensorFunc shift;
  if (kind == ReduceKind::LogSumExp) {
    TensorFunc max_fold = fold_axes(!ctx.unscheduled, ctx.node.name + "_max", in.shape, mask, {extreme_value(acc_type, true)},
                                    [&](const std::vector<Expr> &acc, const std::vector<Expr> &i) {
                                      return std::vector<Expr>{nan_max(acc[0], read(i))};
                                    });
    // An infinite (or empty) maximum would turn exp(x - max) into NaN: shift by 0 instead.
    shift = define_tensor(ctx.node.name + "_shift", DType::Float64, max_fold.shape, [&](const std::vector<Expr> &i) {
      Expr m = max_fold.at(i);
      return select(Halide::is_finite(m), m, make_zero(acc_type));
    });
    if (!ctx.unscheduled) shift.func.compute_root();
  }

  Expr init = make_zero(acc_type);
  if (kind == ReduceKind::Prod) init = make_one(acc_type);
  if (kind == ReduceKind::Max) init = extreme_value(acc_type, true);
  if (kind == ReduceKind::Min) init = extreme_value(acc_type, false);

  TensorFunc fold = fold_axes(!ctx.unscheduled, ctx.node.name + "_fold", in.shape, mask, {init},
                              [&](const std::vector<Expr> &acc, const std::vector<Expr> &i) {
    Expr x = read(i);
    Expr a = acc[0];
    Expr next;
    switch (kind) {
      case ReduceKind::Max: next = nan_max(a, x); break;
      case ReduceKind::Min: next = nan_min(a, x); break;
      case ReduceKind::Prod: next = a * x; break;
      case ReduceKind::L1: next = a + (acc_type.is_uint() ? x : Halide::cast(acc_type, Halide::abs(x))); break;
      case ReduceKind::L2: case ReduceKind::SumSquare: next = a + x * x; break;
      case ReduceKind::LogSumExp: next = a + Halide::exp(x - Halide::cast(acc_type, shift.at(kept_index(i, mask)))); break;
      default: next = a + x; break;
    }
    return std::vector<Expr>{next};
  });

  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &o) {
    const std::vector<Expr> k = fold_index(o, mask, keepdims);
    Expr v = fold.at(k);
    switch (kind) {
      case ReduceKind::Mean:
        // The empty mean is 0/0: NaN for floats (said outright, as Halide folds x/0 to 0);
        // integers have no NaN, so give 0.
        if (count == 0)
          return dtype_is_float(in.dtype) ? Halide::cast(acc_type, Expr(NAN)) : make_zero(acc_type);
        v = v / Halide::cast(acc_type, Expr(static_cast<double>(count)));
        break;
      case ReduceKind::L2: v = Halide::sqrt(v); break;
      case ReduceKind::LogSum: v = Halide::log(v); break;
      case ReduceKind::LogSumExp: v = Halide::cast(acc_type, shift.at(k)) + Halide::log(v); break;
      default: break;
    }
    return cast_to(out.dtype, v);
  })};
}

/// ArgMax / ArgMin: index of the first (or last) extreme element; NaN counts as the
/// extreme, as numpy's argmax/argmin treat it.
std::vector<TensorFunc> compute_arg_reduce(const ComputeContext &ctx, bool is_max) {
  const TensorFunc &in = ctx.input(0);
  const TensorType &out = ctx.output_type(0);
  const int rank = in.rank();
  int64_t axis = ctx.attrs().get_int("axis", 0);
  if (axis < 0) axis += rank;
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  const bool select_last = ctx.attrs().get_int("select_last_index", 0) != 0;
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[axis] = true;
  const Halide::Type value_type = dtype_is_float(in.dtype) ? math_type(in.dtype) : halide_type(in.dtype);

  // The running index starts at -1, meaning "no element seen yet".
  TensorFunc fold = fold_axes(!ctx.unscheduled, ctx.node.name + "_fold", in.shape, mask, {make_zero(value_type), Expr(-1)},
                              [&](const std::vector<Expr> &acc, const std::vector<Expr> &i) {
    Expr v = Halide::cast(value_type, in.at(i)), best = acc[0], best_index = acc[1];
    Expr better = is_max ? (select_last ? v >= best : v > best) : (select_last ? v <= best : v < best);
    if (value_type.is_float()) {
      const Expr v_nan = Halide::is_nan(v), best_nan = Halide::is_nan(best);
      better = select_last ? (v_nan || (!best_nan && better)) : (!best_nan && (v_nan || better));
    }
    Expr take = best_index < 0 || better;
    return std::vector<Expr>{select(take, v, best), select(take, Halide::cast(Halide::Int(32), i[axis]), best_index)};
  });
  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &o) {
    const std::vector<Expr> k = fold_index(o, mask, keepdims);
    return Halide::cast(Halide::Int(64), fold.func(std::vector<Expr>(k.rbegin(), k.rend()))[1]);
  })};
}

/// CumSum as a scan along the axis in "scan order" (reversed for reverse=1); exclusive
/// shifts the summed element by one position.
std::vector<TensorFunc> compute_cumsum(const ComputeContext &ctx) {
  const TensorFunc &in = ctx.input(0);
  const TensorType &out = ctx.output_type(0);
  const int rank = in.rank();
  const std::vector<int64_t> axis_value = ctx.ints_value(1);
  if (axis_value.size() != 1) ctx.fail("axis must hold one value");
  int64_t axis = axis_value[0];
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const bool exclusive = ctx.attrs().get_int("exclusive", 0) != 0;
  const bool reverse = ctx.attrs().get_int("reverse", 0) != 0;
  const int64_t n = in.shape[axis];
  const Halide::Type acc_type = dtype_is_float(in.dtype) ? math_type(in.dtype) : halide_type(in.dtype);

  // Input element at scan position t (with the other axes from `index`).
  auto source = [&](std::vector<Expr> index, Expr t) {
    index[axis] = reverse ? Expr(static_cast<int>(n - 1)) - t : t;
    return Halide::cast(acc_type, in.at(index));
  };
  // What scan position t adds: its own element, or the previous one when exclusive.
  auto term = [&](const std::vector<Expr> &index, Expr t) {
    if (!exclusive) return source(index, t);
    return select(t == 0, make_zero(acc_type), source(index, clamp_index(t - 1, n)));
  };

  std::vector<Halide::Var> vars = make_vars(rank, "c");
  std::vector<Expr> index = to_exprs(vars);
  auto halide_order = [](std::vector<Expr> onnx_index) {
    return std::vector<Expr>(onnx_index.rbegin(), onnx_index.rend());
  };
  Func scan(halide_name(ctx.node.name + "_scan"));
  scan(halide_order(index)) = term(index, vars[axis]);
  if (!ctx.unscheduled) scan.compute_root();
  if (n > 1) {
    Halide::RDom r(1, static_cast<int>(n - 1), halide_name(ctx.node.name + "_r"));
    std::vector<Expr> at_r = index, before_r = index;
    at_r[axis] = r;
    before_r[axis] = r - 1;
    scan(halide_order(at_r)) = scan(halide_order(before_r)) + term(index, r);
    // Lines along the axis are independent: run the innermost other axis inside the scan
    // loop (vectorized) and spread the outermost across threads.
    Halide::Stage update = scan.update();
    if (!ctx.unscheduled && axis != rank - 1 && in.shape[rank - 1] >= 8) {
      update.reorder(vars[rank - 1], r.x);
      update.vectorize(vars[rank - 1], 8, Halide::TailStrategy::GuardWithIf);
    }
    if (!ctx.unscheduled && axis != 0 && in.shape[0] > 1 && shape_numel(in.shape) >= kParallelWork)
      update.parallel(vars[0]);
  }
  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &o) {
    std::vector<Expr> at = o;
    if (reverse) at[axis] = Expr(static_cast<int>(n - 1)) - o[axis];
    return scan(halide_order(at));
  })};
}

}  // namespace

void register_reduction_compute(ComputeRegistry &r) {
  for (const auto &[op, kind] : reduce_op_kinds()) {
    const ReduceKind k = kind;
    r.add(op, [k](const ComputeContext &ctx) { return compute_reduce(ctx, k); });
  }
  r.add("ArgMax", [](const ComputeContext &ctx) { return compute_arg_reduce(ctx, true); });
  r.add("ArgMin", [](const ComputeContext &ctx) { return compute_arg_reduce(ctx, false); });
  r.add("CumSum", compute_cumsum);
}

}  // namespace tessel
