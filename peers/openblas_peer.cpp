#include "peers/openblas_peer.h"

#include "peers/openblas_task_peer.h"

namespace tessel::bench {

KernelRow make_openblas_matmul(const MatmulProblem &problem, int threads) {
  // One OpenBLAS peer serves the kernel benchmark and `tessel bench` (openblas_task_peer.cpp).
  return make_openblas_rows(as_peer_problem(problem), threads).front();
}

}  // namespace tessel::bench
