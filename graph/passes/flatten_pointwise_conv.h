#pragma once
// Activation layout for 1x1 convolutions on the CPU: a pointwise Conv (1x1 kernel,
// no padding) over [N, C, H, W] is a matrix product over the H*W positions, but its kernels
// vectorize along the row (W). Rows of 7 or 14 fill a 16-lane vector by 44% or 88% (the
// 7x7 and 14x14 layers of MobileNet); a flat axis of H*W positions fills them all. A layout
// pass, run for the CPU target only (layout_passes in pass_manager.h).
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Rewrites every pointwise Conv (group 1, 4-D, fully known shapes, output H > 1) to run on
/// [N, C, 1, H*W]: Reshape views in front of the input and behind the result. A strided
/// one (ResNet's downsampling convs) reads a Slice that keeps every s-th row and column,
/// and runs with stride 1: as it was, it read its input through strided vector loads
/// and vectorized along rows of 7 to 28. The
/// elementwise ops after it that a fused task would take along (single reader, other
/// operands scalars, per-channel [M, 1, 1] tensors or full [N, M, H, W] ones, the latter
/// viewed flat too) run flat with it, so the Reshape back comes after them and the fusion
/// groups stay as they were. Graph outputs keep their shapes.
Result<Graph> flatten_pointwise_conv(Graph graph);

}  // namespace tessel
