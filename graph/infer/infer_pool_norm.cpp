// Inference for pooling (Max/Average/Lp, their Global forms) and normalization ops
// (BatchNormalization, InstanceNormalization, LayerNormalization, LRN,
// MeanVarianceNormalization) and the softmax family (Softmax, LogSoftmax, Hardmax).
#include "graph/infer/pool_geometry.h"
#include "graph/ir/int_list_text.h"
#include "graph/ir/op_registry.h"

namespace tessel {
namespace {

/// Shape of a rank >= 3 pool input ([N, C, spatial...]); fails for lower ranks.
const TensorType &pool_input(const InferenceContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!x.rank_known) throw UnknownValue{};
  if (x.shape.size() < 3)
    ctx.fail("input must be [N, C, D1, ...] with at least one spatial dimension, got " + shape_to_string(x.shape));
  return x;
}

void require_float(const InferenceContext &ctx, size_t i, const char *what) {
  DType t = ctx.input(i).dtype;
  if (!dtype_is_float(t)) ctx.fail(std::string(what) + " must be a float tensor, got " + dtype_name(t));
}

std::vector<TensorType> infer_pool(const InferenceContext &ctx) {
  const TensorType &x = pool_input(ctx);
  const bool is_max = ctx.node.op_type == "MaxPool";
  const DType t = x.dtype;
  if (!(dtype_is_float(t) || (is_max && (t == DType::Int8 || t == DType::UInt8))))
    ctx.fail("input type " + dtype_name(t) + " is not supported (" + (is_max ? "float, int8 or uint8" : "float") +
             " expected)");
  if (is_max && ctx.attrs().get_int("storage_order", 0) > 1) ctx.fail("storage_order must be 0 or 1");
  if (ctx.node.op_type == "LpPool" && ctx.attrs().get_float("p", 2.0f) < 1) ctx.fail("p must be at least 1");
  Shape spatial(x.shape.begin() + 2, x.shape.end());
  const Result<PoolGeometry> g = pool_geometry(ctx.attrs(), spatial);
  if (!g) ctx.fail(g.error().message);
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), g->out.begin(), g->out.end());
  std::vector<TensorType> types{make_type(t, out)};
  if (is_max && ctx.num_outputs > 1) types.push_back(make_type(DType::Int64, out));
  return types;
}

std::vector<TensorType> infer_global_pool(const InferenceContext &ctx) {
  const TensorType &x = pool_input(ctx);
  const bool is_max = ctx.node.op_type == "GlobalMaxPool";
  if (!(dtype_is_float(x.dtype) || (is_max && (x.dtype == DType::Int8 || x.dtype == DType::UInt8))))
    ctx.fail("input type " + dtype_name(x.dtype) + " is not supported");
  Shape out{x.shape[0], x.shape[1]};
  out.resize(x.shape.size(), 1);
  return {make_type(x.dtype, out)};
}

/// Fails unless input i (when known) has exactly the shape `want`.
void check_param_shape(const InferenceContext &ctx, size_t i, const Shape &want, const char *name) {
  if (!ctx.has_input(i)) return;
  const TensorType &p = ctx.input(i);
  if (!p.rank_known) return;
  bool match = p.shape.size() == want.size();
  for (size_t d = 0; match && d < want.size(); ++d)
    match = p.shape[d] == want[d] || p.shape[d] == kUnknownDim || want[d] == kUnknownDim;
  if (!match)
    ctx.fail(std::string(name) + " has shape " + shape_to_string(p.shape) + ", expected " + shape_to_string(want));
}

std::vector<TensorType> infer_batch_norm(const InferenceContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!x.rank_known) throw UnknownValue{};
  if (x.shape.size() < 2) ctx.fail("input must have rank >= 2 ([N, C, ...]), got " + shape_to_string(x.shape));
  require_float(ctx, 0, "X");
  const char *names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i) {
    if (!ctx.has_input(i)) ctx.fail(std::string("input ") + names[i] + " is missing");
    // Before opset 9, spatial=0 gives per-element statistics of shape [C, D1, ...].
    const bool per_element = ctx.opset < 9 && ctx.attrs().get_int("spatial", 1) == 0;
    Shape want = per_element ? Shape(x.shape.begin() + 1, x.shape.end()) : Shape{x.shape[1]};
    check_param_shape(ctx, i, want, names[i]);
  }
  const bool training = ctx.opset >= 14 && ctx.attrs().get_int("training_mode", 0) != 0;
  std::vector<TensorType> types{x};
  if (ctx.num_outputs > 1) {
    if (!training) ctx.fail("outputs beyond Y are only produced in training mode (training_mode=1, opset >= 14)");
    if (ctx.num_outputs > 3) ctx.fail("training mode has at most 3 outputs (Y, running_mean, running_var)");
    types.push_back(ctx.input(3));
    if (ctx.num_outputs > 2) types.push_back(ctx.input(4));
  }
  return types;
}

std::vector<TensorType> infer_instance_norm(const InferenceContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!x.rank_known) throw UnknownValue{};
  if (x.shape.size() < 3) ctx.fail("input must be [N, C, D1, ...], got " + shape_to_string(x.shape));
  require_float(ctx, 0, "input");
  check_param_shape(ctx, 1, {x.shape[1]}, "scale");
  check_param_shape(ctx, 2, {x.shape[1]}, "B");
  return {x};
}

/// True when `p` broadcasts (unidirectionally) to `target`.
bool broadcasts_to(const Shape &p, const Shape &target) {
  if (p.size() > target.size()) return false;
  const size_t offset = target.size() - p.size();
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != 1 && p[i] != target[offset + i] && p[i] != kUnknownDim && target[offset + i] != kUnknownDim)
      return false;
  return true;
}

std::vector<TensorType> infer_layer_norm(const InferenceContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!x.rank_known) throw UnknownValue{};
  require_float(ctx, 0, "X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 1) ctx.fail("X must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", -1), rank);
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i) || !ctx.input(i).rank_known) continue;
    if (!broadcasts_to(ctx.input(i).shape, x.shape))
      ctx.fail(std::string(i == 1 ? "Scale" : "B") + " shape " + shape_to_string(ctx.input(i).shape) +
               " does not broadcast to X " + shape_to_string(x.shape));
  }
  const DType stash = dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("stash_type", 1)));
  if (stash != DType::Float32 && stash != DType::Float64)
    ctx.fail("stash_type " + std::to_string(ctx.attrs().get_int("stash_type", 1)) + " is not float or double");
  Shape stat_shape = x.shape;
  for (int64_t d = axis; d < rank; ++d) stat_shape[d] = 1;
  std::vector<TensorType> types{x};
  for (size_t i = 1; i < ctx.num_outputs && i < 3; ++i) types.push_back(make_type(stash, stat_shape));
  return types;
}

std::vector<TensorType> infer_softmax(const InferenceContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!x.rank_known) throw UnknownValue{};
  require_float(ctx, 0, "input");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  normalize_axis(ctx, ctx.attrs().get_int("axis", ctx.opset >= 13 ? -1 : 1), rank);
  return {x};
}

std::vector<TensorType> infer_lrn(const InferenceContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!x.rank_known) throw UnknownValue{};
  require_float(ctx, 0, "X");
  if (x.shape.size() < 3) ctx.fail("X must be [N, C, D1, ...], got " + shape_to_string(x.shape));
  if (!ctx.attrs().has("size")) ctx.fail("attribute size is required");
  if (ctx.attrs().get_int("size") < 1) ctx.fail("size must be positive");
  return {x};
}

std::vector<TensorType> infer_mvn(const InferenceContext &ctx) {
  const TensorType &x = ctx.input(0);
  if (!x.rank_known) throw UnknownValue{};
  require_float(ctx, 0, "X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes = ctx.attrs().get_ints("axes", {0, 2, 3});
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    const int64_t a = normalize_axis(ctx, axis, rank);
    if (seen[a]) ctx.fail("axes " + ints_to_string(axes) + " repeat axis " + std::to_string(a));
    seen[a] = true;
  }
  return {x};
}

}  // namespace

void register_pool_norm_ops(OpRegistry &r) {
  for (const char *op : {"MaxPool", "AveragePool", "LpPool"})
    r.add(with_output_dtype({op, infer_pool, {}, OpPattern::OutElementwiseFusable},
                            [](const InferenceContext &ctx, size_t i) { return i == 0 ? ctx.input(0).dtype : DType::Int64; }));
  for (const char *op : {"GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"})
    r.add({op, infer_global_pool, {}, OpPattern::OutElementwiseFusable});
  r.add({"BatchNormalization", infer_batch_norm, {}, OpPattern::Broadcast});
  r.add({"InstanceNormalization", infer_instance_norm, {}, OpPattern::Opaque});
  r.add({"LayerNormalization", infer_layer_norm, {}, OpPattern::Opaque});
  for (const char *op : {"Softmax", "LogSoftmax", "Hardmax"}) r.add({op, infer_softmax, {}, OpPattern::Opaque});
  r.add({"LRN", infer_lrn, {}, OpPattern::Opaque});
  r.add({"MeanVarianceNormalization", infer_mvn, {}, OpPattern::Opaque});
}

}  // namespace tessel
