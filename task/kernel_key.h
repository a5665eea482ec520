#pragma once
// The text that names everything a kernel is specialized on, so that equal specializations
// (the same conv shape twice in a ResNet) share one compiled kernel, in the JIT's cache and
// in an artifact alike.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/fusion/fuse.h"
#include "graph/ir/graph.h"
#include "task/group_pipeline.h"

namespace tessel {

/// Key text: op, opset, attributes, input types, the values the kernel bakes in, and the
/// output types (their count decides what a kernel computes: MaxPool with or without
/// Indices must not share one).
std::string kernel_key(const Node &node, int64_t opset, const std::vector<TensorType> &input_types,
                       const std::vector<const Tensor *> &baked_values, const std::vector<TensorType> &output_types);

/// Key text of a group specialization: every member's kernel_key with its wiring, and
/// which tensors the group writes.
std::string group_kernel_key(const Graph &graph, const FusedGroup &group, const GroupSignature &signature);

}  // namespace tessel
