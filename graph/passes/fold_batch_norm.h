#pragma once
// Conv + BatchNormalization folding (seed 001 §3.5, "BN 折叠"): at inference a BatchNorm is a
// per-channel affine map, and so is a conv's output channel, so the pair is one conv with
// rescaled weights and a shifted bias.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// For Conv -> BatchNormalization where the BN runs in inference mode (training_mode 0 and
/// no statistics outputs), the conv's output is read by the BN alone, and the
/// conv weights, its bias (if any) and the BN's scale, B, mean and var are constants of shape
/// [M] (M output channels): with s = scale / sqrt(var + epsilon), the conv gets the new
/// constants W' = W * s (per output channel) and b' = (b - mean) * s + B, as its bias
/// input even where it had none, and writes the BN's output itself. Math in double.
Result<Graph> fold_batch_norm(Graph graph);

}  // namespace tessel
