#pragma once
// Definition of NodePipeline, for schedule/ and codegen/ only. Include <Halide.h> first.
#ifndef HALIDE_H
#error "include <Halide.h> before compute/node_pipeline_internal.h"
#endif

#include <vector>

#include "tensor/tensor.h"

namespace tessel {

struct NodePipeline {
  /// One entry per node input; parameter_used[i] is false for omitted inputs and inputs
  /// the pipeline does not read (value inputs baked in as constants).
  std::vector<Halide::ImageParam> parameters;
  std::vector<bool> parameter_used;
  std::vector<TensorType> output_types;
  /// Indices of the node outputs the pipeline computes, in pipeline output order.
  std::vector<int> computed_outputs;
  Halide::Pipeline pipeline;
  /// GPU pipelines: registers per thread their kernels may use (0: Halide's cap of 64);
  /// see base/cuda_jit_registers.h.
  int gpu_max_registers = 0;
};

}  // namespace tessel
