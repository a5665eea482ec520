#pragma once
// The kernels `tessel bench` and bench/ measure, as one-node graphs with constant weights:
// matmul MxNxK (A fed, B constant) and conv NxCxHxW with K filters of RxS.
#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/result.h"

namespace tessel {

/// `kind` is "matmul" (spec "MxNxK") or "conv" (spec "N,C,H,W,K,R,S[,stride[,pad]]", pad
/// defaulting to R/2). Errors say what the spec should look like.
Result<std::shared_ptr<const Graph>> make_benchmark_graph(const std::string &kind, const std::string &spec);

}  // namespace tessel
