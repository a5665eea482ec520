#pragma once
// The model as data: index-based and value-semantic (RefactorGraph, seed 000).
// Topology (which tensor feeds which node) lives in compact index arrays, apart from the
// node and tensor payload, so a pass that only edits payload never touches topology.
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/attribute.h"
#include "tensor/tensor.h"

namespace tessel {

/// Marks an omitted optional input of a node.
constexpr int kNoTensor = -1;

/// Payload of one operator application.
struct Node {
  std::string op_type;
  std::string name;
  std::string domain;  // "" for the default ONNX domain
  Attributes attributes;
};

/// Payload of one tensor: its name, what inference knows, and its value when constant.
struct TensorInfo {
  std::string name;
  TensorType type;
  std::optional<Tensor> constant;  // initializers and folded values
};

/// A dataflow graph. Copying copies the whole graph (value semantics).
struct Graph {
  std::string name;
  int64_t opset = 0;  // default-domain opset version the model was exported with

  // Payload.
  std::vector<Node> nodes;
  std::vector<TensorInfo> tensors;

  // Topology, by index.
  std::vector<std::vector<int>> node_inputs;   // tensor ids per node, kNoTensor if omitted
  std::vector<std::vector<int>> node_outputs;  // tensor ids per node, kNoTensor if omitted
  std::vector<int> tensor_producer;            // node id per tensor, -1 if none
  std::vector<int> inputs;                     // tensors the caller feeds
  std::vector<int> outputs;                    // tensors the caller receives

  int add_tensor(TensorInfo info);
  /// Adds a node; its output tensors get this node as producer.
  int add_node(Node node, std::vector<int> input_ids, std::vector<int> output_ids);
  /// Tensor id by name, or kNoTensor.
  int find_tensor(const std::string &name) const;

  /// Node ids in an order where every producer comes before its consumers. Throws
  /// TesselException naming a node on a cycle if there is one.
  std::vector<int> topological_order() const;
  /// For each tensor, the nodes that read it.
  std::vector<std::vector<int>> consumers() const;
  /// Tensors read by nodes (or by nested subgraphs) that nothing here defines: values a
  /// subgraph captures from its enclosing graph.
  std::vector<std::string> outer_scope_names() const;

  /// Every read of old_tensor (node inputs and graph outputs) now reads new_tensor.
  void replace_uses(int old_tensor, int new_tensor);
  /// The graph without nodes whose outputs nobody needs; tensor and node ids are renumbered.
  Graph without_dead_nodes() const;
  /// Whether the tensor is an initializer or folded constant.
  bool is_constant(int tensor) const { return tensor >= 0 && tensors[tensor].constant.has_value(); }
};

/// Names of enclosing-graph values that the node's bodies (If/Loop) read by name.
std::vector<std::string> node_body_captures(const Node &node);

/// Human-readable listing: inputs, outputs, one line per node in topological order.
std::string print_graph(const Graph &graph);

}  // namespace tessel
