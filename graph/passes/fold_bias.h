#pragma once
// Bias folding: an Add of a constant right after a Conv or MatMul is the bias the op can
// add itself, saving a pass over the output.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Two rewrites, each only when the producer's output is read by the Add alone:
///  - Conv -> Add(c) with c constant and broadcastable as a per-output-channel bias
///    (e.g. [M,1,1] or [1,M,1,1], or all ones dims): c is added into the conv's bias (a new
///    constant; one is created if the conv had none), and the conv writes the Add's output;
///  - MatMul(A, W) -> Add(c) with A 2-D, W a 2-D constant [K,N] and c a 1-D constant [N]:
///    becomes Gemm(A, W, c) (opset >= 7, where Gemm broadcasts C).
Result<Graph> fold_bias(Graph graph);

}  // namespace tessel
