#pragma once
// The machine's floating-point peak, measured in the same run as the kernels: every thread
// runs a loop of independent fp32 fused multiply-adds on the widest vectors the CPU has
// (AVX-512, else AVX2), which is the ceiling any matmul or conv row can reach.
#include <string>

#include "bench/peers/kernel_row.h"

namespace tessel::bench {

/// A row (not a peer) for the table `kernel_label`; its GFLOP/s is the FMA peak with
/// `threads` threads. Its check_error is 0: there is no output to check.
KernelRow make_fma_peak_row(const std::string &kernel_label, int threads);

}  // namespace tessel::bench
