#pragma once
// A node's pipeline compiled through Halide's JIT for the host CPU or, with a cuda target,
// for the GPU of this machine (light header).
#include <memory>
#include <vector>

#include "base/result.h"
#include "codegen/target.h"
#include "tensor/tensor.h"

namespace tessel {

struct NodePipeline;

/// A compiled, callable kernel. Cheap to copy (shared); run() is safe from several threads.
class JitKernel {
 public:
  /// Compiles for the host. A Halide compile error is an Error, not an abort.
  static Result<JitKernel> compile(std::shared_ptr<NodePipeline> pipeline, const Target &target = {});

  /// Compiles Halide's JIT runtime for the host now, once per process, without running
  /// anything. A process's first compile pays for it (about 0.4 s, as much as a kernel), so a
  /// parent that forks one worker per candidate calls this first and every worker inherits it.
  static Result<void> prepare_shared_runtime();

  /// Runs with inputs positionally matching the node's inputs (nullptr for omitted ones)
  /// and writes into outputs, which must be allocated with the inferred types (one per
  /// node output; outputs the kernel does not compute are left untouched).
  Result<void> run(const std::vector<const Tensor *> &inputs, std::vector<Tensor> &outputs) const;

  double compile_seconds() const;
  /// Whether the kernel runs on a GPU (its outputs are copied back after each run()).
  bool on_gpu() const;

  /// Inputs and outputs bound once for repeated runs, as a benchmark wants them: on a GPU
  /// the inputs are copied to the device when bound and the outputs stay there, so run()
  /// times only the kernels (it waits for the device to finish); finish() copies the
  /// outputs back. The tensors must outlive the binding.
  class Bound {
   public:
    Result<void> run();
    Result<void> finish();

   private:
    friend class JitKernel;
    struct State;
    std::shared_ptr<State> state_;
  };
  Result<Bound> bind(const std::vector<const Tensor *> &inputs, std::vector<Tensor> &outputs) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tessel
