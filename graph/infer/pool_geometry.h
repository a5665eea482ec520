#pragma once
// Window geometry of MaxPool, AveragePool and LpPool over the spatial axes (ONNX axes 2..),
// resolved once for shape inference (graph/infer/infer_pool_norm.cpp) and the compute rule
// (compute/compute_pool.cpp) so that output sizes and pads always agree.
#include <cstdint>
#include <vector>

#include "base/result.h"
#include "graph/ir/attribute.h"
#include "tensor/tensor.h"

namespace tessel {

/// Per spatial axis: the input extent, the window, the pads in effect (auto_pad resolved)
/// and the output extent. Output element o reads input positions
/// o * strides - pad_begin + k * dilations for k in [0, kernel).
struct PoolGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
};

/// Checks kernel_shape, strides, dilations, pads, auto_pad (NOTSET, VALID, SAME_UPPER,
/// SAME_LOWER) and ceil_mode against the spatial extents `spatial_in`, and resolves them.
/// Where an extent is kUnknownDim, so is the output extent. Fails naming the attribute that
/// is missing, has the wrong length or a bad value, or a window larger than its padded axis.
Result<PoolGeometry> pool_geometry(const Attributes &attrs, const Shape &spatial_in);

}  // namespace tessel
