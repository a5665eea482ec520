#include "graph/passes/eliminate_dead_code.h"

#include "graph/ir/graph_rewriter.h"

namespace tessel {

Result<Graph> eliminate_dead_code(Graph graph) {
  return guarded([&]() -> Graph {
    // without_dead_nodes follows explicit inputs only, but If/Loop bodies read enclosing
    // values by name: list those as outputs for the walk, then drop them again (they come
    // after the real outputs, so the real ones keep their order).
    const size_t num_outputs = graph.outputs.size();
    for (int t : captured_tensors(graph)) graph.outputs.push_back(t);
    Graph pruned = graph.without_dead_nodes();
    pruned.outputs.resize(num_outputs);
    return pruned;
  });
}

}  // namespace tessel
