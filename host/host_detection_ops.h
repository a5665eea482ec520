#pragma once
// Internal to host/: RoiAlign (host_roi_align.cpp), registered with the other detection ops.
#include "host/host_op.h"

namespace tessel {

/// Output [num_rois, C, output_height, output_width] of the ONNX op, every attribute of
/// opsets 10 and 16 (coordinate_transformation_mode, mode, sampling_ratio, spatial_scale).
Tensor roi_align(const HostCall &call);

}  // namespace tessel
