#include <Halide.h>

#include "compute/pipeline_layout.h"

namespace tessel {

Halide::ImageParam make_dense_parameter(const TensorType &type, int index) {
  const int rank = static_cast<int>(type.shape.size());
  Halide::ImageParam p(halide_type(type.dtype), rank, "in" + std::to_string(index));
  int64_t stride = 1;
  for (int d = 0; d < rank; ++d) {  // Halide dim d is ONNX axis rank-1-d
    const int64_t extent = type.shape[rank - 1 - d];
    p.dim(d).set_bounds(0, static_cast<int>(extent)).set_stride(static_cast<int>(stride));
    stride *= std::max<int64_t>(extent, 1);
  }
  return p;
}

void pin_dense_output_layout(TensorFunc &output) {
  if (output.func.outputs() != 1) return;
  Halide::OutputImageParam buffer = output.func.output_buffer();
  int64_t stride = 1;
  for (int d = 0; d < output.rank(); ++d) {  // Halide dim d is ONNX axis rank-1-d
    const int64_t extent = output.shape[output.rank() - 1 - d];
    buffer.dim(d).set_bounds(0, static_cast<int>(extent)).set_stride(static_cast<int>(stride));
    stride *= std::max<int64_t>(extent, 1);
  }
}

void record_used_parameters(NodePipeline &p) {
  std::vector<Halide::Argument> args = p.pipeline.infer_arguments();
  p.parameter_used.assign(p.parameters.size(), false);
  for (size_t i = 0; i < p.parameters.size(); ++i)
    for (const Halide::Argument &a : args)
      if (p.parameters[i].defined() && a.name == p.parameters[i].name()) p.parameter_used[i] = true;
}

}  // namespace tessel
