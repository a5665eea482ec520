#include "executor/data_dependent_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tessel {
namespace {

/// Row-major strides of a shape, in elements.
std::vector<int64_t> strides_of(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The indices of the nonzero elements, one row per axis, in row-major order.
Tensor nonzero(const Tensor &x) {
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.element_as_double(i) != 0) hits.push_back(i);
  const int64_t rank = x.rank(), count = static_cast<int64_t>(hits.size());
  Tensor out(DType::Int64, {rank, count});
  const std::vector<int64_t> strides = strides_of(x.shape());
  for (int64_t k = 0; k < count; ++k)
    for (int64_t d = 0; d < rank; ++d) out.data_as<int64_t>()[d * count + k] = hits[k] / strides[d] % x.shape()[d];
  return out;
}

/// The slices along `axis` (all elements, flattened, without one) whose condition is true;
/// a condition shorter than the axis selects none past its end.
Tensor compress(const Tensor &x, const Tensor &condition, const Node &node) {
  const bool flat = !node.attributes.has("axis");
  int64_t axis = flat ? 0 : node.attributes.get_int("axis");
  if (axis < 0) axis += x.rank();
  const Shape in_shape = flat ? Shape{x.numel()} : x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in_shape[d];
  for (size_t d = axis + 1; d < in_shape.size(); ++d) inner *= in_shape[d];
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < std::min(in_shape[axis], condition.numel()); ++i)
    if (condition.element_as_double(i) != 0) kept.push_back(i);
  Shape out_shape = in_shape;
  out_shape[axis] = static_cast<int64_t>(kept.size());
  Tensor out(x.dtype(), out_shape);
  const size_t row = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const auto *src = static_cast<const uint8_t *>(x.data());
  auto *dst = static_cast<uint8_t *>(out.data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : kept) {
      std::memcpy(dst, src + (o * in_shape[axis] + k) * row, row);
      dst += row;
    }
  return out;
}

/// A box as its corners, whichever order the model gave them in.
struct Corners {
  double y1, x1, y2, x2;
  double area() const { return (y2 - y1) * (x2 - x1); }
};

Corners corners_of(const Tensor &boxes, int64_t offset, bool center_point) {
  double v[4];
  for (int i = 0; i < 4; ++i) v[i] = boxes.element_as_double(offset + i);
  if (center_point)  // [x_center, y_center, width, height]
    return {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

double intersection_over_union(const Corners &a, const Corners &b) {
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0 || a.area() <= 0 || b.area() <= 0) return 0;
  const double inter = h * w;
  return inter / (a.area() + b.area() - inter);
}

/// Greedy non-maximum suppression per batch entry and class, as the ONNX spec defines it:
/// boxes by decreasing score (ties by index), dropping any that overlap a kept one by more
/// than the IoU threshold; at most max_output_boxes_per_class each.
Tensor non_max_suppression(const HostOpContext &ctx) {
  const Tensor &boxes = *ctx.inputs[0], &scores = *ctx.inputs[1];
  auto scalar_input = [&](size_t i, double fallback) {
    return i < ctx.inputs.size() && ctx.inputs[i] && ctx.inputs[i]->numel() > 0 ? ctx.inputs[i]->element_as_double(0)
                                                                                : fallback;
  };
  // Exporters pass INT64_MAX for "no limit": read it as an integer, not through a double.
  const int64_t max_per_class =
      ctx.inputs.size() > 2 && ctx.inputs[2] && ctx.inputs[2]->numel() > 0 ? ctx.inputs[2]->element_as_int64(0) : 0;
  const double iou_threshold = scalar_input(3, 0);
  const bool has_score_threshold = ctx.inputs.size() > 4 && ctx.inputs[4] && ctx.inputs[4]->numel() > 0;
  const double score_threshold = scalar_input(4, 0);
  const bool center_point = ctx.node.attributes.get_int("center_point_box", 0) != 0;
  const int64_t batches = scores.shape()[0], classes = scores.shape()[1], count = scores.shape()[2];
  if (boxes.shape()[0] != batches || boxes.shape()[1] != count || boxes.shape()[2] != 4)
    throw TesselException("boxes " + shape_to_string(boxes.shape()) + " do not match scores " +
                          shape_to_string(scores.shape()));
  std::vector<int64_t> selected;  // triples
  std::vector<int64_t> order(count);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t score_base = (b * classes + c) * count;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        return scores.element_as_double(score_base + i) > scores.element_as_double(score_base + j);
      });
      std::vector<Corners> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        if (has_score_threshold && !(scores.element_as_double(score_base + i) > score_threshold)) break;
        const Corners box = corners_of(boxes, (b * count + i) * 4, center_point);
        bool suppressed = false;
        for (const Corners &k : kept) suppressed |= intersection_over_union(box, k) > iou_threshold;
        if (suppressed) continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  return Tensor::from_int64s(selected, {static_cast<int64_t>(selected.size() / 3), 3});
}

}  // namespace

Result<std::vector<Tensor>> run_data_dependent_op(const HostOpContext &ctx) {
  const std::string &op = ctx.node.op_type;
  try {
    if (op == "NonZero") return std::vector<Tensor>{nonzero(*ctx.inputs.at(0))};
    if (op == "Compress") return std::vector<Tensor>{compress(*ctx.inputs.at(0), *ctx.inputs.at(1), ctx.node)};
    if (op == "NonMaxSuppression") return std::vector<Tensor>{non_max_suppression(ctx)};
  } catch (const std::exception &e) {
    return make_error("node '" + ctx.node.name + "' (" + op + "): " + e.what());
  }
  return make_error("node '" + ctx.node.name + "': " + op + " has no host implementation");
}

}  // namespace tessel
