#include <Halide.h>

#include "codegen/jit_kernel.h"

#include "codegen/cuda_device.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "base/cuda_jit_registers.h"
#include "base/scratch_allocator.h"
#include "base/spin_pool.h"
#include "codegen/halide_errors.h"
#include "codegen/resolve_buffer_assertions.h"
#include "compute/node_pipeline_internal.h"
#include "compute/op_compute.h"

namespace tessel {

struct JitKernel::State {
  std::shared_ptr<NodePipeline> pipeline;
  Halide::Target target;
  double compile_seconds = 0;
  /// Per parameter, and per computed output: the shape (Halide order) and type the kernel's
  /// buffer assertions were resolved for, which bind() then requires. Empty: not resolved.
  std::vector<std::optional<DeclaredBuffer>> input_declared, output_declared;
};

namespace {

/// Wraps a tensor's memory as a Halide buffer with dimensions reversed (Halide's dim 0 is
/// the innermost). const_cast: Halide buffers have no const flavour; inputs are only read.
Halide::Buffer<> as_halide_buffer(const Tensor &t, Halide::Type type) {
  std::vector<int> sizes(t.shape().rbegin(), t.shape().rend());
  return Halide::Buffer<>(type, const_cast<void *>(t.data()), sizes);
}

/// Whether `t`, wrapped as a buffer of `type` (dense, min 0), is the buffer the kernel was
/// compiled for: its resolved assertions no longer check.
Result<void> check_declared(const Tensor &t, Halide::Type type, const DeclaredBuffer &declared,
                            const std::string &what) {
  std::vector<int64_t> extents(t.shape().rbegin(), t.shape().rend()), strides;
  int64_t stride = 1;
  for (int64_t e : extents) {
    strides.push_back(stride);
    stride *= std::max<int64_t>(e, 1);
  }
  const bool zero_mins =
      std::all_of(declared.mins.begin(), declared.mins.end(), [](int64_t m) { return m == 0; });
  if (type == declared.type && extents == declared.extents && zero_mins && strides == declared.strides) return {};
  std::string shape;
  for (size_t d = declared.extents.size(); d-- > 0;) shape += (shape.empty() ? "" : "x") + std::to_string(declared.extents[d]);
  return make_error(ErrorKind::InvalidInput, "kernel " + what + " does not match the buffer the kernel was compiled for (" +
                                                 (shape.empty() ? std::string("a scalar") : shape) + ")");
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
    // Parallel loops run on the deploy runtime's pool, as in an artifact, so that a kernel
    // measured here pays what it pays there to start one. Halide's own pool parks its workers
    // after every loop; waking them costs tens of microseconds on a virtual machine, which
    // made the tuner prefer serial schedules for kernels under ~50 us that the deployed
    // pool runs in parallel at little cost.
    handlers.custom_do_par_for = [](Halide::JITUserContext *ctx, int (*task)(Halide::JITUserContext *, int, uint8_t *),
                                    int min, int extent, uint8_t *closure) {
      return spin_pool_par_for(ctx, reinterpret_cast<HalideTask>(task), min, extent, closure);
    };
    // Intermediates come from the deploy runtime's scratch cache too, so a kernel measured
    // here pays what it pays in an artifact for its large blocks (once, not a page fault per
    // page on every call).
    handlers.custom_malloc = [](Halide::JITUserContext *ctx, size_t bytes) { return scratch_allocate(ctx, bytes); };
    handlers.custom_free = [](Halide::JITUserContext *ctx, void *memory) { scratch_free(ctx, memory); };
  }
};

}  // namespace

Result<JitKernel> JitKernel::compile(std::shared_ptr<NodePipeline> pipeline, const Target &target) {
  install_halide_handlers();
  auto state = std::make_shared<State>();
  state->pipeline = std::move(pipeline);
  try {
    // A JIT kernel is always called with allocated buffers (run, bind), never asked for
    // bounds: leaving the bounds-query path out saves about a tenth of the compile.
    state->target = Halide::Target(target.halide_target()).with_feature(Halide::Target::NoBoundsQuery);
    NodePipeline &p = *state->pipeline;
    auto start = std::chrono::steady_clock::now();
    // On the host, the assertions about buffers that bind() guarantees are resolved before code
    // generation (codegen/resolve_buffer_assertions.h). GPU kernels keep them all.
    const bool resolve = !state->target.has_gpu_feature();
    if (resolve) {
      std::vector<DeclaredBuffer> declared;
      state->input_declared.resize(p.parameters.size());
      for (size_t i = 0; i < p.parameters.size(); ++i)
        if (p.parameter_used[i] && (state->input_declared[i] = declared_buffer(p.parameters[i].parameter())))
          declared.push_back(*state->input_declared[i]);
      // One entry per output buffer (a Tuple Func has several), in realization order.
      for (const Halide::Func &output : p.pipeline.outputs())
        for (const Halide::OutputImageParam &buffer : output.output_buffers()) {
          state->output_declared.push_back(declared_buffer(buffer.parameter()));
          if (state->output_declared.back()) declared.push_back(*state->output_declared.back());
        }
      p.pipeline.add_custom_lowering_pass(new ResolveBufferAssertions(declared));
    }
    // The pass stays with the pipeline, which is this kernel's own from here on: clearing it
    // would drop the compiled code, and realize() would compile it again, assertions and all.
    p.pipeline.compile_jit(state->target);
    state->compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::Internal, std::string("Halide failed to compile the kernel: ") + e.what());
  }
  JitKernel kernel;
  kernel.state_ = std::move(state);
  return kernel;
}

Result<void> JitKernel::prepare_shared_runtime() {
  static const Result<void> prepared = []() -> Result<void> {
    install_halide_handlers();
    try {
      // The smallest pipeline that pulls in the whole shared runtime (buffers, errors,
      // parallel loops); compiled, never run.
      Halide::ImageParam input(Halide::Float(32), 1, "runtime_probe_input");
      Halide::Func probe("runtime_probe");
      Halide::Var x("x");
      probe(x) = input(x);
      probe.parallel(x);
      probe.compile_jit(Halide::Target(Target{}.halide_target()));
    } catch (const Halide::Error &e) {
      return make_error(ErrorKind::Internal, std::string("Halide failed to compile its runtime: ") + e.what());
    }
    return {};
  }();
  return prepared;
}

struct JitKernel::Bound::State {
  std::shared_ptr<JitKernel::State> kernel;
  Halide::ParamMap params;
  std::vector<Halide::Buffer<>> inputs, outputs;
  bool gpu = false;
};

Result<JitKernel::Bound> JitKernel::bind(const std::vector<const Tensor *> &inputs, std::vector<Tensor> &outputs) const {
  const NodePipeline &p = *state_->pipeline;
  auto bound = std::make_shared<Bound::State>();
  bound->kernel = state_;
  bound->gpu = state_->target.has_gpu_feature();
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    if (!p.parameter_used[i]) continue;
    if (i >= inputs.size() || inputs[i] == nullptr)
      return make_error(ErrorKind::InvalidInput, "kernel input " + std::to_string(i) + " is missing");
    if (i < state_->input_declared.size() && state_->input_declared[i])
      TESSEL_TRY_VOID(check_declared(*inputs[i], p.parameters[i].type(), *state_->input_declared[i],
                                     "input " + std::to_string(i)));
    bound->inputs.push_back(as_halide_buffer(*inputs[i], p.parameters[i].type()));
    bound->params.set(p.parameters[i], bound->inputs.back());
  }
  for (size_t k = 0; k < p.computed_outputs.size(); ++k) {
    Tensor &t = outputs.at(p.computed_outputs[k]);
    if (k < state_->output_declared.size() && state_->output_declared[k])
      TESSEL_TRY_VOID(check_declared(t, halide_type(t.dtype()), *state_->output_declared[k],
                                     "output " + std::to_string(p.computed_outputs[k])));
    bound->outputs.push_back(as_halide_buffer(t, halide_type(t.dtype())));
  }
  if (bound->gpu) {
    if (Result<void> driver = make_cuda_driver_visible(); !driver.ok()) return driver.error();
    try {
      const Halide::DeviceAPI api = Halide::get_default_device_api_for_target(state_->target);
      for (Halide::Buffer<> &b : bound->inputs) {
        // A buffer wrapped around host memory is not host-dirty, and copy_to_device copies
        // only dirty host memory: without the flag the kernel read uninitialised device memory
        // (every JIT GPU result was wrong on the first H100 run, while artifacts were right).
        b.set_host_dirty();
        if (int err = b.copy_to_device(api, state_->target); err != 0)
          return make_error(ErrorKind::Internal,
                            "copying a kernel input to the GPU failed (Halide error " + std::to_string(err) + ")");
      }
    } catch (const Halide::Error &e) {
      return make_error(ErrorKind::Internal,
                        std::string("binding the kernel's buffers on the GPU failed: ") + e.what());
    }
  }
  Bound result;
  result.state_ = std::move(bound);
  return result;
}

Result<void> JitKernel::Bound::run() {
  State &s = *state_;
  ErrorCapture capture;
  // The driver compiles a GPU pipeline's PTX on its first run, under this register cap.
  if (s.gpu) set_cuda_jit_register_cap(s.kernel->pipeline->gpu_max_registers);
  try {
    Halide::Realization realization(s.outputs);
    Halide::Pipeline pipeline = s.kernel->pipeline->pipeline;  // a handle; realize() is not const
    pipeline.realize(&capture, realization, s.kernel->target, s.params);
    // Kernel launches return at once: wait, so a timed run covers the kernels.
    if (s.gpu && capture.message.empty())
      for (Halide::Buffer<> &b : s.outputs)
        if (int err = b.device_sync(); err != 0)
          return make_error(ErrorKind::Internal,
                            "waiting for the GPU failed (Halide error " + std::to_string(err) + ")");
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::Internal, std::string("kernel failed: ") + e.what());
  }
  if (!capture.message.empty()) return make_error(ErrorKind::Internal, "kernel failed: " + capture.message);
  return {};
}

Result<void> JitKernel::Bound::finish() {
  for (Halide::Buffer<> &b : state_->outputs)
    if (int err = b.copy_to_host(); err != 0)
      return make_error(ErrorKind::Internal,
                        "copying a kernel output back from the GPU failed (Halide error " + std::to_string(err) + ")");
  return {};
}

Result<void> JitKernel::run(const std::vector<const Tensor *> &inputs, std::vector<Tensor> &outputs) const {
  Result<Bound> bound = bind(inputs, outputs);
  if (!bound.ok()) return bound.error();
  if (auto ran = bound->run(); !ran.ok()) return ran.error();
  return bound->finish();
}

bool JitKernel::on_gpu() const { return state_ && state_->target.has_gpu_feature(); }

double JitKernel::compile_seconds() const { return state_ ? state_->compile_seconds : 0; }

}  // namespace tessel
