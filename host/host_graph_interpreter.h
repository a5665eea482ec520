#pragma once
// Runs nodes and whole (body) graphs on host tensors with host_op.h's plain C++ ops: output
// types inferred from the actual inputs, Constant, If and Loop (host_control_flow.h) here. The deploy runtime's
// host steps go through run_node_on_host.
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Values a body reads from its enclosing graphs, by name.
struct HostScope {
  std::map<std::string, Tensor> values;
  const HostScope *parent = nullptr;
  const Tensor *find(const std::string &name) const;
};

/// Whether run_node_on_host can run the node: an op of host_op.h, Constant, or If or Loop
/// whose bodies hold only such nodes. Lists what cannot in `missing` (op types, once each).
bool can_run_on_host(const Node &node, std::vector<std::string> *missing = nullptr);

/// One node: its output types inferred from `inputs` (nullptr: omitted) and their values,
/// then computed. `num_outputs` outputs, undefined where the node does not produce one.
Result<std::vector<Tensor>> run_node_on_host(const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs,
                                             size_t num_outputs, const HostScope &scope);

/// A graph with these inputs (in the graph's input order); names it reads without defining
/// them come from `scope`. Returns its outputs in order.
Result<std::vector<Tensor>> run_graph_on_host(const Graph &graph, int64_t opset, const std::vector<Tensor> &inputs,
                                              const HostScope &scope);

}  // namespace tessel
