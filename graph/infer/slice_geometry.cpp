#include "graph/infer/slice_geometry.h"

#include <algorithm>
#include <string>

#include "graph/ir/axis_list.h"
#include "graph/ir/int_list_text.h"

namespace tessel {
namespace {

/// Start and step of a slice along one axis, clamped as ONNX specifies; the output length
/// is max(0, ceil((end - start) / step)).
struct AxisSlice {
  int64_t start, step, length;
};

AxisSlice clamp_slice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim == 0) return {0, step, 0};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
  return {start, step, steps_in_span(end - start, step)};
}

}  // namespace

SliceLists slice_lists_from_attributes(const Attributes &attrs) {
  return {attrs.get_ints("starts"), attrs.get_ints("ends"), attrs.get_ints("axes"), {}};
}

int64_t steps_in_span(int64_t span, int64_t step) {
  if (step > 0) return span <= 0 ? 0 : (span - 1) / step + 1;
  return span >= 0 ? 0 : (span + 1) / step + 1;
}

Result<SliceGeometry> slice_geometry(const Shape &in, SliceLists lists) {
  const int64_t rank = static_cast<int64_t>(in.size());
  const size_t n = lists.starts.size();
  if (lists.ends.size() != n)
    return make_error(ErrorKind::InvalidInput,
                      "starts " + ints_to_string(lists.starts) + " and ends " + ints_to_string(lists.ends) +
                      " differ in length");
  if (lists.axes.empty())
    for (size_t i = 0; i < n; ++i) lists.axes.push_back(static_cast<int64_t>(i));
  if (lists.steps.empty()) lists.steps.assign(n, 1);
  if (lists.axes.size() != n || lists.steps.size() != n)
    return make_error(ErrorKind::InvalidInput,
                      "starts, ends, axes and steps must have the same length (got " + std::to_string(n) + ", " +
                      std::to_string(lists.ends.size()) + ", " + std::to_string(lists.axes.size()) + ", " +
                      std::to_string(lists.steps.size()) + ")");
  Result<std::vector<int64_t>> axes = normalize_axis_list(lists.axes, rank);
  if (!axes) return axes.error();

  SliceGeometry g{std::vector<int64_t>(in.size(), 0), std::vector<int64_t>(in.size(), 1), in};
  for (size_t i = 0; i < n; ++i) {
    if (lists.steps[i] == 0)
      return make_error(ErrorKind::InvalidInput, "steps " + ints_to_string(lists.steps) + " contains 0");
    const int64_t a = axes.value()[i], dim = in[a];
    if (dim == kUnknownDim) continue;
    const AxisSlice s = clamp_slice(lists.starts[i], lists.ends[i], lists.steps[i], dim);
    g.out[a] = s.length;
    if (dim == 0) continue;  // nothing is read
    g.start[a] = s.start;
    g.step[a] = std::clamp<int64_t>(s.step, -dim, dim);  // a longer step never reaches a 2nd element
  }
  return g;
}

}  // namespace tessel
