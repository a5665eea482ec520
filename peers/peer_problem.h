#pragma once
// A kernel as the vendor-library peers see it: which operation, its sizes and attributes, and
// the dense fp32 buffers tessel's own kernel runs on, so every row of a `tessel bench` table
// reads the same inputs and is checked against the same reference output.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessel::bench {

enum class PeerOp { Matmul, Conv, Softmax, LayerNorm, Reduce, Elementwise };

/// A dense, row-major fp32 tensor owned by the caller; it outlives every row made from it.
struct PeerBuffer {
  const float *data = nullptr;
  std::vector<int64_t> shape;
  bool constant = false;  // a model constant (weights): `--cold` evicts what a peer made of it
};

struct PeerProblem {
  PeerOp op = PeerOp::Matmul;
  std::string kernel;  // the table the rows belong to (KernelRow::kernel)
  std::vector<PeerBuffer> inputs;
  /// Data some inputs point into that the problem owns (a weight put back into the layout
  /// peers read); shared, so copies of the problem keep it.
  std::vector<std::shared_ptr<const std::vector<float>>> storage;
  std::vector<int64_t> output_shape;
  const std::vector<float> *reference = nullptr;  // the expected output, dense row-major
  double flops = 0;  // per run (an FMA counts as 2)
  double bytes = 0;  // compulsory memory traffic per run: every input read once, the output written once

  // Matmul: inputs A[batch..., M, K] and B[K, N] or B[batch..., K, N] (A's batch dims);
  //         with has_bias, inputs[2] is a bias of shape [N]. Output [batch..., M, N].
  // Conv:   inputs X[N, C, H, W] and W[K, C / groups, R, S]; with has_bias, inputs[2] is [K].
  //         Output [N, K, OH, OW]. Depthwise is groups == C == K. With channels_last, X is
  //         [N, H, W, C] and the output [N, OH, OW, K] (tessel's TesselConvNHWC); W as above.
  bool channels_last = false;
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  int64_t groups = 1;
  bool has_bias = false;
  bool relu = false;  // Matmul / Conv: ReLU after the bias add

  // Softmax:   input X, over the last axis.
  // LayerNorm: inputs X, scale[D], bias[D], normalized over the last axis (of size D).
  float epsilon = 1e-5f;
  // Reduce:    input X, over the last axis, keeping it with extent 1; "sum", "mean" or "max".
  std::string reduce_kind = "sum";
  // Elementwise: inputs[0] is the running value; each step applies to it in order. Binary
  //         steps ("add", "sub", "mul") take the next input (same shape as the output); unary
  //         steps are "relu", "sigmoid", "tanh", "exp", "abs".
  std::vector<std::string> steps;
};

}  // namespace tessel::bench
