#pragma once
// A node's pipeline compiled for the host CPU through Halide's JIT (light header).
#include <memory>
#include <vector>

#include "codegen/target.h"
#include "graph/result.h"
#include "graph/tensor.h"

namespace tessel {

struct NodePipeline;

/// A compiled, callable kernel. Cheap to copy (shared); run() is safe from several threads.
class JitKernel {
 public:
  /// Compiles for the host. A Halide compile error is an Error, not an abort.
  static Result<JitKernel> compile(std::shared_ptr<NodePipeline> pipeline, const Target &target = {});

  /// Runs with inputs positionally matching the node's inputs (nullptr for omitted ones)
  /// and writes into outputs, which must be allocated with the inferred types (one per
  /// node output; outputs the kernel does not compute are left untouched).
  Result<void> run(const std::vector<const Tensor *> &inputs, std::vector<Tensor> &outputs) const;

  double compile_seconds() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tessel
