#pragma once
// Process-wide cache of compiled node kernels, keyed by everything a kernel is specialized
// on, so identical nodes (the same conv shape twice in a ResNet) compile once.
#include <string>
#include <vector>

#include "codegen/jit_kernel.h"
#include "graph/graph.h"

namespace tessel {

/// Compile statistics since process start.
struct KernelCacheStats {
  int compiled = 0;
  int hits = 0;
  double compile_seconds = 0;
};

/// Key text: op, opset, attributes, input types, the values the kernel bakes in, and the
/// output types (their count decides what a kernel computes: MaxPool with or without
/// Indices must not share one).
std::string kernel_key(const Node &node, int64_t opset, const std::vector<TensorType> &input_types,
                       const std::vector<const Tensor *> &baked_values, const std::vector<TensorType> &output_types);

/// The kernel for this node specialization, compiling it on first use. Thread-safe.
Result<JitKernel> get_or_compile_kernel(const Node &node, int64_t opset,
                                        const std::vector<TensorType> &input_types,
                                        const std::vector<const Tensor *> &baked_values,
                                        const std::vector<TensorType> &output_types,
                                        const Target &target);

KernelCacheStats kernel_cache_stats();

}  // namespace tessel
