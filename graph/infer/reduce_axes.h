#pragma once
// Which axes a Reduce* node reduces and the shape it leaves, read once for shape inference
// (graph/infer/infer_reduction.cpp) and the compute rule (compute/compute_reduction.cpp) so the
// two cannot disagree.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "graph/ir/attribute.h"
#include "tensor/tensor.h"

namespace tessel {

/// What a Reduce* op computes, for the compute rule and the host op alike.
enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

/// Every Reduce* op type with its kind.
const std::vector<std::pair<std::string, ReduceKind>> &reduce_op_kinds();

/// Marks the reduced axes among `rank`. Older opsets list them in the `axes` attribute;
/// newer ones (ReduceSum from 13, the others from 18) in optional input 1, whose value is
/// `input_axes` (read it only when the node has no `axes` attribute; empty when omitted).
/// Negative axes count from the back. An empty list reduces every axis, or none under
/// noop_with_empty_axes. Fails naming an axis out of range or listed twice.
Result<std::vector<bool>> reduced_axis_mask(const Attributes &attrs, const std::vector<int64_t> &input_axes,
                                            int64_t rank);

/// `in` with the axes marked in `reduced` set to 1 (keepdims) or dropped.
Shape reduced_shape(const Shape &in, const std::vector<bool> &reduced, bool keepdims);

}  // namespace tessel
