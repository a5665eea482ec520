#pragma once
// Shared machinery of the graph optimizer's passes: an editable view of a Graph that keeps
// the readers of every tensor current while nodes are rewired and removed, knows which
// tensors must keep their names (graph inputs/outputs, values nested bodies capture by
// name), and rebuilds a compact Graph at the end.
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Whether a node carries a nested graph (If/Loop bodies); passes leave such nodes alone.
bool node_has_subgraph(const Node &node);

/// Ops whose result differs from run to run: never folded or merged.
bool is_nondeterministic_op(const std::string &op_type);

/// The value of a tensor known at compile time (initializer, folded value, or a Constant,
/// Shape or Size output that inference recorded), or nullptr.
const Tensor *constant_value(const Graph &graph, int tensor);

/// Runs a pass's body, turning exceptions from deep helpers (a cycle found while ordering
/// nodes, an attribute of the wrong kind) into an Error: a pass is a module boundary.
template <typename Body>
Result<Graph> guarded(Body &&body) {
  try {
    return body();
  } catch (const std::exception &e) {
    return make_error(e.what());
  }
}

/// Tensors of this graph that nested bodies read by name without listing them as inputs.
std::set<int> captured_tensors(const Graph &graph);

class GraphRewriter {
 public:
  explicit GraphRewriter(Graph graph);

  const Graph &graph() const { return graph_; }
  /// Direct payload access (attributes, tensor types); topology goes through the methods below.
  Node &node(int n) { return graph_.nodes[n]; }
  TensorInfo &tensor(int t) { return graph_.tensors[t]; }

  /// Live nodes reading the tensor, in increasing node id.
  const std::vector<int> &readers(int tensor) const { return readers_[tensor]; }
  /// Graph inputs and outputs and values nested bodies capture by name: they keep their
  /// tensor (and so their name), whatever is rewritten around them.
  bool is_pinned(int tensor) const { return pinned_.count(tensor) != 0; }
  /// Read by a live node, or pinned.
  bool is_used(int tensor) const { return is_pinned(tensor) || !readers_[tensor].empty(); }
  /// The tensor's single live reader when it has exactly one and is not pinned, else -1.
  int sole_reader(int tensor) const;
  int producer(int tensor) const { return graph_.tensor_producer[tensor]; }
  bool is_removed(int node) const { return removed_[node]; }

  /// Live node ids in topological order (computed once, at construction; nodes added later
  /// are not in it).
  const std::vector<int> &order() const { return order_; }

  /// Node n's input slot now reads `tensor`; a slot past the end adds the input (earlier
  /// missing ones become omitted).
  void set_input(int n, size_t slot, int tensor);
  /// Node n's output slot now writes `tensor` (which must have no other producer).
  void set_output(int n, size_t slot, int tensor);
  /// Removes a node: its inputs lose a reader, its outputs lose their producer.
  void remove_node(int n);

  /// Whether readers of `drop` can be pointed at `keep` by merge_into (see there).
  bool can_merge(int keep, int drop) const;
  /// Makes every reader of `drop` read `keep`, both holding the same value; `drop`'s
  /// producer must already be removed. When `drop` is pinned it keeps its name instead:
  /// `keep`'s producer then writes `drop` and `keep`'s readers move over (or, for a
  /// constant `keep`, `drop` becomes the same constant). Returns the surviving tensor.
  int merge_into(int keep, int drop);

  /// A new tensor with a name unused in the graph, starting with `base`.
  int add_tensor(const std::string &base, TensorType type, std::optional<Tensor> constant = std::nullopt);
  int add_constant(const std::string &base, Tensor value);
  int add_node(Node node, std::vector<int> inputs, std::vector<int> outputs);

  /// The graph without removed nodes and without tensors nothing refers to any more
  /// (unused initializers included); ids are renumbered, graph inputs/outputs kept.
  Graph finish() const;

 private:
  Graph graph_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> removed_;
  std::set<int> pinned_;
  std::set<std::string> names_;
  std::vector<int> order_;
};

}  // namespace tessel
