// Inference for the dense linear-algebra ops: Conv, ConvTranspose, MatMul and Gemm, and the
// channels-last conv of graph/passes/channels_last_conv.h.
#include <algorithm>
#include <limits>
#include <string>

#include "graph/ir/op_registry.h"
#include "graph/passes/block_conv_weights.h"
#include "graph/passes/block_nhwc_conv_weights.h"
#include "graph/passes/channels_last_conv.h"
#include "graph/passes/panel_matmul_weights.h"

namespace tessel {
namespace {

std::string ints_to_string(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Reads an int list attribute of one entry per spatial axis.
std::vector<int64_t> spatial_attr(const InferenceContext &ctx, const char *name, size_t count, int64_t fallback,
                                  int64_t min_value) {
  std::vector<int64_t> v = ctx.attrs().get_ints(name, std::vector<int64_t>(count, fallback));
  if (v.size() != count)
    ctx.fail(std::string("attribute ") + name + " " + ints_to_string(v) + " must have " + std::to_string(count) +
             " entries");
  for (int64_t x : v)
    if (x < min_value)
      ctx.fail(std::string("attribute ") + name + " " + ints_to_string(v) + " has a value below " +
               std::to_string(min_value));
  return v;
}

/// Spatial kernel size: the kernel_shape attribute or W's trailing dims (which must agree).
std::vector<int64_t> kernel_shape(const InferenceContext &ctx, const Shape &w, size_t spatial) {
  std::vector<int64_t> from_w(w.begin() + 2, w.begin() + 2 + static_cast<std::ptrdiff_t>(spatial));
  for (int64_t k : from_w)
    if (k == 0) ctx.fail("W " + shape_to_string(w) + " has an empty kernel dimension");
  if (!ctx.attrs().has("kernel_shape")) return from_w;
  std::vector<int64_t> k = spatial_attr(ctx, "kernel_shape", spatial, 1, 1);
  for (size_t i = 0; i < spatial; ++i)
    if (from_w[i] != kUnknownDim && from_w[i] != k[i])
      ctx.fail("kernel_shape " + ints_to_string(k) + " does not match W " + shape_to_string(w));
  return k;
}

std::string auto_pad_mode(const InferenceContext &ctx) {
  std::string mode = ctx.attrs().get_string("auto_pad", "NOTSET");
  if (mode != "NOTSET" && mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID")
    ctx.fail("unknown auto_pad '" + mode + "'");
  return mode;
}

/// Checks that X and W are at least 3-D with the same rank (one more for a blocked W) and
/// dtype; returns the spatial rank.
size_t check_conv_operands(const InferenceContext &ctx, int64_t block = 1) {
  const int rank = ctx.rank(0);
  if (rank < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got " + shape_to_string(ctx.input(0).shape));
  if (ctx.rank(1) != rank + (block > 1 ? 1 : 0))
    ctx.fail("W " + shape_to_string(ctx.input(1).shape) + " must have the rank of X " +
             shape_to_string(ctx.input(0).shape));
  if (ctx.input(0).dtype != ctx.input(1).dtype)
    ctx.fail("X and W have different types " + dtype_name(ctx.input(0).dtype) + " and " +
             dtype_name(ctx.input(1).dtype));
  if (!dtype_is_float(ctx.input(0).dtype)) ctx.fail("X must be a float tensor, got " + dtype_name(ctx.input(0).dtype));
  return static_cast<size_t>(rank - 2);
}

void check_bias(const InferenceContext &ctx, size_t index, int64_t channels) {
  if (!ctx.has_input(index)) return;
  const TensorType &b = ctx.input(index);
  if (!b.rank_known) return;
  if (b.shape.size() != 1 || (b.shape[0] != kUnknownDim && channels != kUnknownDim && b.shape[0] != channels))
    ctx.fail("bias B " + shape_to_string(b.shape) + " must be 1-D with " + std::to_string(channels) + " elements");
  if (b.dtype != ctx.input(0).dtype)
    ctx.fail("bias B has type " + dtype_name(b.dtype) + ", X has " + dtype_name(ctx.input(0).dtype));
}

std::vector<TensorType> infer_conv(const InferenceContext &ctx) {
  // block_conv_weights stores W as [M / block, C, kernel..., block].
  const int64_t block = conv_weight_block(ctx.node);
  if (block < 1) ctx.fail(std::string(kConvWeightBlockAttr) + " must be >= 1, got " + std::to_string(block));
  const size_t spatial = check_conv_operands(ctx, block);
  const Shape &x = ctx.input(0).shape, &w = ctx.input(1).shape;
  if (block > 1 && (w.back() != block || !ctx.attrs().has("kernel_shape")))
    ctx.fail("a W blocked by " + std::to_string(block) + " output channels must end in " + std::to_string(block) +
             " and come with kernel_shape, got " + shape_to_string(w));
  const int64_t group = ctx.attrs().get_int("group", 1);
  if (group < 1) ctx.fail("group must be >= 1, got " + std::to_string(group));
  if (w[0] != kUnknownDim && w[0] > std::numeric_limits<int64_t>::max() / block)
    ctx.fail("W " + shape_to_string(w) + " blocked by " + std::to_string(block) + " has too many output channels");
  const int64_t channels = x[1], out_channels = w[0] == kUnknownDim ? kUnknownDim : w[0] * block;
  if (channels != kUnknownDim && w[1] != kUnknownDim && w[1] * group != channels)
    ctx.fail("X has " + std::to_string(channels) + " channels but W " + shape_to_string(w) + " with group " +
             std::to_string(group) + " expects " + std::to_string(w[1] * group));
  if (out_channels != kUnknownDim && out_channels % group != 0)
    ctx.fail("W's " + std::to_string(out_channels) + " output channels are not divisible by group " +
             std::to_string(group));
  if (block > 1 && out_channels != kUnknownDim && (out_channels / group) % block != 0)
    ctx.fail("W blocked by " + std::to_string(block) + " output channels needs groups of a multiple of " +
             std::to_string(block) + " output channels, got " + std::to_string(out_channels / group));
  check_bias(ctx, 2, out_channels);

  const std::vector<int64_t> kernel = kernel_shape(ctx, w, spatial);
  const std::vector<int64_t> strides = spatial_attr(ctx, "strides", spatial, 1, 1);
  const std::vector<int64_t> dilations = spatial_attr(ctx, "dilations", spatial, 1, 1);
  const std::vector<int64_t> pads = spatial_attr(ctx, "pads", 2 * spatial, 0, 0);
  const std::string mode = auto_pad_mode(ctx);

  Shape out = {x[0], out_channels};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = x[2 + i];
    if (in == kUnknownDim || kernel[i] == kUnknownDim) {
      out.push_back(kUnknownDim);
      continue;
    }
    // Sizes from a workload text or a model are untrusted: keep the arithmetic in range.
    if (kernel[i] < 1 || kernel[i] > (int64_t{1} << 31) || dilations[i] < 1 || dilations[i] > (int64_t{1} << 31))
      ctx.fail("kernel size " + std::to_string(kernel[i]) + " or dilation " + std::to_string(dilations[i]) +
               " is out of range");
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    int64_t size;
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      size = (in + strides[i] - 1) / strides[i];
    } else {
      const int64_t padded = mode == "VALID" ? in : in + pads[i] + pads[spatial + i];
      if (padded < extent)
        ctx.fail("kernel extent " + std::to_string(extent) + " is larger than the padded input (" +
                 std::to_string(padded) + ") along spatial axis " + std::to_string(i));
      size = (padded - extent) / strides[i] + 1;
    }
    out.push_back(size);
  }
  return {make_type(ctx.input(0).dtype, out)};
}

std::vector<TensorType> infer_conv_transpose(const InferenceContext &ctx) {
  const size_t spatial = check_conv_operands(ctx);
  const Shape &x = ctx.input(0).shape, &w = ctx.input(1).shape;
  const int64_t group = ctx.attrs().get_int("group", 1);
  if (group < 1) ctx.fail("group must be >= 1, got " + std::to_string(group));
  if (x[1] != kUnknownDim && w[0] != kUnknownDim && w[0] != x[1])
    ctx.fail("X has " + std::to_string(x[1]) + " channels but W " + shape_to_string(w) + " expects " +
             std::to_string(w[0]));
  if (x[1] != kUnknownDim && x[1] % group != 0)
    ctx.fail("X's " + std::to_string(x[1]) + " channels are not divisible by group " + std::to_string(group));
  const int64_t out_channels = w[1] == kUnknownDim ? kUnknownDim : w[1] * group;
  check_bias(ctx, 2, out_channels);

  const std::vector<int64_t> kernel = kernel_shape(ctx, w, spatial);
  const std::vector<int64_t> strides = spatial_attr(ctx, "strides", spatial, 1, 1);
  const std::vector<int64_t> dilations = spatial_attr(ctx, "dilations", spatial, 1, 1);
  const std::vector<int64_t> pads = spatial_attr(ctx, "pads", 2 * spatial, 0, 0);
  const std::vector<int64_t> output_padding = spatial_attr(ctx, "output_padding", spatial, 0, 0);
  std::vector<int64_t> output_shape = ctx.attrs().get_ints("output_shape");
  if (output_shape.size() == spatial + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != spatial)
    ctx.fail("output_shape " + ints_to_string(output_shape) + " must have " + std::to_string(spatial) + " entries");
  const std::string mode = auto_pad_mode(ctx);

  Shape out = {x[0], out_channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t size;
    if (!output_shape.empty()) {
      size = output_shape[i];
    } else if (x[2 + i] == kUnknownDim || kernel[i] == kUnknownDim) {
      size = kUnknownDim;
    } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      size = x[2 + i] * strides[i];
    } else {
      const int64_t full = strides[i] * (x[2 + i] - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1;
      size = mode == "VALID" ? full : full - pads[i] - pads[spatial + i];
    }
    if (size != kUnknownDim && size < 1)
      ctx.fail("output size " + std::to_string(size) + " along spatial axis " + std::to_string(i) +
               " is not positive (pads " + ints_to_string(pads) + ")");
    out.push_back(size);
  }
  return {make_type(ctx.input(0).dtype, out)};
}

void check_matmul_dtypes(const InferenceContext &ctx) {
  const DType a = ctx.input(0).dtype, b = ctx.input(1).dtype;
  if (a != b) ctx.fail("A and B have different types " + dtype_name(a) + " and " + dtype_name(b));
  if (a == DType::Bool || a == DType::String) ctx.fail("A and B must be numeric, got " + dtype_name(a));
}

bool dims_conflict(int64_t a, int64_t b) { return a != kUnknownDim && b != kUnknownDim && a != b; }

/// B of a MatMul or Gemm as a matrix: its own shape, or [K, N] when panel_matmul_weights
/// stored it as panels [N / width, K, width].
Shape matrix_b_shape(const InferenceContext &ctx) {
  ctx.rank(1);  // throws while B's rank is unknown
  const int64_t width = matmul_panel_width(ctx.node);
  if (width <= 1) return ctx.input(1).shape;
  if (ctx.node.op_type == "Gemm" && ctx.attrs().get_int("transB", 0) != 0)
    ctx.fail(std::string("a Gemm with ") + kMatmulPanelAttr + " cannot have transB");
  const std::optional<Shape> matrix = matrix_of_panels(ctx.input(1).shape, width);
  if (!matrix)
    ctx.fail("B " + shape_to_string(ctx.input(1).shape) + " is not panels of " + std::to_string(width) + " columns");
  return *matrix;
}

std::vector<TensorType> infer_matmul(const InferenceContext &ctx) {
  check_matmul_dtypes(ctx);
  const int rank_a = ctx.rank(0);
  const Shape &a = ctx.input(0).shape, b = matrix_b_shape(ctx);
  const int rank_b = static_cast<int>(b.size());
  if (rank_a < 1 || rank_b < 1)
    ctx.fail("A " + shape_to_string(a) + " and B " + shape_to_string(b) + " must have rank >= 1");
  // 1-D operands act as a row (A) or a column (B); that dimension is dropped afterwards.
  const Shape a2 = rank_a == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = rank_b == 1 ? Shape{b[0], 1} : b;
  const int64_t k_a = a2[a2.size() - 1], k_b = b2[b2.size() - 2];
  if (dims_conflict(k_a, k_b))
    ctx.fail("inner dimensions do not match: A " + shape_to_string(a) + " has " + std::to_string(k_a) + " columns, B " +
             shape_to_string(b) + " has " + std::to_string(k_b) + " rows");
  Shape out = broadcast_shapes(ctx, {Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2)});
  if (rank_a != 1) out.push_back(a2[a2.size() - 2]);
  if (rank_b != 1) out.push_back(b2.back());
  return {make_type(ctx.input(0).dtype, out)};
}

std::vector<TensorType> infer_gemm(const InferenceContext &ctx) {
  check_matmul_dtypes(ctx);
  const Shape &a = ctx.input(0).shape, b = matrix_b_shape(ctx);
  if (ctx.rank(0) != 2 || b.size() != 2)
    ctx.fail("A " + shape_to_string(a) + " and B " + shape_to_string(b) + " must be 2-D");
  const bool trans_a = ctx.attrs().get_int("transA", 0) != 0, trans_b = ctx.attrs().get_int("transB", 0) != 0;
  const int64_t m = trans_a ? a[1] : a[0], k_a = trans_a ? a[0] : a[1];
  const int64_t k_b = trans_b ? b[1] : b[0], n = trans_b ? b[0] : b[1];
  if (dims_conflict(k_a, k_b))
    ctx.fail("inner dimensions do not match: A " + shape_to_string(a) + (trans_a ? " (transposed)" : "") +
             " gives K=" + std::to_string(k_a) + ", B " + shape_to_string(b) + (trans_b ? " (transposed)" : "") +
             " gives K=" + std::to_string(k_b));
  const Shape out = {m, n};
  if (ctx.has_input(2) && ctx.input(2).rank_known) {
    const TensorType &c = ctx.input(2);
    if (c.dtype != ctx.input(0).dtype)
      ctx.fail("C has type " + dtype_name(c.dtype) + ", A has " + dtype_name(ctx.input(0).dtype));
    // C broadcasts unidirectionally to (M, N).
    bool ok = c.shape.size() <= 2;
    for (size_t i = 0; ok && i < c.shape.size(); ++i) {
      const int64_t target = out[2 - c.shape.size() + i];
      ok = c.shape[i] == 1 || !dims_conflict(c.shape[i], target);
    }
    if (!ok) ctx.fail("C " + shape_to_string(c.shape) + " does not broadcast to the output " + shape_to_string(out));
  }
  return {make_type(ctx.input(0).dtype, out)};
}

/// X [N, H, W, C] (or [N, C, H, W]), W [KH, KW, C / group, M] (or blocked), B [M] -> [N, OH, OW, M].
std::vector<TensorType> infer_conv_nhwc(const InferenceContext &ctx) {
  // block_nhwc_conv_weights stores W as [M / block, KH, KW, C / group, block].
  const int64_t block = conv_weight_block(ctx.node);
  if (ctx.rank(0) != 4 || ctx.rank(1) != (block > 1 ? 5 : 4))
    ctx.fail(block > 1 ? "X must be 4-D and W 5-D (blocked)" : "X and W must be 4-D");
  const Shape &x = ctx.input(0).shape;
  const std::optional<NhwcConvWeightDims> dims = nhwc_conv_weight_dims(ctx.input(1).shape, block);
  if (!dims) ctx.fail("W " + shape_to_string(ctx.input(1).shape) + " is not blocked by " + std::to_string(block));
  const int64_t w[4] = {dims->kernel_h, dims->kernel_w, dims->in_per_group, dims->out_channels};
  const bool nchw = ctx.attrs().get_string("input_layout", "NHWC") == "NCHW";
  const int64_t n = x[0], c = nchw ? x[1] : x[3], h = nchw ? x[2] : x[1], width = nchw ? x[3] : x[2];
  const int64_t group = ctx.attrs().get_int("group", 1);
  const std::vector<int64_t> strides = ctx.attrs().get_ints("strides", {1, 1});
  const std::vector<int64_t> dilations = ctx.attrs().get_ints("dilations", {1, 1});
  const std::vector<int64_t> pads = ctx.attrs().get_ints("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) ctx.fail("strides, dilations and pads must be 2, 2 and 4 long");
  if (group < 1 || c % group != 0 || w[2] != c / group || w[3] % group != 0)
    ctx.fail("W " + shape_to_string(ctx.input(1).shape) + " does not fit " + std::to_string(c) + " input channels in " +
             std::to_string(group) + " groups");
  if (ctx.has_input(2) && ctx.input(2).shape != Shape{w[3]})
    ctx.fail("B " + shape_to_string(ctx.input(2).shape) + " must be [" + std::to_string(w[3]) + "]");
  const int64_t in[2] = {h, width};
  Shape out = {n, 0, 0, w[3]};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t extent = (w[d] - 1) * dilations[d] + 1;
    out[1 + d] = (in[d] + pads[d] + pads[2 + d] - extent) / strides[d] + 1;
    if (out[1 + d] < 1) ctx.fail("the kernel does not fit the padded input");
  }
  return {make_type(ctx.input(0).dtype, out)};
}

}  // namespace

void register_nn_ops(OpRegistry &r) {
  r.add({kConvNhwcOp, infer_conv_nhwc, {}, OpPattern::OutElementwiseFusable});
  r.add({"Conv", infer_conv, {}, OpPattern::OutElementwiseFusable});
  r.add({"ConvTranspose", infer_conv_transpose, {}, OpPattern::OutElementwiseFusable});
  r.add({"MatMul", infer_matmul, {}, OpPattern::OutElementwiseFusable});
  r.add({"Gemm", infer_gemm, {}, OpPattern::OutElementwiseFusable});
}

}  // namespace tessel
