#pragma once
// Process-wide cache of compiled node kernels, keyed by everything a kernel is specialized
// on, so identical nodes (the same conv shape twice in a ResNet) compile once.
#include <string>
#include <vector>

#include "codegen/jit_kernel.h"
#include "graph/ir/graph.h"
#include "task/group_pipeline.h"
#include "task/kernel_key.h"
#include "task/task.h"

namespace tessel {

/// Compile statistics since process start.
struct KernelCacheStats {
  int compiled = 0;
  int hits = 0;
  double compile_seconds = 0;
};

/// The kernel for this node specialization, compiling it on first use. Thread-safe.
Result<JitKernel> get_or_compile_kernel(const Node &node, int64_t opset,
                                        const std::vector<TensorType> &input_types,
                                        const std::vector<const Tensor *> &baked_values,
                                        const std::vector<TensorType> &output_types,
                                        const Target &target);

/// The kernel for a fused group specialization: `key` names everything the kernel is
/// specialized on (see group_kernel_key). A build failure is cached too, so a group that
/// cannot fuse is not rebuilt on every run.
Result<JitKernel> get_or_compile_group_kernel(const std::string &key, const Graph &graph, const FusedGroup &group,
                                              const GroupSignature &signature, const Target &target);

/// The same with a tuned schedule (its text) replayed onto the group's plain compute.
Result<JitKernel> get_or_compile_tuned_group_kernel(const std::string &key, const std::string &schedule_text,
                                                    const Graph &graph, const FusedGroup &group,
                                                    const GroupSignature &signature, const Target &target);


KernelCacheStats kernel_cache_stats();

}  // namespace tessel
