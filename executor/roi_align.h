#pragma once
// RoiAlign on the host: each region of interest pooled to a fixed grid by averaging (or
// taking the largest of) bilinear samples, as two-stage detectors (Faster R-CNN) use it.
// Regions come from the model's own proposals, so their count is known only at run time.
#include "base/result.h"
#include "executor/host_ops.h"

namespace tessel {

/// Output [num_rois, C, output_height, output_width] of the ONNX op, every attribute of
/// opsets 10 and 16 (coordinate_transformation_mode, mode, sampling_ratio, spatial_scale).
Result<Tensor> run_roi_align(const HostOpContext &ctx, const TensorType &output_type);

}  // namespace tessel
