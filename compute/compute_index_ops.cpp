// Compute rules for data-dependent indexing: Gather, GatherElements, GatherND, the
// scatters and OneHot. Every index read from a tensor is wrapped (negative counts from the
// end) and clamped into range before it addresses data, because Halide checks input
// bounds at run time and ONNX leaves out-of-range indices undefined.
#include <Halide.h>

#include "compute/op_compute.h"

namespace tessel {
namespace {

using Halide::Expr;
using Halide::select;

using Index = std::vector<Expr>;

Expr int64_const(int64_t v) { return Halide::Internal::make_const(Halide::Int(64), v); }

/// An index value read from data, made safe to address an axis of `extent` elements.
Expr safe_index(Expr raw, int64_t extent) {
  Expr i = Halide::cast(Halide::Int(64), raw);
  i = select(i < 0, i + int64_const(extent), i);
  return Halide::cast(Halide::Int(32), clamp_index(i, extent));
}

Index halide_order(const Index &onnx_index) { return Index(onnx_index.rbegin(), onnx_index.rend()); }

int64_t attr_axis(const ComputeContext &ctx, int64_t rank) {
  int64_t axis = ctx.attrs().get_int("axis", 0);
  return axis < 0 ? axis + rank : axis;
}

std::vector<TensorFunc> gather(const ComputeContext &ctx) {
  const TensorFunc &data = ctx.input(0), &indices = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const int64_t axis = attr_axis(ctx, data.rank());
  const size_t q = indices.shape.size();
  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const Index &o) {
    // Output axes: data[:axis], indices[...], data[axis+1:].
    Index where_in_indices(o.begin() + axis, o.begin() + axis + q);
    Index at(o.begin(), o.begin() + axis);
    at.push_back(safe_index(indices.at(where_in_indices), data.shape[axis]));
    at.insert(at.end(), o.begin() + axis + q, o.end());
    return data.at(at);
  })};
}

std::vector<TensorFunc> gather_elements(const ComputeContext &ctx) {
  const TensorFunc &data = ctx.input(0), &indices = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const int64_t axis = attr_axis(ctx, data.rank());
  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const Index &o) {
    Index at = o;
    at[axis] = safe_index(indices.at(o), data.shape[axis]);
    return data.at(at);
  })};
}

std::vector<TensorFunc> gather_nd(const ComputeContext &ctx) {
  const TensorFunc &data = ctx.input(0), &indices = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const int64_t batch_dims = ctx.attrs().get_int("batch_dims", 0);
  const size_t q = indices.shape.size();
  const int64_t m = indices.shape.back();
  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const Index &o) {
    // Output axes: indices[:-1] (whose first batch_dims are data's), then data[batch_dims+m:].
    Index tuple_at(o.begin(), o.begin() + (q - 1));
    tuple_at.push_back(Expr(0));
    Index at(o.begin(), o.begin() + batch_dims);
    for (int64_t j = 0; j < m; ++j) {
      tuple_at.back() = Expr(static_cast<int>(j));
      at.push_back(safe_index(indices.at(tuple_at), data.shape[batch_dims + j]));
    }
    at.insert(at.end(), o.begin() + (q - 1), o.end());
    return data.at(at);
  })};
}

/// How an update meets the value already in the output.
Expr combine(const std::string &reduction, Expr current, Expr update, DType dtype) {
  if (reduction == "none") return update;
  if (dtype == DType::Bool) {  // add and max behave as or, mul and min as and
    return (reduction == "add" || reduction == "max") ? (current || update) : (current && update);
  }
  if (dtype_is_float(dtype)) {  // float16 accumulates in float32
    current = Halide::cast(math_type(dtype), current);
    update = Halide::cast(math_type(dtype), update);
  }
  Expr r;
  if (reduction == "add") r = current + update;
  else if (reduction == "mul") r = current * update;
  else if (reduction == "max") r = Halide::max(current, update);
  else r = Halide::min(current, update);
  return Halide::cast(halide_type(dtype), r);
}

/// Output = data, then one serial update over every element of `updates` (row-major, so
/// duplicate targets apply in order). target maps an updates index to an output index.
TensorFunc scatter(const ComputeContext &ctx, const TensorFunc &updates,
                   const std::function<Index(const Index &)> &target) {
  const TensorFunc &data = ctx.input(0);
  const TensorType &out_type = ctx.output_type(0);
  const std::string reduction = ctx.attrs().get_string("reduction", "none");
  TensorFunc out = define_tensor(ctx.node.name, out_type.dtype, out_type.shape,
                                 [&](const Index &o) { return data.at(o); });
  if (shape_numel(updates.shape) == 0) return out;  // nothing to scatter; RDoms cannot be empty
  const int rank = updates.rank();
  std::vector<Halide::Range> ranges;  // Halide order: innermost (last ONNX axis) first
  for (int a = rank - 1; a >= 0; --a) ranges.emplace_back(0, static_cast<int>(updates.shape[a]));
  if (ranges.empty()) ranges.emplace_back(0, 1);  // rank-0 updates: one element
  Halide::RDom r(ranges);
  Index u(rank);
  for (int a = 0; a < rank; ++a) u[a] = r[rank - 1 - a];
  const Index dest = target(u);
  out.func(halide_order(dest)) = combine(reduction, out.at(dest), updates.at(u), out_type.dtype);
  // Serial on purpose (duplicate targets must apply in order); says so to Halide, which
  // would otherwise warn once the default schedule touches the pure stage.
  out.func.update(0).unscheduled();
  return out;
}

std::vector<TensorFunc> scatter_elements(const ComputeContext &ctx) {
  const TensorFunc &data = ctx.input(0), &indices = ctx.input(1), &updates = ctx.input(2);
  const int64_t axis = attr_axis(ctx, data.rank());
  return {scatter(ctx, updates, [&](const Index &u) {
    Index dest = u;
    dest[axis] = safe_index(indices.at(u), data.shape[axis]);
    return dest;
  })};
}

std::vector<TensorFunc> scatter_nd(const ComputeContext &ctx) {
  const TensorFunc &data = ctx.input(0), &indices = ctx.input(1), &updates = ctx.input(2);
  const size_t q = indices.shape.size();
  const int64_t k = indices.shape.back();
  return {scatter(ctx, updates, [&](const Index &u) {
    // updates axes: indices[:-1], then data[k:].
    Index tuple_at(u.begin(), u.begin() + (q - 1));
    tuple_at.push_back(Expr(0));
    Index dest;
    for (int64_t j = 0; j < k; ++j) {
      tuple_at.back() = Expr(static_cast<int>(j));
      dest.push_back(safe_index(indices.at(tuple_at), data.shape[j]));
    }
    dest.insert(dest.end(), u.begin() + (q - 1), u.end());
    return dest;
  })};
}

std::vector<TensorFunc> one_hot(const ComputeContext &ctx) {
  const TensorFunc &indices = ctx.input(0), &values = ctx.input(2);
  const TensorType &out = ctx.output_type(0);
  const int64_t rank = indices.rank();
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < 0) axis += rank + 1;
  const int64_t depth = out.shape[axis];
  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const Index &o) {
    Index at(o.begin(), o.begin() + axis);
    at.insert(at.end(), o.begin() + axis + 1, o.end());
    // Float indices truncate toward zero; negatives count back from depth.
    Expr index = cast_to(DType::Int64, indices.at(at));
    index = select(index < 0, index + int64_const(depth), index);
    return select(index == Halide::cast(Halide::Int(64), o[axis]), values.at({1}), values.at({0}));
  })};
}

}  // namespace

void register_index_ops_compute(ComputeRegistry &r) {
  r.add("Gather", gather);
  r.add("GatherElements", gather_elements);
  r.add("GatherND", gather_nd);
  r.add("Scatter", scatter_elements);
  r.add("ScatterElements", scatter_elements);
  r.add("ScatterND", scatter_nd);
  r.add("OneHot", one_hot);
}

}  // namespace tessel
