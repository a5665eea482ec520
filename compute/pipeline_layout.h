#pragma once
// Buffer layouts of kernel pipelines, for schedule/ only. Include <Halide.h> first.
#ifndef HALIDE_H
#error "include <Halide.h> before compute/pipeline_layout.h"
#endif

#include "compute/node_pipeline_internal.h"
#include "compute/op_compute.h"
#include "tensor/tensor.h"

namespace tessel {

/// An input parameter with its exact shape and dense strides declared, so Halide can
/// specialize on them (the runtime always passes such buffers).
Halide::ImageParam make_dense_parameter(const TensorType &type, int index);

/// Declares an output buffer's exact extents and dense strides: knowing them lets Halide
/// drop bounds arithmetic (2-4x on small kernels).
void pin_dense_output_layout(TensorFunc &output);

/// Marks which parameters the built pipeline actually reads (value inputs baked in as
/// constants are not bound at run time).
void record_used_parameters(NodePipeline &pipeline);

}  // namespace tessel
