#pragma once
// Constant folding (seed 001 §3.5): nodes whose outputs are known at compile time become
// constant tensors, transitively, so the Shape -> Gather -> Unsqueeze -> Concat -> Reshape
// chains of PyTorch exports turn into plain constants.
#include <cstdint>
#include <functional>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Computes one node's outputs from host tensors (`inputs` holds nullptr for omitted
/// optional inputs; `num_outputs` is how many outputs the node has, which some ops such
/// as Split need). graph/ only declares it: the runtime provides the implementation
/// (executor/constant_evaluator.h), since graph/ cannot depend on the kernels.
using ConstantEvaluator = std::function<Result<std::vector<Tensor>>(
    const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs, size_t num_outputs)>;

/// Largest output a folded node may have, in bytes, summed over its outputs.
constexpr size_t kMaxFoldedBytes = 16u << 20;

/// Replaces Constant nodes by constant tensors, Shape and Size of statically known shapes
/// by their values (no evaluator needed), and any other node whose inputs are all constant
/// by its outputs computed with `evaluate`, in topological order so folds chain. Leaves
/// alone: nodes with nested graphs, random ops, non-default domains, nodes whose outputs
/// would exceed kMaxFoldedBytes, and nodes the evaluator fails on (the runtime will report
/// that failure with the real inputs). Needs inferred types (infer_shapes) for Shape/Size.
Result<Graph> fold_constants(Graph graph, const ConstantEvaluator &evaluate);

}  // namespace tessel
