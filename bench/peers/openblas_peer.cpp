#include "bench/peers/openblas_peer.h"

#include <memory>

#ifdef TESSEL_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace tessel::bench {

KernelRow make_openblas_matmul(const MatmulProblem &problem, int threads) {
#ifndef TESSEL_HAVE_OPENBLAS
  return unavailable_row(problem.title(), "OpenBLAS cblas_sgemm", kOpenBlasMissing);
#else
  openblas_set_num_threads(threads);
  auto out = std::make_shared<std::vector<float>>(size_t(problem.m) * problem.n);
  KernelRow row;
  row.kernel = problem.title();
  row.name = "OpenBLAS cblas_sgemm";
  row.flops = problem.flops();
  const MatmulProblem *p = &problem;
  row.run = [p, out] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->m, p->n, p->k, 1.0f, p->a.data(), p->k, p->b.data(),
                p->n, 0.0f, out->data(), p->n);
  };
  row.check_error = [p, out] { return max_relative_error(*out, p->reference); };
  row.note = std::string("core ") + openblas_get_corename() + ", " + std::to_string(openblas_get_num_threads()) +
             " threads";
  return row;
#endif
}

}  // namespace tessel::bench
