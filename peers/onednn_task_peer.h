#pragma once
// Peer: oneDNN (2.x C++ API, CPU engine) for any kernel `tessel bench` times, described by a
// PeerProblem: matmul, conv, softmax, layernorm, reduce and elementwise chains.
#include <vector>

#include "peers/kernel_row.h"
#include "peers/peer_problem.h"

namespace tessel::bench {

/// The oneDNN rows for `problem`, reading its buffers in place (they must outlive the rows):
///   Matmul      "oneDNN matmul": batched through 3-D+ dims (a 2-D B is broadcast), bias and
///               ReLU fused (bias descriptor, eltwise post-op).
///   Conv        "oneDNN conv, plain NCHW" and "oneDNN conv, preferred (blocked) layout": groups,
///               strides, dilations, asymmetric pads, bias and ReLU fused. In the preferred row
///               the inputs are reordered into oneDNN's layouts once, outside the timed run, and
///               the output back only for check_error.
///   Softmax     "oneDNN softmax" over the last axis.
///   LayerNorm   "oneDNN layernorm" over the last axis, with scale and shift.
///   Reduce      "oneDNN reduction (sum|mean|max)" over the last axis, kept with extent 1.
///   Elementwise "oneDNN elementwise chain": one binary or eltwise primitive with the other
///               steps as post-ops (split into more primitives, run in place, only where oneDNN
///               refuses a post-op); the note lists them.
/// Notes carry pd.impl_info_str(). A oneDNN error becomes an unavailable row with its message;
/// without oneDNN built in, the answer is one unavailable row named "oneDNN".
std::vector<KernelRow> make_onednn_rows(const PeerProblem &problem);

}  // namespace tessel::bench
