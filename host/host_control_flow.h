#pragma once
// If and Loop as the ONNX spec drives them (seed 003), with the running of a body left to the
// caller: the executor runs bodies through its JIT, the deploy runtime through host ops.
#include <functional>
#include <memory>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Runs a body with these inputs (the body's input order); the caller's scope supplies the
/// enclosing values it captures.
using BodyRunner =
    std::function<Result<std::vector<Tensor>>(const std::shared_ptr<const Graph> &body, const std::vector<Tensor> &inputs)>;

/// If: the branch its single-value condition picks.
Result<std::vector<Tensor>> run_if_node(const Node &node, const std::vector<const Tensor *> &inputs,
                                        const BodyRunner &run_body);

/// Loop: trip count and condition (both optional), loop-carried values, and scan outputs
/// stacked along a new leading axis.
Result<std::vector<Tensor>> run_loop_node(const Node &node, const std::vector<const Tensor *> &inputs,
                                          const BodyRunner &run_body);

}  // namespace tessel
