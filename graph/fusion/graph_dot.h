#pragma once
// Graphviz rendering of a partitioned graph, for looking at what fusion did
// (`tessel inspect model.onnx --dot FILE`).
#include <string>
#include <vector>

#include "graph/fusion/fuse.h"
#include "graph/ir/graph.h"

namespace tessel {

/// A `digraph` with one cluster per fused group (labelled with its workload key and
/// pattern; groups that run on the host are dashed and carry no key, since they are no
/// task), nodes labelled op type, name and output shape, edges labelled with the shape of
/// the tensor they carry, and graph inputs and outputs as their own shapes. Constant
/// inputs (weights) are left out: they would outnumber the nodes.
std::string fused_graph_dot(const Graph &graph, const std::vector<FusedGroup> &groups);

/// `text` as the inside of a DOT double-quoted string: quotes and backslashes escaped,
/// line breaks as DOT's \n.
std::string dot_escape(const std::string &text);

}  // namespace tessel
