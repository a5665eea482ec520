#include <Halide.h>

#include "codegen/jit_kernel.h"

#include <chrono>
#include <string>

#include "codegen/halide_errors.h"
#include "schedule/node_pipeline_internal.h"
#include "schedule/op_compute.h"

namespace tessel {

struct JitKernel::State {
  std::shared_ptr<NodePipeline> pipeline;
  Halide::Target target;
  double compile_seconds = 0;
};

namespace {

/// Wraps a tensor's memory as a Halide buffer with dimensions reversed (Halide's dim 0 is
/// the innermost). const_cast: Halide buffers have no const flavour; inputs are only read.
Halide::Buffer<> as_halide_buffer(const Tensor &t, Halide::Type type) {
  std::vector<int> sizes(t.shape().rbegin(), t.shape().rend());
  return Halide::Buffer<>(type, const_cast<void *>(t.data()), sizes);
}

/// Collects the first error message a pipeline reports during one call.
struct ErrorCapture : Halide::JITUserContext {
  std::string message;
  ErrorCapture() {
    handlers.custom_error = [](Halide::JITUserContext *ctx, const char *msg) {
      auto *self = static_cast<ErrorCapture *>(ctx);
      if (self->message.empty()) self->message = msg;
    };
    handlers.custom_print = [](Halide::JITUserContext *, const char *) {};
  }
};

}  // namespace

Result<JitKernel> JitKernel::compile(std::shared_ptr<NodePipeline> pipeline, const Target &target) {
  install_halide_handlers();
  auto state = std::make_shared<State>();
  state->pipeline = std::move(pipeline);
  try {
    state->target = Halide::Target(target.halide_target());
    if (state->target.has_gpu_feature())
      return make_error("JIT kernels run on the host CPU; target '" + target.to_string() +
                        "' needs the CUDA backend");
    auto start = std::chrono::steady_clock::now();
    state->pipeline->pipeline.compile_jit(state->target);
    state->compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const Halide::Error &e) {
    return make_error(std::string("Halide failed to compile the kernel: ") + e.what());
  }
  JitKernel kernel;
  kernel.state_ = std::move(state);
  return kernel;
}

Result<void> JitKernel::run(const std::vector<const Tensor *> &inputs, std::vector<Tensor> &outputs) const {
  const NodePipeline &p = *state_->pipeline;
  Halide::ParamMap params;
  std::vector<Halide::Buffer<>> keep_alive;
  keep_alive.reserve(inputs.size() + outputs.size());
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    if (!p.parameter_used[i]) continue;
    if (i >= inputs.size() || inputs[i] == nullptr)
      return make_error("kernel input " + std::to_string(i) + " is missing");
    keep_alive.push_back(as_halide_buffer(*inputs[i], p.parameters[i].type()));
    params.set(p.parameters[i], keep_alive.back());
  }
  std::vector<Halide::Buffer<>> out_buffers;
  for (int index : p.computed_outputs) {
    Tensor &t = outputs.at(index);
    out_buffers.push_back(as_halide_buffer(t, halide_type(t.dtype())));
  }
  ErrorCapture capture;
  try {
    Halide::Realization realization(out_buffers);
    Halide::Pipeline pipeline = p.pipeline;  // a handle; realize() is not const
    pipeline.realize(&capture, realization, state_->target, params);
  } catch (const Halide::Error &e) {
    return make_error(std::string("kernel failed: ") + e.what());
  }
  if (!capture.message.empty()) return make_error("kernel failed: " + capture.message);
  return {};
}

double JitKernel::compile_seconds() const { return state_ ? state_->compile_seconds : 0; }

}  // namespace tessel
