#include <sstream>

#include "graph/ir/graph.h"

namespace tessel {

static std::string tensor_ref(const Graph &g, int t) {
  if (t == kNoTensor) return "<none>";
  const TensorInfo &info = g.tensors[t];
  return "%" + info.name + ":" + info.type.to_string() + (info.constant ? "(const)" : "");
}

std::string print_graph(const Graph &graph) {
  std::ostringstream os;
  os << "graph " << graph.name << " (opset " << graph.opset << ")\n";
  for (int t : graph.inputs) os << "  input  " << tensor_ref(graph, t) << "\n";
  for (int n : graph.topological_order()) {
    const Node &node = graph.nodes[n];
    os << "  ";
    for (size_t i = 0; i < graph.node_outputs[n].size(); ++i)
      os << (i ? ", " : "") << tensor_ref(graph, graph.node_outputs[n][i]);
    os << " = " << node.op_type << "[" << node.name << "](";
    for (size_t i = 0; i < graph.node_inputs[n].size(); ++i)
      os << (i ? ", " : "") << tensor_ref(graph, graph.node_inputs[n][i]);
    os << ")";
    std::string attrs = node.attributes.canonical_text();
    if (!attrs.empty() && attrs.size() < 200) os << " {" << attrs << "}";
    os << "\n";
  }
  for (int t : graph.outputs) os << "  output " << tensor_ref(graph, t) << "\n";
  return os.str();
}

}  // namespace tessel
