#pragma once
// Peer: OpenBLAS single-precision GEMM for `tessel bench` matmul kernels described by a
// PeerProblem. OpenBLAS has nothing to offer for the other ops.
#include <vector>

#include "peers/kernel_row.h"
#include "peers/peer_problem.h"

namespace tessel::bench {

/// Matmul: one row, cblas_sgemm once per batch entry (a 2-D B is shared by all entries) with
/// `threads` OpenBLAS threads; a bias and/or ReLU is a plain loop after the GEMM, and the row is
/// then named "OpenBLAS sgemm + bias/ReLU loop". Without OpenBLAS built in: one unavailable row.
/// Any other op: no rows.
std::vector<KernelRow> make_openblas_rows(const PeerProblem &problem, int threads);

}  // namespace tessel::bench
