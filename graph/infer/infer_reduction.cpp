// Inference for reductions (Reduce*), ArgMax/ArgMin, CumSum and TopK.
#include <algorithm>

#include "graph/infer/reduce_axes.h"
#include "graph/ir/op_registry.h"

namespace tessel {

namespace {

const char *const kReduceOps[] = {"ReduceSum", "ReduceMean",   "ReduceMax",       "ReduceMin",      "ReduceProd",
                                  "ReduceL1",  "ReduceL2",     "ReduceLogSum",    "ReduceLogSumExp", "ReduceSumSquare"};

/// Axes a Reduce* node reduces (see reduced_axis_mask); input 1 is read only when it holds
/// them, so an unknown value of an input the node ignores cannot make inference give up.
std::vector<bool> reduced_axes(const InferenceContext &ctx, int64_t rank) {
  const std::vector<int64_t> input_axes = ctx.attrs().has("axes") ? std::vector<int64_t>{} : ctx.ints_value(1);
  Result<std::vector<bool>> mask = reduced_axis_mask(ctx.attrs(), input_axes, rank);
  if (!mask) ctx.fail(mask.error().message);
  return std::move(mask).value();
}

std::vector<TensorType> infer_reduce(const InferenceContext &ctx) {
  const TensorType &data = ctx.input(0);
  if (data.dtype == DType::String) ctx.fail("string tensors cannot be reduced");
  const int64_t rank = ctx.rank(0);
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  std::vector<bool> mask = reduced_axes(ctx, rank);
  return {make_type(data.dtype, reduced_shape(data.shape, mask, keepdims))};
}

std::vector<TensorType> infer_arg_reduce(const InferenceContext &ctx) {
  const TensorType &data = ctx.input(0);
  const int64_t rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input must have rank >= 1, got a scalar");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), rank);
  if (data.shape[axis] == 0) ctx.fail("axis " + std::to_string(axis) + " has size 0; there is no extreme element");
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[axis] = true;
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  return {make_type(DType::Int64, reduced_shape(data.shape, mask, keepdims))};
}

std::vector<TensorType> infer_cumsum(const InferenceContext &ctx) {
  const TensorType &data = ctx.input(0);
  const int64_t rank = ctx.rank(0);
  const TensorType &axis_type = ctx.input(1);
  if (axis_type.dtype != DType::Int32 && axis_type.dtype != DType::Int64)
    ctx.fail("axis must be int32 or int64, got " + dtype_name(axis_type.dtype));
  // The output shape does not depend on the axis, so only check it when it is known.
  if (ctx.input_values.size() > 1 && ctx.input_values[1] != nullptr) {
    const Tensor &axis = *ctx.input_values[1];
    if (axis.numel() != 1) ctx.fail("axis must hold one value, got shape " + shape_to_string(axis.shape()));
    if (rank == 0) ctx.fail("input must have rank >= 1, got a scalar");
    normalize_axis(ctx, axis.element_as_int64(0), rank);
  }
  return {make_type(data.dtype, data.shape)};
}

std::vector<TensorType> infer_topk(const InferenceContext &ctx) {
  const TensorType &data = ctx.input(0);
  const int64_t rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input must have rank >= 1, got a scalar");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", -1), rank);
  int64_t k = 0;
  if (ctx.has_input(1)) {  // opset >= 10: K is a one-element int64 tensor
    const Tensor &k_value = ctx.value(1);
    if (k_value.numel() != 1) ctx.fail("K must hold one value, got shape " + shape_to_string(k_value.shape()));
    k = k_value.element_as_int64(0);
  } else if (ctx.attrs().has("k")) {
    k = ctx.attrs().get_int("k");
  } else {
    ctx.fail("K is missing (neither input 1 nor attribute k)");
  }
  if (k < 0) ctx.fail("K must be non-negative, got " + std::to_string(k));
  if (data.shape[axis] != kUnknownDim && k > data.shape[axis])
    ctx.fail("K = " + std::to_string(k) + " exceeds the size " + std::to_string(data.shape[axis]) + " of axis " +
             std::to_string(axis));
  Shape out = data.shape;
  out[axis] = k;
  return {make_type(data.dtype, out), make_type(DType::Int64, out)};
}

}  // namespace

void register_reduction_ops(OpRegistry &r) {
  for (const char *op : kReduceOps) r.add({op, infer_reduce, {1}, OpPattern::Reduction});
  r.add(with_output_dtype({"ArgMax", infer_arg_reduce, {}, OpPattern::Reduction}, always_dtype(DType::Int64)));
  r.add(with_output_dtype({"ArgMin", infer_arg_reduce, {}, OpPattern::Reduction}, always_dtype(DType::Int64)));
  r.add({"CumSum", infer_cumsum, {1}, OpPattern::Opaque});
  r.add(with_output_dtype({"TopK", infer_topk, {1}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t i) { return i == 0 ? ctx.input(0).dtype : DType::Int64; }));
}

}  // namespace tessel
