#include "executor/constant_evaluator.h"

#include "executor/graph_executor.h"

namespace tessel {

Result<std::vector<Tensor>> evaluate_constant_node(const Node &node, int64_t opset,
                                                   const std::vector<const Tensor *> &inputs, size_t num_outputs,
                                                   const Target &target) {
  if (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan")
    return make_error(ErrorKind::Unsupported,
                      "node '" + node.name + "' (" + node.op_type + "): control flow is not evaluated at compile time");
  // No enclosing values: a node without a body reads only its explicit inputs.
  const Scope no_scope{};
  try {
    return run_node(node, opset, inputs, std::vector<bool>(num_outputs, true), no_scope, target);
  } catch (const std::exception &e) {
    return make_error("node '" + node.name + "' (" + node.op_type + "): " + e.what());
  }
}

ConstantEvaluator make_constant_evaluator(Target target) {
  return [target](const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs, size_t num_outputs) {
    return evaluate_constant_node(node, opset, inputs, num_outputs, target);
  };
}

}  // namespace tessel
