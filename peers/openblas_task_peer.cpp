#include "peers/openblas_task_peer.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "peers/openblas_peer.h"  // kOpenBlasMissing
#include "peers/problems.h"       // max_relative_error
#include "base/cache_eviction.h"

#ifdef TESSEL_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace tessel::bench {

namespace {

constexpr const char *kPlainName = "OpenBLAS cblas_sgemm";
constexpr const char *kEpilogueName = "OpenBLAS sgemm + bias/ReLU loop";

#ifdef TESSEL_HAVE_OPENBLAS
// The sizes of C[batch][M][N] = A[batch][M][K] * B[(batch)][K][N], from the PeerProblem shapes.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool b_batched = false;
};

// Empty `why` means the shapes follow the PeerProblem matmul contract.
GemmShape gemm_shape(const PeerProblem &p, std::string &why) {
  GemmShape g;
  if (p.inputs.size() < 2 + (p.has_bias ? 1 : 0) || !p.inputs[0].data || !p.inputs[1].data) {
    why = "matmul needs inputs A, B" + std::string(p.has_bias ? " and the bias" : "");
    return g;
  }
  const std::vector<int64_t> &a = p.inputs[0].shape, &b = p.inputs[1].shape;
  if (a.size() < 2 || (b.size() != 2 && b.size() != a.size())) {
    why = "A needs 2+ dims and B 2 dims or A's batch dims";
    return g;
  }
  g.m = a[a.size() - 2];
  g.k = a.back();
  g.n = b.back();
  g.b_batched = b.size() > 2;
  for (size_t i = 0; i + 2 < a.size(); ++i) {
    g.batch *= a[i];
    if (g.b_batched && b[i] != a[i]) why = "B's batch dims differ from A's";
  }
  if (b[b.size() - 2] != g.k) why = "A's K and B's K differ";
  int64_t out_elements = 1;
  for (int64_t d : p.output_shape) out_elements *= d;
  if (out_elements != g.batch * g.m * g.n) why = "output_shape does not match A and B";
  if (std::max({g.m, g.n, g.k}) > std::numeric_limits<int>::max()) why = "a dimension exceeds BLAS int";
  return g;
}
#endif

}  // namespace

std::vector<KernelRow> make_openblas_rows(const PeerProblem &p, int threads) {
  if (p.op != PeerOp::Matmul) return {};
  const bool epilogue = p.has_bias || p.relu;
  const std::string name = epilogue ? kEpilogueName : kPlainName;
#ifndef TESSEL_HAVE_OPENBLAS
  (void)threads;
  return {unavailable_row(p.kernel, name, kOpenBlasMissing)};
#else
  std::string why;
  const GemmShape g = gemm_shape(p, why);
  if (!why.empty()) return {unavailable_row(p.kernel, name, "problem not expressible for OpenBLAS: " + why)};

  openblas_set_num_threads(threads);
  auto out = std::make_shared<std::vector<float>>(size_t(g.batch * g.m * g.n));
  const float *a = p.inputs[0].data, *b = p.inputs[1].data;
  const float *bias = p.has_bias ? p.inputs[2].data : nullptr;
  const bool relu = p.relu;
  KernelRow row;
  row.kernel = p.kernel;
  row.name = name;
  row.is_peer = true;
  row.flops = p.flops;
  row.run = [g, a, b, bias, relu, out] {
    const int64_t b_stride = g.b_batched ? g.k * g.n : 0;  // a 2-D B is shared by every batch entry
    for (int64_t e = 0; e < g.batch; ++e) {
      float *c = out->data() + e * g.m * g.n;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(g.m), int(g.n), int(g.k), 1.0f, a + e * g.m * g.k,
                  int(g.k), b + e * b_stride, int(g.n), 0.0f, c, int(g.n));
    }
    // OpenBLAS has no fused epilogue: one more pass over C, as a caller would write it.
    if (!bias && !relu) return;
    float *c = out->data();
    const int64_t rows = g.batch * g.m;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < g.n; ++j) {
        float v = c[r * g.n + j] + (bias ? bias[j] : 0.0f);
        c[r * g.n + j] = relu ? std::max(v, 0.0f) : v;
      }
  };
  // The weights OpenBLAS reads as the model holds them: B (once, when shared by the batch) and the bias.
  const bool b_constant = p.inputs[1].constant, bias_constant = bias && p.inputs[2].constant;
  row.evict_constants = [g, b, bias, b_constant, bias_constant] {
    if (b_constant) evict_from_caches(b, sizeof(float) * size_t((g.b_batched ? g.batch : 1) * g.k * g.n));
    if (bias_constant) evict_from_caches(bias, sizeof(float) * size_t(g.n));
  };
  const std::vector<float> *reference = p.reference;
  row.check_error = [out, reference] {
    return reference ? max_relative_error(*out, *reference) : std::numeric_limits<double>::infinity();
  };
  row.note = std::string("core ") + openblas_get_corename() + ", " + std::to_string(openblas_get_num_threads()) +
             " threads" + (g.batch > 1 ? ", " + std::to_string(g.batch) + " sgemm calls per run" : "") +
             (epilogue ? std::string(", loop applies ") + (bias && relu ? "bias + ReLU" : bias ? "bias" : "ReLU") : "");
  return {row};
#endif
}

}  // namespace tessel::bench
