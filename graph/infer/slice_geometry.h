#pragma once
// What a Slice reads: starts, ends, axes and steps checked and clamped as ONNX specifies,
// once for shape inference (graph/infer/infer_shape_ops.cpp) and the compute rule
// (compute/compute_shape_ops.cpp) so that the output shape and the reads agree.
#include <cstdint>
#include <vector>

#include "base/result.h"
#include "graph/ir/attribute.h"
#include "tensor/tensor.h"

namespace tessel {

/// A Slice's lists as the node gives them; empty axes mean 0, 1, ... and empty steps all 1.
struct SliceLists {
  std::vector<int64_t> starts, ends, axes, steps;
};

/// The lists of a Slice before opset 10, which gives them as attributes (and has no steps).
/// From opset 10 they are inputs 1 to 4.
SliceLists slice_lists_from_attributes(const Attributes &attrs);

/// Per input axis: output element j along axis d reads input element start[d] + j * step[d],
/// and the output has out[d] elements there (kUnknownDim where the input extent is unknown).
/// Axes the slice does not name read everything (start 0, step 1).
struct SliceGeometry {
  std::vector<int64_t> start, step;
  Shape out;
};

/// Checks `lists` against an input of shape `in` and clamps each start and end into the
/// axis, as numpy does. Fails naming lists of different lengths, a bad or repeated axis, or
/// a zero step.
Result<SliceGeometry> slice_geometry(const Shape &in, SliceLists lists);

/// max(0, ceil(span / step)) for a nonzero step, without overflow for huge steps: how many
/// elements a slice (or Range) of that span and step visits.
int64_t steps_in_span(int64_t span, int64_t step);

}  // namespace tessel
