#pragma once
// The graph optimizer as the tools run it: the default passes, with constants folded by
// running this runtime's kernels.
#include "base/result.h"
#include "codegen/target.h"
#include "graph/ir/graph.h"
#include "graph/passes/pass_manager.h"

namespace tessel {

/// Runs default_passes and the layout passes of the target's kind on a graph, folding
/// constants with the host kernels. The result computes the same outputs for the same inputs.
Result<Graph> optimize_graph(Graph graph, const PassOptions &options = {}, const Target &target = {});

}  // namespace tessel
