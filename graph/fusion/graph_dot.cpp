#include "graph/fusion/graph_dot.h"

#include <sstream>

namespace tessel {
namespace {

const char *pattern_name(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::Elementwise: return "Elementwise";
    case OpPattern::Broadcast: return "Broadcast";
    case OpPattern::Injective: return "Injective";
    case OpPattern::Reduction: return "Reduction";
    case OpPattern::OutElementwiseFusable: return "OutElementwiseFusable";
    case OpPattern::Opaque: return "Opaque";
  }
  return "?";
}

std::string shape_text(const TensorType &type) {
  return type.rank_known ? shape_to_string(type.shape) : std::string("[*]");
}

/// Lines of a label, each escaped, joined by DOT's line break.
std::string label(const std::vector<std::string> &lines) {
  std::string out;
  for (const std::string &line : lines) out += (out.empty() ? "" : "\\n") + dot_escape(line);
  return out;
}

bool is_host_group(const Graph &g, const FusedGroup &group) {
  return group.nodes.size() == 1 && runs_on_host(g.nodes[group.nodes[0]].op_type);
}

}  // namespace

std::string dot_escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

std::string fused_graph_dot(const Graph &g, const std::vector<FusedGroup> &groups) {
  std::ostringstream dot;
  dot << "digraph \"" << dot_escape(g.name.empty() ? "graph" : g.name) << "\" {\n"
      << "  rankdir=TB;\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9];\n";

  // Graph inputs and outputs get their own nodes (in<i>, out<i>) so a tensor that is both
  // still shows as two ends.
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const TensorInfo &t = g.tensors[g.inputs[i]];
    dot << "  in" << i << " [label=\"" << label({"input", t.name, t.type.to_string()})
        << "\", shape=invhouse, style=filled, fillcolor=\"#d8e8ff\"];\n";
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (g.outputs[i] == kNoTensor) continue;
    const TensorInfo &t = g.tensors[g.outputs[i]];
    dot << "  out" << i << " [label=\"" << label({"output", t.name, t.type.to_string()})
        << "\", shape=house, style=filled, fillcolor=\"#d8ffd8\"];\n";
  }

  for (size_t k = 0; k < groups.size(); ++k) {
    const FusedGroup &group = groups[k];
    const bool host = is_host_group(g, group);
    const std::string title = host ? "host: " + std::string(pattern_name(group.pattern))
                                    : workload_key(g, group) + " (" + pattern_name(group.pattern) + ")";
    dot << "  subgraph cluster_" << k << " {\n"
        << "    label=\"" << label({"group " + std::to_string(k), title}) << "\";\n"
        << (host ? "    style=dashed; color=gray50; fontcolor=gray40;\n" : "    style=rounded; color=\"#4060a0\";\n");
    for (int n : group.nodes) {
      std::vector<std::string> lines = {g.nodes[n].op_type, g.nodes[n].name};
      for (int t : g.node_outputs[n])
        if (t != kNoTensor) lines.push_back(shape_text(g.tensors[t].type));
      dot << "    n" << n << " [label=\"" << label(lines) << "\"" << (host ? ", style=\"rounded,dashed\"" : "")
          << (n == group.anchor && !host ? ", penwidth=2" : "") << "];\n";
    }
    dot << "  }\n";
  }

  // Edges: from a producer node or a graph input to every reader, and into graph outputs.
  std::vector<int> input_index(g.tensors.size(), -1);
  for (size_t i = 0; i < g.inputs.size(); ++i) input_index[g.inputs[i]] = static_cast<int>(i);
  auto source_of = [&](int t) -> std::string {
    if (g.tensor_producer[t] >= 0) return "n" + std::to_string(g.tensor_producer[t]);
    if (input_index[t] >= 0) return "in" + std::to_string(input_index[t]);
    return "";  // constants and values captured from an enclosing graph
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int t : g.node_inputs[n]) {
      if (t == kNoTensor) continue;
      const std::string from = source_of(t);
      if (from.empty()) continue;
      dot << "  " << from << " -> n" << n << " [label=\"" << label({shape_text(g.tensors[t].type)}) << "\"];\n";
    }
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const int t = g.outputs[i];
    if (t == kNoTensor) continue;
    const std::string from = source_of(t);
    if (from.empty()) continue;  // a constant output has nothing to draw an edge from
    dot << "  " << from << " -> out" << i << " [label=\"" << label({shape_text(g.tensors[t].type)}) << "\"];\n";
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace tessel
