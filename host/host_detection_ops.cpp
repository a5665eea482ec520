// The detection models' host ops: sorting (TopK), ops whose output length depends on the
// input values (NonZero, Compress, NonMaxSuppression, Unique), and RoiAlign
// (host_roi_align.cpp). Sorting has no good Halide form, and a kernel cannot be specialized
// on a shape that is not known yet.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <map>
#include <numeric>

#include "host/host_detection_ops.h"
#include "host/host_op_families.h"

namespace tessel {
namespace {

/// Values and indices of the k largest (or smallest) elements along one axis; ties go to
/// the lower index, as the ONNX reference does. Sorting has no good Halide form.
std::vector<Tensor> topk(const HostCall &ctx) {
  const std::vector<TensorType> &types = ctx.output_types;
  const Tensor &x = *ctx.inputs[0];
  const int64_t rank = x.rank();
  int64_t axis = ctx.node.attributes.get_int("axis", -1);
  if (axis < 0) axis += rank;
  const bool largest = ctx.node.attributes.get_int("largest", 1) != 0;
  const int64_t k = types[0].shape[axis];
  Tensor values(types[0].dtype, types[0].shape), indices(DType::Int64, types[1].shape);
  const int64_t n = x.shape()[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[d];
  std::vector<int64_t> order(n);
  std::vector<double> row(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) row[j] = x.element_as_double((o * n + j) * inner + i);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? row[a] > row[b] : row[a] < row[b];
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t out = (o * k + j) * inner + i;
        if (x.dtype() == DType::Int64) values.data_as<int64_t>()[out] = x.data_as<int64_t>()[(o * n + order[j]) * inner + i];
        else values.set_element_from_double(out, row[order[j]]);
        indices.data_as<int64_t>()[out] = order[j];
      }
    }
  }
  return std::vector<Tensor>{values, indices};
}

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

/// A box as its corners, whichever order the model gave them in, and its area.
struct Corners {
  double y1, x1, y2, x2, area;
};

Corners corners_of(const double *v, bool center_point) {
  Corners c;
  if (center_point)  // [x_center, y_center, width, height]
    c = {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2, 0};
  else
    c = {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3]), 0};
  c.area = (c.y2 - c.y1) * (c.x2 - c.x1);
  return c;
}

bool overlaps_more_than(const Corners &a, const Corners &b, double iou_threshold) {
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0 || a.area <= 0 || b.area <= 0) return 0 > iou_threshold;
  const double inter = h * w;
  return inter / (a.area + b.area - inter) > iou_threshold;
}

/// The tensor's elements as doubles, read once (the loops below visit them many times).
std::vector<double> as_doubles(const Tensor &t) {
  std::vector<double> values(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::Float32)
    for (size_t i = 0; i < values.size(); ++i) values[i] = t.data_as<float>()[i];
  else
    for (size_t i = 0; i < values.size(); ++i) values[i] = t.element_as_double(static_cast<int64_t>(i));
  return values;
}

/// Greedy non-maximum suppression per batch entry and class, as the ONNX spec defines it:
/// boxes by decreasing score (ties by index), dropping any that overlap a kept one by more
/// than the IoU threshold; at most max_output_boxes_per_class each.
Tensor non_max_suppression(const HostCall &ctx) {
  const Tensor &boxes_tensor = *ctx.inputs[0], &scores_tensor = *ctx.inputs[1];
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
  if (scores_tensor.rank() != 3 || boxes_tensor.rank() != 3)
    throw TesselException("boxes and scores must have rank 3");
  const int64_t batches = scores_tensor.shape()[0], classes = scores_tensor.shape()[1], count = scores_tensor.shape()[2];
  if (boxes_tensor.shape()[0] != batches || boxes_tensor.shape()[1] != count || boxes_tensor.shape()[2] != 4)
    throw TesselException("boxes " + shape_to_string(boxes_tensor.shape()) + " do not match scores " +
                          shape_to_string(scores_tensor.shape()));
  const std::vector<double> scores = as_doubles(scores_tensor), boxes = as_doubles(boxes_tensor);
  std::vector<int64_t> selected;  // triples
  std::vector<int64_t> order;
  std::vector<Corners> kept;
  std::multimap<double, size_t> kept_by_x1;  // index into kept
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const double *score = scores.data() + (b * classes + c) * count;
      // Candidates under the threshold can never be selected: leave them out of the sort.
      order.clear();
      for (int64_t i = 0; i < count; ++i)
        if (!has_score_threshold || score[i] > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return score[i] > score[j]; });
      kept.clear();
      kept_by_x1.clear();
      double widest = 0;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const Corners box = corners_of(boxes.data() + (b * count + i) * 4, center_point);
        bool suppressed = false;
        const bool nan_x = std::isnan(box.x1) || std::isnan(box.x2);  // overlaps nothing, is never indexed
        if (iou_threshold >= 0 && !nan_x) {
          // Only boxes whose x ranges meet can overlap: the kept ones starting within the
          // widest kept width before this box and before its end. (Detectors offset each
          // class's boxes apart and run one NMS, so most kept boxes are far away.)
          double from = box.x1 - widest;
          if (std::isnan(from)) from = -std::numeric_limits<double>::infinity();
          for (auto k = kept_by_x1.lower_bound(from); k != kept_by_x1.end() && k->first < box.x2; ++k)
            if (overlaps_more_than(box, kept[k->second], iou_threshold)) {
              suppressed = true;
              break;
            }
        } else if (iou_threshold < 0) {
          suppressed = !kept.empty();  // a negative threshold: even disjoint boxes overlap "more"
        }
        if (suppressed) continue;
        if (!nan_x) {
          kept_by_x1.emplace(box.x1, kept.size());
          widest = std::max(widest, box.x2 - box.x1);
        }
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  return Tensor::from_int64s(selected, {static_cast<int64_t>(selected.size() / 3), 3});
}

/// The distinct elements (no axis) or slices along `axis` of x, in order of first
/// appearance or sorted ascending, with the index of each one's first appearance, each
/// input slice's index among them, and how often each appears.
std::vector<Tensor> unique(const Tensor &x, const Node &node) {
  const bool by_axis = node.attributes.has("axis");
  const bool sorted = node.attributes.get_int("sorted", 1) != 0;
  const Shape shape = by_axis ? x.shape() : Shape{x.numel()};
  int64_t axis = by_axis ? node.attributes.get_int("axis") : 0;
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    throw TesselException("axis " + std::to_string(node.attributes.get_int("axis")) + " is outside rank " +
                          std::to_string(shape.size()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t count = shape[axis];
  auto slice = [&](int64_t k) {
    std::vector<double> values;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) values.push_back(x.element_as_double((o * count + k) * inner + i));
    return values;
  };
  std::vector<std::vector<double>> distinct;  // in order of first appearance
  std::vector<int64_t> first, inverse(count), counts;
  std::map<std::vector<double>, int64_t> seen;
  for (int64_t k = 0; k < count; ++k) {
    std::vector<double> s = slice(k);
    auto [it, added] = seen.emplace(s, static_cast<int64_t>(distinct.size()));
    if (added) {
      distinct.push_back(std::move(s));
      first.push_back(k);
      counts.push_back(0);
    }
    inverse[k] = it->second;
    ++counts[it->second];
  }
  std::vector<int64_t> order(distinct.size());  // output position -> appearance id
  std::iota(order.begin(), order.end(), 0);
  if (sorted) std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return distinct[a] < distinct[b]; });
  std::vector<int64_t> position(order.size());
  for (size_t p = 0; p < order.size(); ++p) position[order[p]] = static_cast<int64_t>(p);
  const int64_t kept = static_cast<int64_t>(order.size());
  Shape y_shape = shape;
  y_shape[axis] = kept;
  Tensor y(x.dtype(), y_shape);
  const size_t element = dtype_size(x.dtype());
  const auto *src = static_cast<const uint8_t *>(x.data());
  auto *dst = static_cast<uint8_t *>(y.data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < kept; ++p)
      std::memcpy(dst + ((o * kept + p) * inner) * element, src + ((o * count + first[order[p]]) * inner) * element,
                  static_cast<size_t>(inner) * element);
  std::vector<int64_t> indices, sorted_counts, inverse_positions;
  for (int64_t id : order) indices.push_back(first[id]), sorted_counts.push_back(counts[id]);
  for (int64_t id : inverse) inverse_positions.push_back(position[id]);
  return {y, Tensor::from_int64s(indices, {kept}), Tensor::from_int64s(inverse_positions, {count}),
          Tensor::from_int64s(sorted_counts, {kept})};
}

}  // namespace

void register_detection_host_ops() {
  register_host_op("TopK", topk);
  register_host_op("NonZero", [](const HostCall &c) { return std::vector<Tensor>{nonzero(*c.inputs.at(0))}; });
  register_host_op("Compress", [](const HostCall &c) {
    return std::vector<Tensor>{compress(*c.inputs.at(0), *c.inputs.at(1), c.node)};
  });
  register_host_op("NonMaxSuppression", [](const HostCall &c) { return std::vector<Tensor>{non_max_suppression(c)}; });
  register_host_op("Unique", [](const HostCall &c) { return unique(*c.inputs.at(0), c.node); });
  register_host_op("RoiAlign", [](const HostCall &c) { return std::vector<Tensor>{roi_align(c)}; });
}

}  // namespace tessel
