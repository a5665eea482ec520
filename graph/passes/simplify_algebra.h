#pragma once
// Algebraic simplification (seed 001 §3.8): removes operators that do nothing and merges
// pairs that compose into one, as exporters and other passes leave them behind.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Needs inferred types. Rules:
///  - Identity, inference Dropout (mask unused, training_mode absent or false), Cast to the
///    input's own type, and Reshape/Flatten/Squeeze/Unsqueeze whose output shape equals the
///    input shape are removed (readers read the input);
///  - Reshape(Reshape(x)) becomes one Reshape of x, Transpose(Transpose(x)) one Transpose
///    with the composed permutation, removed when that is the identity;
///  - x * ones, x + zeros, zeros + x, x - zeros and Pow(x, ones) with a constant
///    all-ones/all-zeros operand are removed when broadcasting does not change x's shape or
///    type;
///  - Pow(x, 2) and Pow(x, 3) of a float x with a constant exponent become Mul(x, x) and
///    Mul(Mul(x, x), x).
/// Sweeps repeat until nothing changes (at most 8), so chains collapse.
Result<Graph> simplify_algebra(Graph graph);

}  // namespace tessel
