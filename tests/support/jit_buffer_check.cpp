#include <Halide.h>

#include "tests/support/jit_buffer_check.h"

#include <memory>

#include "codegen/jit_kernel.h"
#include "compute/node_pipeline_internal.h"
#include "compute/pipeline_layout.h"

namespace tessel {

Result<std::vector<float>> run_shifted_copy(int size, int shift, int input_size, int passed_size) {
  auto p = std::make_shared<NodePipeline>();
  p->parameters.push_back(make_dense_parameter(TensorType{DType::Float32, {input_size}}, 0));
  p->parameter_used = {true};
  p->output_types = {TensorType{DType::Float32, {size}}};
  p->computed_outputs = {0};
  Halide::Var x("x");
  Halide::Func out("shifted_copy");
  out(x) = p->parameters[0](x + shift);
  out.output_buffer().dim(0).set_bounds(0, size).set_stride(1);
  out.vectorize(x, 4, Halide::TailStrategy::GuardWithIf);
  p->pipeline = Halide::Pipeline(out);
  auto kernel = JitKernel::compile(p);
  if (!kernel.ok()) return kernel.error();
  Tensor input(DType::Float32, {passed_size});
  for (int i = 0; i < passed_size; ++i) input.data_as<float>()[i] = static_cast<float>(i);
  std::vector<Tensor> outputs;
  outputs.emplace_back(DType::Float32, std::vector<int64_t>{size});
  TESSEL_TRY_VOID(kernel->run({&input}, outputs));
  return std::vector<float>(outputs[0].data_as<float>(), outputs[0].data_as<float>() + size);
}

}  // namespace tessel
