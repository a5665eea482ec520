#pragma once
// Builds one-node graphs and runs them, for op unit tests.
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "runtime/graph_executor.h"

namespace tessel::testing {

/// A graph with one node of `op` reading the given inputs (all fed by the caller, or
/// constant where `constants[i]` is set) and producing `num_outputs` outputs.
inline Graph single_node_graph(const std::string &op, const std::vector<TensorType> &inputs,
                               size_t num_outputs = 1, Attributes attributes = {},
                               const std::vector<std::optional<Tensor>> &constants = {}, int64_t opset = 17) {
  Graph g;
  g.name = op + "_test";
  g.opset = opset;
  std::vector<int> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorInfo info{"in" + std::to_string(i), inputs[i], std::nullopt};
    if (i < constants.size() && constants[i]) info.constant = constants[i];
    int id = g.add_tensor(info);
    ins.push_back(id);
    if (!info.constant) g.inputs.push_back(id);
  }
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(g.add_tensor({"out" + std::to_string(i), {}, std::nullopt}));
  g.add_node(Node{op, op + "_node", "", std::move(attributes)}, ins, outs);
  g.outputs = outs;
  return g;
}

/// Runs a graph on inputs; fails the test with the error message if it does not run.
inline std::vector<Tensor> run_graph(const Graph &g, const std::vector<Tensor> &inputs) {
  GraphExecutor executor(std::make_shared<const Graph>(g));
  auto out = executor.run(inputs);
  if (!out.ok()) throw std::runtime_error(out.error().message);
  return out.value();
}

/// A float32 tensor with the given values.
inline Tensor float_tensor(Shape shape, const std::vector<float> &values) {
  Tensor t(DType::Float32, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

}  // namespace tessel::testing
