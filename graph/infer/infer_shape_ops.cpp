// Inference for shape and data-movement ops: constants and shape queries, views
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout), Transpose, Concat, Split,
// Slice, Expand, Tile, Pad, ConstantOfShape, Range, DepthToSpace, SpaceToDepth, EyeLike,
// Trilu, and the outer types of the control-flow ops If and Loop.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "graph/infer/pad_geometry.h"
#include "graph/infer/shape_inference.h"
#include "graph/infer/slice_geometry.h"
#include "graph/ir/axis_list.h"
#include "graph/ir/int_list_text.h"
#include "graph/ir/op_registry.h"

namespace tessel {
namespace {

using Types = std::vector<TensorType>;

/// The value of input i if static inference knows it, else nullptr (never throws).
const Tensor *known_value(const InferenceContext &ctx, size_t i) {
  if (!ctx.has_input(i) || i >= ctx.input_values.size()) return nullptr;
  return ctx.input_values[i];
}

/// Shape of input i; throws UnknownValue when its rank is unknown.
const Shape &input_shape(const InferenceContext &ctx, size_t i) {
  ctx.rank(i);
  return ctx.input(i).shape;
}

/// Product of dims in [begin, end), or kUnknownDim if any of them is unknown.
int64_t dims_product(const Shape &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) {
    if (shape[d] == kUnknownDim) return kUnknownDim;
    p *= shape[d];
  }
  return p;
}

/// Axes given as an attribute before `input_since` and as input `input_index` from then on.
/// Returns false when the op was given no axes at all.
bool axes_attr_or_input(const InferenceContext &ctx, int64_t input_since, size_t input_index,
                        std::vector<int64_t> &axes) {
  if (ctx.opset >= input_since) {
    if (!ctx.has_input(input_index)) return false;
    axes = ctx.ints_value(input_index);
    return true;
  }
  if (!ctx.attrs().has("axes")) return false;
  axes = ctx.attrs().get_ints("axes");
  return true;
}

/// Normalizes each axis against rank and rejects repeats (see normalize_axis_list).
std::vector<int64_t> normalize_axes(const InferenceContext &ctx, std::vector<int64_t> axes, int64_t rank) {
  Result<std::vector<int64_t>> normalized = normalize_axis_list(std::move(axes), rank);
  if (!normalized) ctx.fail(normalized.error().message);
  return std::move(normalized).value();
}

Types infer_constant(const InferenceContext &ctx) {
  auto value = constant_node_value(ctx.node);
  if (!value.ok()) throw TesselException(value.error().message);
  return {value->type()};
}

Types infer_shape(const InferenceContext &ctx) {
  // Only the rank matters for the output's length; the dims themselves may be unknown.
  return {shape_node_value(ctx.node, Shape(ctx.rank(0), 0)).type()};
}

Types infer_dropout(const InferenceContext &ctx) {
  // Only inference is supported: training mode with a nonzero ratio would need random masks.
  if (const Tensor *training = known_value(ctx, 2); training && training->numel() == 1 &&
                                                     training->element_as_double(0) != 0) {
    const Tensor *ratio = known_value(ctx, 1);
    const double r = ratio && ratio->numel() == 1 ? ratio->element_as_double(0) : 0.5;
    if (r != 0) ctx.fail("training_mode=true with a nonzero ratio is not supported (inference only)");
  }
  Types out = {ctx.input(0)};
  if (ctx.num_outputs > 1) out.push_back(TensorType{DType::Bool, ctx.input(0).shape, ctx.input(0).rank_known});
  return out;
}

Types infer_reshape(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  std::vector<int64_t> target;
  if (ctx.opset < 5) target = ctx.attrs().get_ints("shape");
  else target = ctx.ints_value(1);
  const bool allow_zero = ctx.attrs().get_int("allowzero", 0) != 0;
  Shape out(target.size());
  int inferred_axis = -1;
  bool has_zero = false;
  for (size_t d = 0; d < target.size(); ++d) {
    const int64_t t = target[d];
    if (t == -1) {
      if (inferred_axis >= 0) ctx.fail("shape " + ints_to_string(target) + " has more than one -1");
      inferred_axis = static_cast<int>(d);
      out[d] = 1;
    } else if (t == 0 && !allow_zero) {
      if (d >= in.size())
        ctx.fail("shape " + ints_to_string(target) + " copies dimension " + std::to_string(d) +
                 " (0) but the input " + shape_to_string(in) + " has rank " + std::to_string(in.size()));
      out[d] = in[d];
    } else if (t < 0) {
      ctx.fail("shape " + ints_to_string(target) + " has invalid dimension " + std::to_string(t));
    } else {
      has_zero |= t == 0;
      out[d] = t;
    }
  }
  if (inferred_axis >= 0 && has_zero)
    ctx.fail("shape " + ints_to_string(target) + " has both -1 and 0 with allowzero=1");
  const int64_t total = dims_product(in, 0, in.size());
  if (inferred_axis >= 0) {
    const int64_t rest = dims_product(out, 0, out.size());
    if (total == kUnknownDim || rest == kUnknownDim) {
      out[inferred_axis] = kUnknownDim;
    } else {
      if (rest == 0 || total % rest != 0)
        ctx.fail("cannot reshape " + shape_to_string(in) + " to " + ints_to_string(target) +
                 ": the element count does not divide");
      out[inferred_axis] = total / rest;
    }
  } else {
    const int64_t out_total = dims_product(out, 0, out.size());
    if (total != kUnknownDim && out_total != kUnknownDim && total != out_total)
      ctx.fail("cannot reshape " + shape_to_string(in) + " (" + std::to_string(total) + " elements) to " +
               ints_to_string(target) + " (" + std::to_string(out_total) + " elements)");
  }
  return {make_type(ctx.input(0).dtype, out)};
}

Types infer_flatten(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attrs().get_int("axis", 1);
  if (axis < -rank || axis > rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  return {make_type(ctx.input(0).dtype, {dims_product(in, 0, axis), dims_product(in, axis, in.size())})};
}

Types infer_squeeze(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  std::vector<bool> drop(in.size(), false);
  if (axes_attr_or_input(ctx, 13, 1, axes)) {
    for (int64_t a : normalize_axes(ctx, axes, rank)) {
      if (in[a] != 1 && in[a] != kUnknownDim)
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of shape " + shape_to_string(in) +
                 ": its size is not 1");
      drop[a] = true;
    }
  } else {
    for (size_t d = 0; d < in.size(); ++d) {
      if (in[d] == kUnknownDim) throw UnknownValue{};
      drop[d] = in[d] == 1;
    }
  }
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  return {make_type(ctx.input(0).dtype, out)};
}

Types infer_unsqueeze(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  std::vector<int64_t> axes;
  if (!axes_attr_or_input(ctx, 13, 1, axes)) ctx.fail("axes are required");
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : normalize_axes(ctx, axes, out_rank)) inserted[a] = true;
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(inserted[d] ? 1 : in[next++]);
  return {make_type(ctx.input(0).dtype, out)};
}

Types infer_transpose(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = ctx.attrs().get_ints("perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank)
    ctx.fail("perm " + ints_to_string(perm) + " has " + std::to_string(perm.size()) + " entries for rank " +
             std::to_string(rank));
  std::vector<bool> seen(rank, false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) ctx.fail("perm " + ints_to_string(perm) + " is not a permutation");
    seen[p] = true;
    out.push_back(in[p]);
  }
  return {make_type(ctx.input(0).dtype, out)};
}

Types infer_concat(const InferenceContext &ctx) {
  if (ctx.input_types.empty()) ctx.fail("needs at least one input");
  const Shape &first = input_shape(ctx, 0);
  const int64_t rank = static_cast<int64_t>(first.size());
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", ctx.opset < 4 ? 1 : 0), rank);
  Shape out = first;
  for (size_t i = 1; i < ctx.input_types.size(); ++i) {
    const Shape &s = input_shape(ctx, i);
    if (ctx.input(i).dtype != ctx.input(0).dtype)
      ctx.fail("input " + std::to_string(i) + " is " + dtype_name(ctx.input(i).dtype) + " but input 0 is " +
               dtype_name(ctx.input(0).dtype));
    if (static_cast<int64_t>(s.size()) != rank)
      ctx.fail("input " + std::to_string(i) + " has shape " + shape_to_string(s) + ", rank differs from input 0 " +
               shape_to_string(first));
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        out[d] = out[d] == kUnknownDim || s[d] == kUnknownDim ? kUnknownDim : out[d] + s[d];
      } else if (out[d] == kUnknownDim) {
        out[d] = s[d];
      } else if (s[d] != kUnknownDim && s[d] != out[d]) {
        ctx.fail("input " + std::to_string(i) + " has shape " + shape_to_string(s) + ", which differs from " +
                 shape_to_string(first) + " outside axis " + std::to_string(axis));
      }
    }
  }
  return {make_type(ctx.input(0).dtype, out)};
}

Types infer_split(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const int64_t rank = static_cast<int64_t>(in.size());
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), rank);
  const int64_t dim = in[axis];
  std::vector<int64_t> sizes;
  if (ctx.opset < 13 && ctx.attrs().has("split")) sizes = ctx.attrs().get_ints("split");
  else if (ctx.has_input(1)) sizes = ctx.ints_value(1);
  const size_t n = ctx.num_outputs;
  if (!sizes.empty()) {
    if (sizes.size() != n)
      ctx.fail("split " + ints_to_string(sizes) + " has " + std::to_string(sizes.size()) + " entries for " +
               std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail("split " + ints_to_string(sizes) + " has a negative size");
      sum += s;
    }
    if (dim != kUnknownDim && sum != dim)
      ctx.fail("split " + ints_to_string(sizes) + " sums to " + std::to_string(sum) + " but axis " +
               std::to_string(axis) + " has size " + std::to_string(dim));
  } else if (dim == kUnknownDim) {
    sizes.assign(n, kUnknownDim);
  } else if (ctx.opset >= 18 && ctx.attrs().has("num_outputs")) {
    const int64_t parts = ctx.attrs().get_int("num_outputs");
    if (parts < 1 || static_cast<size_t>(parts) != n)
      ctx.fail("num_outputs " + std::to_string(parts) + " does not match the " + std::to_string(n) + " outputs");
    // Chunks of ceil(dim / n); the last one takes what is left.
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - k * chunk)));
  } else {
    if (n == 0 || dim % static_cast<int64_t>(n) != 0)
      ctx.fail("axis " + std::to_string(axis) + " of size " + std::to_string(dim) + " does not split evenly into " +
               std::to_string(n) + " outputs");
    sizes.assign(n, dim / static_cast<int64_t>(n));
  }
  Types out;
  for (int64_t s : sizes) {
    Shape shape = in;
    shape[axis] = s;
    out.push_back(make_type(ctx.input(0).dtype, shape));
  }
  return out;
}

Types infer_slice(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const SliceLists lists = ctx.opset < 10 ? slice_lists_from_attributes(ctx.attrs())
                                          : SliceLists{ctx.ints_value(1), ctx.ints_value(2), ctx.ints_value(3),
                                                       ctx.ints_value(4)};
  Result<SliceGeometry> g = slice_geometry(in, lists);
  if (!g) ctx.fail(g.error().message);
  return {make_type(ctx.input(0).dtype, g->out)};
}

Types infer_expand(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const std::vector<int64_t> target = ctx.ints_value(1);
  for (int64_t d : target)
    if (d < 0) ctx.fail("shape " + ints_to_string(target) + " has a negative dimension");
  return {make_type(ctx.input(0).dtype, broadcast_shapes(ctx, {in, target}))};
}

Types infer_tile(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const std::vector<int64_t> repeats = ctx.ints_value(1);
  if (repeats.size() != in.size())
    ctx.fail("repeats " + ints_to_string(repeats) + " has " + std::to_string(repeats.size()) +
             " entries for input of rank " + std::to_string(in.size()));
  Shape out = in;
  for (size_t d = 0; d < in.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats " + ints_to_string(repeats) + " has a negative entry");
    if (in[d] != kUnknownDim) out[d] = in[d] * repeats[d];
  }
  return {make_type(ctx.input(0).dtype, out)};
}

/// The node's pads as [begin..., end...] over all axes (see full_pads).
std::vector<int64_t> node_pads(const InferenceContext &ctx, int64_t rank) {
  const std::vector<int64_t> pads = ctx.opset >= 11 ? ctx.ints_value(1) : pads_from_attributes(ctx.attrs());
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset >= 18 && ctx.has_input(3)) axes = ctx.ints_value(3);
  Result<std::vector<int64_t>> full = full_pads(pads, axes, rank);
  if (!full) ctx.fail(full.error().message);
  return std::move(full).value();
}

Types infer_pad(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  const int64_t rank = static_cast<int64_t>(in.size());
  const std::string mode = ctx.attrs().get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("unknown mode '" + mode + "'");
  const std::vector<int64_t> pads = node_pads(ctx, rank);
  Shape out = in;
  for (int64_t d = 0; d < rank; ++d) {
    if (in[d] == kUnknownDim) continue;
    out[d] = in[d] + pads[d] + pads[rank + d];
    if (out[d] < 0)
      ctx.fail("pads " + ints_to_string(pads) + " remove more than the " + std::to_string(in[d]) +
               " elements of axis " + std::to_string(d));
    if (mode == "reflect" && in[d] == 0 && out[d] > 0)
      ctx.fail("reflect padding of an empty axis " + std::to_string(d));
    if ((mode == "edge" || mode == "wrap") && in[d] == 0 && out[d] > 0)
      ctx.fail(mode + " padding of an empty axis " + std::to_string(d));
  }
  return {make_type(ctx.input(0).dtype, out)};
}

Types infer_constant_of_shape(const InferenceContext &ctx) {
  DType dtype = DType::Float32;
  if (ctx.attrs().has("value")) {
    const Tensor &value = ctx.attrs().get_tensor("value");
    if (value.numel() != 1) ctx.fail("value must have exactly one element, got " + shape_to_string(value.shape()));
    dtype = value.dtype();
  }
  const std::vector<int64_t> shape = ctx.ints_value(0);
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape " + ints_to_string(shape) + " has a negative dimension");
  return {make_type(dtype, shape)};
}

Types infer_range(const InferenceContext &ctx) {
  const DType dtype = ctx.input(0).dtype;
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input(i).dtype != dtype)
      ctx.fail("start, limit and delta must share a type; input " + std::to_string(i) + " is " +
               dtype_name(ctx.input(i).dtype) + ", start is " + dtype_name(dtype));
  const Tensor &start = ctx.value(0), &limit = ctx.value(1), &delta = ctx.value(2);
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
    ctx.fail("start, limit and delta must be scalars");
  int64_t length;
  if (dtype_is_float(dtype)) {
    const double d = delta.element_as_double(0);
    if (d == 0) ctx.fail("delta is 0");
    const double n = std::ceil((limit.element_as_double(0) - start.element_as_double(0)) / d);
    if (!(n < 1e12)) ctx.fail("the range is too long or not finite");
    length = static_cast<int64_t>(std::max(n, 0.0));
  } else {
    const int64_t d = delta.element_as_int64(0);
    if (d == 0) ctx.fail("delta is 0");
    const int64_t span = limit.element_as_int64(0) - start.element_as_int64(0);
    length = steps_in_span(span, d);
  }
  return {make_type(dtype, {length})};
}

int64_t block_size(const InferenceContext &ctx) {
  const int64_t b = ctx.attrs().get_int("blocksize");
  if (b < 1) ctx.fail("blocksize " + std::to_string(b) + " must be positive");
  return b;
}

Types infer_depth_to_space(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  if (in.size() != 4) ctx.fail("input must be 4-D (N, C, H, W), got " + shape_to_string(in));
  const int64_t b = block_size(ctx);
  const std::string mode = ctx.attrs().get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("unknown mode '" + mode + "'");
  if (in[1] != kUnknownDim && in[1] % (b * b) != 0)
    ctx.fail("channels " + std::to_string(in[1]) + " are not divisible by blocksize^2 = " + std::to_string(b * b));
  auto scaled = [](int64_t d, int64_t f) { return d == kUnknownDim ? d : d * f; };
  return {make_type(ctx.input(0).dtype,
                    {in[0], in[1] == kUnknownDim ? kUnknownDim : in[1] / (b * b), scaled(in[2], b), scaled(in[3], b)})};
}

Types infer_space_to_depth(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  if (in.size() != 4) ctx.fail("input must be 4-D (N, C, H, W), got " + shape_to_string(in));
  const int64_t b = block_size(ctx);
  for (int d = 2; d < 4; ++d)
    if (in[d] != kUnknownDim && in[d] % b != 0)
      ctx.fail("spatial size " + shape_to_string(in) + " is not divisible by blocksize " + std::to_string(b));
  auto shrunk = [b](int64_t d) { return d == kUnknownDim ? d : d / b; };
  return {make_type(ctx.input(0).dtype,
                    {in[0], in[1] == kUnknownDim ? kUnknownDim : in[1] * b * b, shrunk(in[2]), shrunk(in[3])})};
}

Types infer_eye_like(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  if (in.size() != 2) ctx.fail("input must be 2-D, got " + shape_to_string(in));
  DType dtype = ctx.input(0).dtype;
  if (ctx.attrs().has("dtype")) {
    dtype = dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("dtype")));
    if (!dtype_is_supported(dtype) || dtype == DType::String) ctx.fail("unsupported dtype " + dtype_name(dtype));
  }
  return {make_type(dtype, in)};
}

Types infer_trilu(const InferenceContext &ctx) {
  const Shape &in = input_shape(ctx, 0);
  if (in.size() < 2) ctx.fail("input must have rank >= 2, got " + shape_to_string(in));
  if (const Tensor *k = known_value(ctx, 1); k && k->numel() != 1) ctx.fail("k must be a single value");
  return {ctx.input(0)};
}

/// The declared types of a body graph's outputs.
Types body_output_types(const Graph &body) {
  Types types;
  for (int t : body.outputs) types.push_back(body.tensors[t].type);
  return types;
}

/// What two branches agree on: the dtype, and each dim where both say the same.
TensorType merge_types(const TensorType &a, const TensorType &b) {
  if (b.dtype == DType::Undefined) return a;
  if (a.dtype == DType::Undefined) return b;
  if (!a.rank_known || !b.rank_known || a.shape.size() != b.shape.size()) return TensorType{a.dtype, {}, false};
  TensorType merged = a;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (a.shape[d] != b.shape[d]) merged.shape[d] = kUnknownDim;
  return merged;
}

Types infer_if(const InferenceContext &ctx) {
  const auto then_branch = ctx.attrs().get_graph("then_branch");
  const auto else_branch = ctx.attrs().get_graph("else_branch");
  Types then_types = body_output_types(*then_branch), else_types = body_output_types(*else_branch);
  if (then_types.size() != else_types.size())
    ctx.fail("then_branch has " + std::to_string(then_types.size()) + " outputs but else_branch has " +
             std::to_string(else_types.size()));
  if (then_types.size() < ctx.num_outputs)
    ctx.fail("the branches have " + std::to_string(then_types.size()) + " outputs, the node " +
             std::to_string(ctx.num_outputs));
  for (size_t i = 0; i < then_types.size(); ++i) then_types[i] = merge_types(then_types[i], else_types[i]);
  then_types.resize(ctx.num_outputs);
  return then_types;
}

Types infer_loop(const InferenceContext &ctx) {
  const auto body = ctx.attrs().get_graph("body");
  const size_t num_carried = ctx.input_types.size() > 2 ? ctx.input_types.size() - 2 : 0;
  const Types body_out = body_output_types(*body);
  if (body_out.size() < 1 + num_carried)
    ctx.fail("the body has " + std::to_string(body_out.size()) + " outputs, fewer than 1 + " +
             std::to_string(num_carried) + " loop-carried values");
  Types out;
  // Loop-carried values keep their initial type (their shape may change per iteration, but
  // models rarely do that; the runtime uses the actual values).
  for (size_t i = 0; i < num_carried; ++i) out.push_back(ctx.input(2 + i));
  for (size_t i = 1 + num_carried; i < body_out.size(); ++i) {
    const TensorType &per_iteration = body_out[i];
    TensorType scan{per_iteration.dtype, {}, per_iteration.rank_known};
    if (scan.rank_known) {
      scan.shape.push_back(kUnknownDim);
      scan.shape.insert(scan.shape.end(), per_iteration.shape.begin(), per_iteration.shape.end());
    }
    out.push_back(scan);
  }
  out.resize(ctx.num_outputs);
  return out;
}

/// Scan: the final states keep the initial states' types; each scan output stacks the
/// body's per-iteration output along its scan_output_axes entry. Opset 8's Scan has a
/// leading optional sequence_lens input and a batch axis 0 on every input and output.
Types infer_scan(const InferenceContext &ctx) {
  const auto body = ctx.attrs().get_graph("body");
  const bool batched = ctx.opset < 9;
  const size_t first = batched ? 1 : 0;
  const int64_t num_scan = ctx.attrs().get_int("num_scan_inputs");
  if (num_scan < 1 || ctx.input_types.size() < first + static_cast<size_t>(num_scan))
    ctx.fail("num_scan_inputs must be between 1 and the number of inputs");
  const size_t num_states = ctx.input_types.size() - first - num_scan;
  const Types body_out = body_output_types(*body);
  if (body_out.size() < num_states) ctx.fail("the body has fewer outputs than the scan has states");
  const TensorType &scanned = ctx.input(first + num_states);
  int64_t axis = batched ? 1 : ctx.attrs().get_ints("scan_input_axes", {0}).at(0);
  if (axis < 0) axis += ctx.rank(first + num_states);
  if (axis < 0 || axis >= ctx.rank(first + num_states)) ctx.fail("scan_input_axes is outside the scan input's rank");
  const int64_t length = scanned.shape[axis];
  Types out;
  for (size_t i = 0; i < num_states; ++i) out.push_back(ctx.input(first + i));
  const auto out_axes = ctx.attrs().get_ints("scan_output_axes", {});
  for (size_t i = num_states; i < body_out.size(); ++i) {
    const TensorType &per_iteration = body_out[i];
    TensorType stacked{per_iteration.dtype, per_iteration.shape, per_iteration.rank_known};
    if (stacked.rank_known) {
      const int64_t rank = static_cast<int64_t>(stacked.shape.size()) + 1;
      int64_t at = batched ? 0 : (i - num_states < out_axes.size() ? out_axes[i - num_states] : 0);
      if (at < 0) at += rank;
      if (at < 0 || at >= rank) ctx.fail("scan_output_axes is outside the scan output's rank");
      stacked.shape.insert(stacked.shape.begin() + at, length);
      if (batched) stacked.shape.insert(stacked.shape.begin(), scanned.shape[0]);
    }
    out.push_back(stacked);
  }
  out.resize(ctx.num_outputs);
  return out;
}

}  // namespace

void register_shape_ops(OpRegistry &r) {
  r.add({"Constant", infer_constant, {}, OpPattern::Opaque});
  r.add(with_output_dtype({"Shape", infer_shape, {}, OpPattern::Opaque}, always_dtype(DType::Int64)));
  r.add({"Size", [](const InferenceContext &ctx) {
           ctx.input(0);
           return Types{make_type(DType::Int64, {})};
         }, {}, OpPattern::Opaque});
  r.add({"Identity", [](const InferenceContext &ctx) { return Types{ctx.input(0)}; }, {}, OpPattern::Injective});
  r.add(with_output_dtype({"Dropout", infer_dropout, {}, OpPattern::Injective},
                          [](const InferenceContext &ctx, size_t i) { return i == 0 ? ctx.input(0).dtype : DType::Bool; }));
  r.add({"Reshape", infer_reshape, {1}, OpPattern::Injective});
  r.add({"Flatten", infer_flatten, {}, OpPattern::Injective});
  r.add({"Squeeze", infer_squeeze, {1}, OpPattern::Injective});
  r.add({"Unsqueeze", infer_unsqueeze, {1}, OpPattern::Injective});
  r.add({"Transpose", infer_transpose, {}, OpPattern::Injective});
  r.add({"Concat", infer_concat, {}, OpPattern::Injective});
  r.add({"Split", infer_split, {1}, OpPattern::Injective});
  r.add({"Slice", infer_slice, {1, 2, 3, 4}, OpPattern::Injective});
  r.add({"Expand", infer_expand, {1}, OpPattern::Broadcast});
  r.add({"Tile", infer_tile, {1}, OpPattern::Injective});
  r.add({"Pad", infer_pad, {1, 3}, OpPattern::Injective});
  r.add(with_output_dtype({"ConstantOfShape", infer_constant_of_shape, {0}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t) {
                            return ctx.attrs().has("value") ? ctx.attrs().get_tensor("value").dtype() : DType::Float32;
                          }));
  r.add(with_output_dtype({"Range", infer_range, {0, 1, 2}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t) { return ctx.input(0).dtype; }));
  r.add({"DepthToSpace", infer_depth_to_space, {}, OpPattern::Injective});
  r.add({"SpaceToDepth", infer_space_to_depth, {}, OpPattern::Injective});
  r.add({"EyeLike", infer_eye_like, {}, OpPattern::Opaque});
  r.add({"Trilu", infer_trilu, {1}, OpPattern::Injective});
  r.add({"If", infer_if, {}, OpPattern::Opaque});
  r.add({"Loop", infer_loop, {}, OpPattern::Opaque});
  r.add({"Scan", infer_scan, {}, OpPattern::Opaque});
}

}  // namespace tessel
