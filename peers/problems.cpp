#include "peers/problems.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace tessel::bench {

static std::vector<float> random_values(size_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &v : values) v = dist(rng);
  return values;
}

std::string MatmulProblem::title() const {
  return "matmul " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

std::string ConvProblem::title() const {
  return "conv " + std::to_string(kernel_h) + "x" + std::to_string(kernel_w) + " " + std::to_string(batch) + "x" +
         std::to_string(in_channels) + "x" + std::to_string(height) + "x" + std::to_string(width) + " -> " +
         std::to_string(out_channels);
}

MatmulProblem make_matmul_problem(int m, int n, int k, uint32_t seed) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  std::mt19937 rng(seed);
  p.a = random_values(size_t(m) * k, rng);
  p.b = random_values(size_t(k) * n, rng);
  // i-k-j order keeps the inner loop contiguous; double accumulation makes it the exact side.
  p.reference.resize(size_t(m) * n);
  std::vector<double> row(n);
  for (int i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int kk = 0; kk < k; ++kk) {
      const double a = p.a[size_t(i) * k + kk];
      const float *b = &p.b[size_t(kk) * n];
      for (int j = 0; j < n; ++j) row[j] += a * b[j];
    }
    for (int j = 0; j < n; ++j) p.reference[size_t(i) * n + j] = float(row[j]);
  }
  return p;
}

ConvProblem make_resnet18_conv_problem(uint32_t seed) {
  ConvProblem p;
  std::mt19937 rng(seed);
  p.input = random_values(size_t(p.batch) * p.in_channels * p.height * p.width, rng);
  p.weight = random_values(size_t(p.out_channels) * p.in_channels * p.kernel_h * p.kernel_w, rng);
  const int oh = p.out_height(), ow = p.out_width();
  p.reference.resize(size_t(p.batch) * p.out_channels * oh * ow);
  std::vector<double> plane(size_t(oh) * ow);
  for (int n = 0; n < p.batch; ++n)
    for (int k = 0; k < p.out_channels; ++k) {
      std::fill(plane.begin(), plane.end(), 0.0);
      for (int c = 0; c < p.in_channels; ++c)
        for (int r = 0; r < p.kernel_h; ++r)
          for (int s = 0; s < p.kernel_w; ++s) {
            const double w = p.weight[((size_t(k) * p.in_channels + c) * p.kernel_h + r) * p.kernel_w + s];
            for (int y = 0; y < oh; ++y) {
              const int iy = y * p.stride + r - p.pad;
              if (iy < 0 || iy >= p.height) continue;
              const float *in = &p.input[((size_t(n) * p.in_channels + c) * p.height + iy) * p.width];
              for (int x = 0; x < ow; ++x) {
                const int ix = x * p.stride + s - p.pad;
                if (ix >= 0 && ix < p.width) plane[size_t(y) * ow + x] += w * in[ix];
              }
            }
          }
      float *out = &p.reference[(size_t(n) * p.out_channels + k) * oh * ow];
      for (size_t i = 0; i < plane.size(); ++i) out[i] = float(plane[i]);
    }
  return p;
}

double max_relative_error(const float *out, size_t count, const std::vector<float> &reference) {
  const double inf = std::numeric_limits<double>::infinity();
  if (count != reference.size()) return inf;
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < count; ++i) {
    const double got = out[i], want = reference[i];
    // NaN where the reference has NaN agrees (a layer norm's Sqrt of a random, negative
    // variance), as the tuner's check has it (task.cpp); NaN on one side only does not.
    if (std::isnan(got) || std::isnan(want)) {
      if (std::isnan(got) != std::isnan(want)) return inf;
      continue;
    }
    if (got == want) continue;  // equal infinities too
    const double diff = std::fabs(got - want);
    if (!std::isfinite(diff) || !std::isfinite(want)) return inf;
    max_diff = std::max(max_diff, diff);
    max_ref = std::max(max_ref, std::fabs(want));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

PeerProblem as_peer_problem(const MatmulProblem &p) {
  PeerProblem peer;
  peer.op = PeerOp::Matmul;
  peer.kernel = p.title();
  peer.inputs = {{p.a.data(), {p.m, p.k}}, {p.b.data(), {p.k, p.n}}};
  peer.output_shape = {p.m, p.n};
  peer.reference = &p.reference;
  peer.flops = p.flops();
  peer.bytes = 4.0 * (double(p.m) * p.k + double(p.k) * p.n + double(p.m) * p.n);
  return peer;
}

PeerProblem as_peer_problem(const ConvProblem &p) {
  PeerProblem peer;
  peer.op = PeerOp::Conv;
  peer.kernel = p.title();
  peer.inputs = {{p.input.data(), {p.batch, p.in_channels, p.height, p.width}},
                 {p.weight.data(), {p.out_channels, p.in_channels, p.kernel_h, p.kernel_w}}};
  peer.output_shape = {p.batch, p.out_channels, p.out_height(), p.out_width()};
  peer.strides = {p.stride, p.stride};
  peer.pads = {p.pad, p.pad, p.pad, p.pad};
  peer.reference = &p.reference;
  peer.flops = p.flops();
  peer.bytes = 4.0 * (p.input.size() + p.weight.size() + p.reference.size());
  return peer;
}

}  // namespace tessel::bench
