#pragma once
// Model statistics for `tessel inspect`: op histogram, parameter count, FLOPs.
#include <map>
#include <string>

#include "graph/ir/graph.h"

namespace tessel {

struct ModelStats {
  std::map<std::string, int> op_histogram;
  int64_t parameter_count = 0;  // elements of all initializers
  int64_t parameter_bytes = 0;
  int64_t flops = 0;            // multiply-adds count as 2; needs inferred shapes
};

/// Statistics of a graph whose shapes have been inferred (infer_shapes); nested bodies
/// count once.
ModelStats compute_model_stats(const Graph &graph);
/// FLOPs of one node from its input and output types (0 where unknown).
int64_t node_flops(const Graph &graph, int node);

}  // namespace tessel
