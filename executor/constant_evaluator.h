#pragma once
// The runtime's ConstantEvaluator for graph/fold_constants: a folded node is computed
// exactly as the executor would compute it at run time (host op or JIT kernel), so folding
// never changes a model's numbers.
#include <vector>

#include "codegen/target.h"
#include "graph/passes/fold_constants.h"

namespace tessel {

/// Runs one node on host tensors through the executor's per-node path (run_node). Nodes
/// with nested graphs are rejected: folding leaves them alone, and their bodies would need
/// the enclosing graph's values.
Result<std::vector<Tensor>> evaluate_constant_node(const Node &node, int64_t opset,
                                                   const std::vector<const Tensor *> &inputs, size_t num_outputs,
                                                   const Target &target = {});

/// evaluate_constant_node bound to a target, as fold_constants and default_passes take it.
ConstantEvaluator make_constant_evaluator(Target target = {});

}  // namespace tessel
