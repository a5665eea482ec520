#pragma once
// Untuned execution of a whole graph, node by node, through JIT-compiled Halide kernels
// (and host code for metadata ops and control flow).
#include <memory>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "graph/graph.h"
#include "graph/result.h"

namespace tessel {

/// Values visible to a graph by name from enclosing graphs (If/Loop bodies read them).
struct Scope {
  const Graph *graph = nullptr;
  const std::vector<Tensor> *values = nullptr;  // by tensor id of `graph`
  const Scope *parent = nullptr;
  /// The value named `name` here or in an enclosing scope, or nullptr.
  const Tensor *find(const std::string &name) const;
};

/// Runs one node on concrete inputs (nullptr for omitted ones): host code, or the cached
/// kernel for its types. `outputs_wanted` has one entry per node output, false where the
/// output is omitted (its shape need not be inferable). The executor runs every node
/// through this; constant folding (runtime/constant_evaluator.h) does too.
Result<std::vector<Tensor>> run_node(const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs,
                                     const std::vector<bool> &outputs_wanted, const Scope &scope,
                                     const Target &target);

/// Runs a graph. The graph is shared and never modified; several executors may run the same
/// graph concurrently.
class GraphExecutor {
 public:
  explicit GraphExecutor(std::shared_ptr<const Graph> graph, Target target = {});

  /// Runs with one tensor per graph input, in order; checks count, dtype and known dims,
  /// and returns one tensor per graph output.
  Result<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) const;
  /// Same, with outer-scope values for a nested body.
  Result<std::vector<Tensor>> run(const std::vector<Tensor> &inputs, const Scope *outer) const;

  const Graph &graph() const { return *graph_; }
  const Target &target() const { return target_; }

 private:
  Result<void> check_inputs(const std::vector<Tensor> &inputs) const;
  std::shared_ptr<const Graph> graph_;
  Target target_;
  std::vector<int> order_;
};

}  // namespace tessel
