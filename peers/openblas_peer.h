#pragma once
// Peer: OpenBLAS single-precision GEMM.
#include "peers/kernel_row.h"
#include "peers/problems.h"

namespace tessel::bench {

/// The note of an OpenBLAS row when tessel was configured without it.
inline constexpr const char *kOpenBlasMissing =
    "not built in: libopenblas-dev was not found when tessel was configured";

/// cblas_sgemm on the problem's row-major A and B, with `threads` OpenBLAS threads. The note says
/// which core kernels OpenBLAS chose (SkylakeX only if OPENBLAS_CORETYPE was set at load time).
KernelRow make_openblas_matmul(const MatmulProblem &problem, int threads);

}  // namespace tessel::bench
