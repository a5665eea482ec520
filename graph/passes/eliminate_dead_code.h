#pragma once
// Dead code elimination (seed 001 §3.7): other passes leave nodes behind whose results
// nobody reads any more (the Shape feeding a folded Reshape, a BatchNorm's old conv output);
// this removes them, and the constants only they read.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// The graph without nodes whose outputs reach neither a graph output nor a value that a
/// nested body reads by name (Graph::without_dead_nodes, with those values as extra roots).
Result<Graph> eliminate_dead_code(Graph graph);

}  // namespace tessel
