#pragma once
// The kernels `tessel bench`, `tessel tune --op` and bench/ measure, as small graphs whose
// weights are constants and whose activations are fed: one task each.
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

struct BenchmarkGraphOptions {
  /// matmul, conv, depthwise: a per-channel bias add and a ReLU fused after the product.
  bool bias_relu = false;
  /// elementwise: the steps applied to the first input, in order. Binary steps (add, sub,
  /// mul) read one more fed input of the same shape; unary ones are relu, sigmoid, tanh, exp, abs.
  std::vector<std::string> chain = {"add", "relu", "mul"};
};

/// `kind` and its `spec`:
///   matmul       MxNxK (B constant) or BxMxNxK (A[B,M,K] x B[B,K,N], both fed)
///   conv         N,C,H,W,K,R,S[,stride[,pad[,groups]]]  (pad defaults to R/2; "conv2d" too)
///   depthwise    N,C,H,W,R,S[,stride[,pad]]             (groups = C = K)
///   softmax, layernorm, reduce_sum, reduce_mean, reduce_max ("reduce" = reduce_sum), elementwise
///                AxB[x...]: over (or along) the last axis
/// Errors say what the spec should look like.
Result<std::shared_ptr<const Graph>> make_benchmark_graph(const std::string &kind, const std::string &spec,
                                                          const BenchmarkGraphOptions &options = {});

/// Every kind make_benchmark_graph knows, for help texts and errors.
const std::vector<std::string> &benchmark_kernel_kinds();

}  // namespace tessel
