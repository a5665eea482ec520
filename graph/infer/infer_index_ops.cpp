// Inference for data-dependent indexing ops: Gather, GatherElements, GatherND, the
// scatters (Scatter, ScatterElements, ScatterND), OneHot, and resampling (Resize, Upsample).
#include <cmath>
#include <string>

#include "graph/ir/op_registry.h"

namespace tessel {
namespace {

using Types = std::vector<TensorType>;

/// Shape of input i; throws UnknownValue when its rank is unknown.
const Shape &input_shape(const InferenceContext &ctx, size_t i) {
  ctx.rank(i);
  return ctx.input(i).shape;
}

/// Two dims agree when equal or when either is not known statically.
bool dims_agree(int64_t a, int64_t b) { return a == kUnknownDim || b == kUnknownDim || a == b; }

/// `a` fits inside `b` (a <= b) unless either is unknown.
bool dim_fits(int64_t a, int64_t b) { return a == kUnknownDim || b == kUnknownDim || a <= b; }

void check_index_dtype(const InferenceContext &ctx, size_t i, const char *what) {
  DType t = ctx.input(i).dtype;
  if (t != DType::Int32 && t != DType::Int64)
    ctx.fail(std::string(what) + " must be int32 or int64, got " + dtype_name(t));
}

Types infer_gather(const InferenceContext &ctx) {
  const Shape &data = input_shape(ctx, 0), &indices = input_shape(ctx, 1);
  check_index_dtype(ctx, 1, "indices");
  if (data.empty()) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.size()));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {make_type(ctx.input(0).dtype, out)};
}

Types infer_gather_elements(const InferenceContext &ctx) {
  const Shape &data = input_shape(ctx, 0), &indices = input_shape(ctx, 1);
  check_index_dtype(ctx, 1, "indices");
  if (data.empty()) ctx.fail("data must have rank >= 1");
  if (data.size() != indices.size())
    ctx.fail("indices " + shape_to_string(indices) + " must have the rank of data " + shape_to_string(data));
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.size()));
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && !dim_fits(indices[d], data[d]))
      ctx.fail("indices " + shape_to_string(indices) + " exceed data " + shape_to_string(data) + " on axis " +
               std::to_string(d));
  return {make_type(ctx.input(0).dtype, indices)};
}

Types infer_gather_nd(const InferenceContext &ctx) {
  const Shape &data = input_shape(ctx, 0), &indices = input_shape(ctx, 1);
  check_index_dtype(ctx, 1, "indices");
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  const int64_t batch_dims = ctx.attrs().get_int("batch_dims", 0);
  if (batch_dims < 0 || batch_dims >= std::min(r, q))
    ctx.fail("batch_dims " + std::to_string(batch_dims) + " must be in [0, min(rank(data), rank(indices)))");
  for (int64_t d = 0; d < batch_dims; ++d)
    if (!dims_agree(data[d], indices[d]))
      ctx.fail("batch dimension " + std::to_string(d) + " differs: data " + shape_to_string(data) + ", indices " +
               shape_to_string(indices));
  const int64_t m = indices.back();
  if (m == kUnknownDim) throw UnknownValue{};
  if (m < 1 || m > r - batch_dims)
    ctx.fail("last dimension of indices (" + std::to_string(m) + ") must be in [1, " +
             std::to_string(r - batch_dims) + "]");
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + batch_dims + m, data.end());
  return {make_type(ctx.input(0).dtype, out)};
}

void check_reduction(const InferenceContext &ctx, bool allow_min_max) {
  const std::string reduction = ctx.attrs().get_string("reduction", "none");
  if (reduction == "none" || reduction == "add" || reduction == "mul") return;
  if (allow_min_max && (reduction == "max" || reduction == "min")) return;
  ctx.fail("unsupported reduction '" + reduction + "'");
}

Types infer_scatter_elements(const InferenceContext &ctx) {
  const Shape &data = input_shape(ctx, 0), &indices = input_shape(ctx, 1), &updates = input_shape(ctx, 2);
  check_index_dtype(ctx, 1, "indices");
  check_reduction(ctx, true);
  if (data.empty()) ctx.fail("data must have rank >= 1");
  if (indices.size() != data.size())
    ctx.fail("indices " + shape_to_string(indices) + " must have the rank of data " + shape_to_string(data));
  if (updates.size() != indices.size())
    ctx.fail("updates " + shape_to_string(updates) + " must have the shape of indices " + shape_to_string(indices));
  for (size_t d = 0; d < indices.size(); ++d)
    if (!dims_agree(updates[d], indices[d]))
      ctx.fail("updates " + shape_to_string(updates) + " must have the shape of indices " + shape_to_string(indices));
  if (ctx.input(2).dtype != ctx.input(0).dtype)
    ctx.fail("updates type " + dtype_name(ctx.input(2).dtype) + " differs from data type " +
             dtype_name(ctx.input(0).dtype));
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.size()));
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && !dim_fits(indices[d], data[d]))
      ctx.fail("indices " + shape_to_string(indices) + " exceed data " + shape_to_string(data) + " on axis " +
               std::to_string(d));
  return {ctx.input(0)};
}

Types infer_scatter_nd(const InferenceContext &ctx) {
  const Shape &data = input_shape(ctx, 0), &indices = input_shape(ctx, 1), &updates = input_shape(ctx, 2);
  check_index_dtype(ctx, 1, "indices");
  check_reduction(ctx, true);
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (ctx.input(2).dtype != ctx.input(0).dtype)
    ctx.fail("updates type " + dtype_name(ctx.input(2).dtype) + " differs from data type " +
             dtype_name(ctx.input(0).dtype));
  const int64_t k = indices.back();
  if (k == kUnknownDim) return {ctx.input(0)};
  if (k < 1 || k > r)
    ctx.fail("last dimension of indices (" + std::to_string(k) + ") must be in [1, " + std::to_string(r) + "]");
  Shape expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.begin() + k, data.end());
  bool match = expected.size() == updates.size();
  for (size_t d = 0; match && d < expected.size(); ++d) match = dims_agree(expected[d], updates[d]);
  if (!match)
    ctx.fail("updates " + shape_to_string(updates) + " must have shape " + shape_to_string(expected) +
             " (indices.shape[:-1] + data.shape[k:])");
  return {ctx.input(0)};
}

Types infer_one_hot(const InferenceContext &ctx) {
  const Shape &indices = input_shape(ctx, 0);
  const int64_t rank = static_cast<int64_t>(indices.size());
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < -(rank + 1) || axis > rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for output rank " + std::to_string(rank + 1));
  if (axis < 0) axis += rank + 1;
  const Shape &values = input_shape(ctx, 2);
  if (values.size() != 1 || !dims_agree(values[0], 2))
    ctx.fail("values must be a 1-D tensor of two elements [off, on], got shape " + shape_to_string(values));
  const Tensor &depth_value = ctx.value(1);
  if (depth_value.numel() != 1) ctx.fail("depth must hold one value, got " + std::to_string(depth_value.numel()));
  const int64_t depth = static_cast<int64_t>(depth_value.element_as_double(0));
  if (depth < 1) ctx.fail("depth must be positive, got " + std::to_string(depth));
  Shape out = indices;
  out.insert(out.begin() + axis, depth);
  return {make_type(ctx.input(2).dtype, out)};
}

/// Floats of a value input (the scales), or empty when omitted or empty.
std::vector<double> doubles_value(const InferenceContext &ctx, size_t i) {
  std::vector<double> out;
  if (!ctx.has_input(i)) return out;
  const Tensor &t = ctx.value(i);
  for (int64_t k = 0; k < t.numel(); ++k) out.push_back(t.element_as_double(k));
  return out;
}

/// Output dims from per-axis scales: floor(input * scale), as the ONNX reference does.
Shape scaled_shape(const InferenceContext &ctx, const Shape &in, const std::vector<double> &scales,
                   const std::vector<double> &roi_extent) {
  if (scales.size() != in.size())
    ctx.fail("scales has " + std::to_string(scales.size()) + " values but X has rank " + std::to_string(in.size()));
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (!(scales[d] > 0)) ctx.fail("scales must be positive, got " + std::to_string(scales[d]) + " on axis " + std::to_string(d));
    if (in[d] == kUnknownDim) { out[d] = kUnknownDim; continue; }
    const double extent = roi_extent.empty() ? 1.0 : roi_extent[d];
    out[d] = static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * extent * scales[d]));
  }
  return out;
}

void check_resize_mode(const InferenceContext &ctx, bool allow_cubic) {
  const std::string mode = ctx.attrs().get_string("mode", "nearest");
  if (mode == "nearest" || mode == "linear" || mode == "bilinear") return;
  if (allow_cubic && mode == "cubic") return;
  ctx.fail("unsupported mode '" + mode + "'");
}

Types infer_resize(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  if (ctx.opset < 11) {  // Resize-10: X, scales
    check_resize_mode(ctx, false);
    return {make_type(ctx.input(0).dtype, scaled_shape(ctx, in, doubles_value(ctx, 1), {}))};
  }
  check_resize_mode(ctx, true);
  const std::string mode = ctx.attrs().get_string("coordinate_transformation_mode", "half_pixel");
  const char *known_modes[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                               "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  bool known = false;
  for (const char *m : known_modes) known |= mode == m;
  if (!known) ctx.fail("unsupported coordinate_transformation_mode '" + mode + "'");
  const std::string nearest_mode = ctx.attrs().get_string("nearest_mode", "round_prefer_floor");
  if (nearest_mode != "round_prefer_floor" && nearest_mode != "round_prefer_ceil" && nearest_mode != "floor" &&
      nearest_mode != "ceil")
    ctx.fail("unsupported nearest_mode '" + nearest_mode + "'");

  if (ctx.has_input(3)) {
    std::vector<int64_t> sizes = ctx.ints_value(3);
    if (!sizes.empty()) {
      if (sizes.size() != in.size())
        ctx.fail("sizes has " + std::to_string(sizes.size()) + " values but X has rank " + std::to_string(in.size()));
      for (int64_t s : sizes)
        if (s < 0) ctx.fail("sizes must not be negative, got " + std::to_string(s));
      return {make_type(ctx.input(0).dtype, sizes)};
    }
  }
  std::vector<double> scales = doubles_value(ctx, 2);
  if (scales.empty()) ctx.fail("one of scales and sizes must be given");
  // With tf_crop_and_resize the output covers only the roi: floor(in * (end - start) * scale).
  std::vector<double> roi_extent;
  if (mode == "tf_crop_and_resize") {
    std::vector<double> roi = doubles_value(ctx, 1);
    if (!roi.empty()) {
      if (roi.size() != 2 * in.size())
        ctx.fail("roi has " + std::to_string(roi.size()) + " values, expected 2 * rank = " +
                 std::to_string(2 * in.size()));
      for (size_t d = 0; d < in.size(); ++d) roi_extent.push_back(roi[d + in.size()] - roi[d]);
    }
  }
  return {make_type(ctx.input(0).dtype, scaled_shape(ctx, in, scales, roi_extent))};
}

Types infer_upsample(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  check_resize_mode(ctx, false);
  std::vector<double> scales;
  if (ctx.opset < 9) {
    for (float s : ctx.attrs().get_floats("scales")) scales.push_back(s);
  } else {
    scales = doubles_value(ctx, 1);
  }
  return {make_type(ctx.input(0).dtype, scaled_shape(ctx, in, scales, {}))};
}

}  // namespace

void register_index_ops(OpRegistry &r) {
  r.add({"Gather", infer_gather, {}, OpPattern::Injective});
  r.add({"GatherElements", infer_gather_elements, {}, OpPattern::Injective});
  r.add({"GatherND", infer_gather_nd, {}, OpPattern::Injective});
  r.add({"Scatter", infer_scatter_elements, {}, OpPattern::Opaque});
  r.add({"ScatterElements", infer_scatter_elements, {}, OpPattern::Opaque});
  r.add({"ScatterND", infer_scatter_nd, {}, OpPattern::Opaque});
  r.add(with_output_dtype({"OneHot", infer_one_hot, {1}, OpPattern::Injective},
                          [](const InferenceContext &ctx, size_t) { return ctx.input(2).dtype; }));
  r.add({"Resize", infer_resize, {1, 2, 3}, OpPattern::Injective});
  r.add({"Upsample", infer_upsample, {1}, OpPattern::Injective});
}

}  // namespace tessel
