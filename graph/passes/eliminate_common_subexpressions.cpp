#include "graph/passes/eliminate_common_subexpressions.h"

#include <cstring>
#include <string_view>
#include <unordered_map>

#include "graph/ir/graph_rewriter.h"

namespace tessel {

/// Points readers of every constant at the first constant with the same type and bytes.
static void merge_equal_constants(GraphRewriter &rewriter) {
  const Graph &g = rewriter.graph();
  // Bucketed by type and a hash of the bytes; equal hashes are confirmed byte by byte.
  std::unordered_map<std::string, std::vector<int>> buckets;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const int t = static_cast<int>(i);
    const Tensor *value = constant_value(g, t);
    // Pinned constants (graph outputs) keep their own tensor; produced ones are nodes' job.
    if (!value || rewriter.producer(t) >= 0 || rewriter.is_pinned(t) || !rewriter.is_used(t)) continue;
    const std::string_view bytes(static_cast<const char *>(value->data()), value->bytes());
    const std::string key = value->type().to_string() + "#" + std::to_string(std::hash<std::string_view>{}(bytes));
    std::vector<int> &bucket = buckets[key];
    int same = -1;
    for (int other : bucket) {
      const Tensor &o = *constant_value(g, other);
      if (o.bytes() == value->bytes() && std::memcmp(o.data(), value->data(), value->bytes()) == 0) {
        same = other;
        break;
      }
    }
    if (same >= 0) rewriter.merge_into(same, t);
    else bucket.push_back(t);
  }
}

Result<Graph> eliminate_common_subexpressions(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rewriter(std::move(graph));
    merge_equal_constants(rewriter);
    const Graph &g = rewriter.graph();
    std::unordered_map<std::string, int> first_with_key;
    for (int n : rewriter.order()) {
      const Node &node = g.nodes[n];
      if (node_has_subgraph(node) || is_nondeterministic_op(node.op_type)) continue;
      // The node's name is not part of the key: it does not change what is computed.
      std::string key = node.op_type + "\n" + node.domain + "\n" + node.attributes.canonical_text() + "\n";
      for (int t : g.node_inputs[n]) key += std::to_string(t) + ",";
      key += "\n";
      for (int t : g.node_outputs[n]) key += t == kNoTensor ? '_' : 'o';
      auto [it, inserted] = first_with_key.emplace(key, n);
      if (inserted) continue;
      const int first = it->second;
      const std::vector<int> outs = g.node_outputs[n];
      bool mergeable = true;
      for (size_t i = 0; i < outs.size(); ++i)
        if (outs[i] != kNoTensor) mergeable &= rewriter.can_merge(g.node_outputs[first][i], outs[i]);
      if (!mergeable) continue;
      rewriter.remove_node(n);
      for (size_t i = 0; i < outs.size(); ++i)
        if (outs[i] != kNoTensor) rewriter.merge_into(g.node_outputs[first][i], outs[i]);
    }
    return rewriter.finish();
  });
}

}  // namespace tessel
