#pragma once
// Common subexpression elimination (seed 001 §3.6): nodes computing the same op with the
// same attributes from the same inputs are computed once; equal constants are stored once.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Walks nodes in topological order keyed by op type, domain, canonical attributes, input
/// tensor ids and which outputs exist; a node whose key was seen is dropped and its outputs'
/// readers read the first node's outputs instead (so merges chain: once two nodes merge,
/// their consumers have equal inputs too). Constant tensors with the same dtype, shape and
/// bytes are merged first. Never merges nodes with nested graphs or random ops.
Result<Graph> eliminate_common_subexpressions(Graph graph);

}  // namespace tessel
