#pragma once
// Tasks for schedule tests: small graphs (one op, or a fused conv epilogue) made into
// Tasks with static shapes and constant weights.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "executor/model_inputs.h"
#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"
#include "task/task.h"

namespace tessel::testing {

/// Builds graphs node by node with named tensors.
struct GraphBuilder {
  Graph g;
  explicit GraphBuilder(const std::string &name) {
    g.name = name;
    g.opset = 17;
  }
  int input(const std::string &name, DType dtype, Shape shape) {
    int t = g.add_tensor({name, TensorType{dtype, shape, true}, std::nullopt});
    g.inputs.push_back(t);
    return t;
  }
  /// A constant with random (seeded) values.
  int weight(const std::string &name, DType dtype, Shape shape, uint64_t seed) {
    TensorType type{dtype, shape, true};
    return g.add_tensor({name, type, random_tensor(type, seed)});
  }
  int node(const std::string &op, const std::vector<int> &inputs, Attributes attrs = {}) {
    const int out = g.add_tensor({op + "_out" + std::to_string(g.nodes.size()), {}, std::nullopt});
    g.add_node(Node{op, op + "_" + std::to_string(g.nodes.size()), "", std::move(attrs)}, inputs, {out});
    return out;
  }
  /// The graph with `outputs`, shapes inferred.
  std::shared_ptr<const Graph> finish(const std::vector<int> &outputs) {
    g.outputs = outputs;
    auto inferred = infer_shapes(g);
    REQUIRE(inferred.ok());
    return std::make_shared<const Graph>(std::move(inferred.value()));
  }
};

/// The task of the graph's largest fused group.
inline Task largest_task(std::shared_ptr<const Graph> graph) {
  const std::vector<FusedGroup> groups = partition_graph(*graph);
  const FusedGroup *largest = &groups.front();
  for (const FusedGroup &group : groups)
    if (group.nodes.size() > largest->nodes.size()) largest = &group;
  auto task = make_task(graph, *largest);
  INFO((task.ok() ? std::string() : task.error().message));
  REQUIRE(task.ok());
  return std::move(task.value());
}

}  // namespace tessel::testing
