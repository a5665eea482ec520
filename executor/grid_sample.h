#pragma once
// GridSample on the host: X sampled at the normalized positions of a grid (spatial
// transformers, deformable sampling), with every mode and padding mode of opset 16.
#include "base/result.h"
#include "executor/host_ops.h"

namespace tessel {

/// Output [N, C, H_out, W_out] for X [N, C, H, W] and grid [N, H_out, W_out, 2].
Result<Tensor> run_grid_sample(const HostOpContext &ctx, const TensorType &output_type);

}  // namespace tessel
