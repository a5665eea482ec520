#pragma once
// A model as the tools see it: imported from ONNX and optimized for its target, as one
// library call (the CLI, the benchmarks and a C++ user share it).
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// How the graph optimizer runs before anything else.
struct OptimizeOptions {
  bool enabled = true;
  bool print_after_each = false;
  std::vector<std::string> skip;
  /// The --target the graph is compiled for: layout passes differ per target.
  std::string target = "llvm";
};

/// load_model, then the graph optimizer as the options say; errors are printed by callers.
Result<Graph> load_optimized_model(const std::string &path, const OptimizeOptions &options);
/// The graph optimizer as the options say, on a graph a tool built itself (the kernel of
/// `tessel tune --op` or `tessel bench KIND`): with the target's layout passes, so that it
/// tunes and times what a model's node of the same shape runs, under the same workload key.
Result<Graph> optimize_as_told(Graph graph, const OptimizeOptions &options);

}  // namespace tessel
