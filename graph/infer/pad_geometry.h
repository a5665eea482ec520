#pragma once
// Which pads a Pad node adds to each axis, read once for shape inference
// (graph/infer/infer_shape_ops.cpp) and the compute rule (compute/compute_shape_ops.cpp).
#include <cstdint>
#include <optional>
#include <vector>

#include "base/result.h"
#include "graph/ir/attribute.h"

namespace tessel {

/// The pads of a Pad node before opset 11, which gives them as the `pads` attribute
/// (`paddings` in opset 1). From opset 11 they are input 1.
std::vector<int64_t> pads_from_attributes(const Attributes &attrs);

/// Pads as [begin..., end...] over all `rank` axes. `pads` lists begin and end pads of the
/// axes in `axes` (opset 18's optional input 3; nullopt means every axis in order); the
/// other axes get 0. Pads may be negative (they crop). Fails naming a bad or repeated axis,
/// or a pads list whose length is not twice the number of axes.
Result<std::vector<int64_t>> full_pads(const std::vector<int64_t> &pads, const std::optional<std::vector<int64_t>> &axes,
                                       int64_t rank);

}  // namespace tessel
