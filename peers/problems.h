#pragma once
// The two benchmark kernels with random inputs and a naive reference output, shared by all rows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "peers/peer_problem.h"

namespace tessel::bench {

/// C[M][N] = A[M][K] * B[K][N], fp32, row-major.
struct MatmulProblem {
  int m = 1024, n = 1024, k = 1024;
  std::vector<float> a, b;
  std::vector<float> reference;  // accumulated in double
  double flops() const { return 2.0 * m * n * k; }
  std::string title() const;
};

/// out[N][K][OH][OW] = conv(in[N][C][H][W], w[K][C][R][S]), fp32 NCHW/OIHW, no bias.
struct ConvProblem {
  int batch = 1, in_channels = 64, out_channels = 64, height = 56, width = 56;
  int kernel_h = 3, kernel_w = 3, pad = 1, stride = 1;
  std::vector<float> input, weight;
  std::vector<float> reference;
  int out_height() const { return (height + 2 * pad - kernel_h) / stride + 1; }
  int out_width() const { return (width + 2 * pad - kernel_w) / stride + 1; }
  double flops() const {
    return 2.0 * batch * out_channels * out_height() * out_width() * in_channels * kernel_h * kernel_w;
  }
  std::string title() const;
};

/// The problem as the peers of any kernel take it (peers/peer_problem.h); it points
/// into `problem`, which must outlive it and every row made from it.
PeerProblem as_peer_problem(const MatmulProblem &problem);
PeerProblem as_peer_problem(const ConvProblem &problem);

/// Inputs uniform in [-1, 1) from a fixed seed, and the reference computed naively.
MatmulProblem make_matmul_problem(int m, int n, int k, uint32_t seed);
ConvProblem make_resnet18_conv_problem(uint32_t seed);

/// max |out - ref| / max |ref|: relative to the output's scale, because single elements of a
/// random-sign sum can be arbitrarily close to zero. Sizes must match (else returns infinity).
double max_relative_error(const float *out, size_t count, const std::vector<float> &reference);

/// The same for any container with contiguous data() and size() (std::vector<float>, ...).
template <class Floats>
double max_relative_error(const Floats &out, const std::vector<float> &reference) {
  return max_relative_error(out.data(), out.size(), reference);
}

}  // namespace tessel::bench
