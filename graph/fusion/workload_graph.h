#pragma once
// The inverse of workload_text (graph/fusion/fuse.h): the one-group graph a tuning database's
// workload text describes, so a workload can be compiled, benchmarked or reported on from its
// key alone, without the model it came from.
#include <memory>
#include <string>

#include "base/result.h"
#include "graph/fusion/fuse.h"
#include "graph/ir/graph.h"

namespace tessel {

/// A workload's graph and the group of all its nodes (the task the workload key names).
struct WorkloadGraph {
  std::shared_ptr<const Graph> graph;
  FusedGroup group;
};

/// Rebuilds the graph of one fused group from its workload text. External inputs become graph
/// inputs, except those whose values the text bakes in (shape-like inputs), which become
/// constants. Graph outputs are the produced tensors no member reads (the text does not say
/// which intermediates the original model also read). The text carries no opset: the graph
/// gets kWorkloadOpset (the exports' opset); an op whose attribute defaults changed between
/// opsets (Softmax's axis before 13) is read with the newer default. Fails, naming the position, on malformed text, and when the rebuilt graph's own
/// workload text differs from `text`.
Result<WorkloadGraph> graph_from_workload_text(const std::string &text);

inline constexpr int64_t kWorkloadOpset = 17;

}  // namespace tessel
