#pragma once
// The machine's floating-point peak, measured in the same run as the kernels: every thread
// runs a loop of independent fp32 fused multiply-adds on the widest vectors the CPU has
// (AVX-512, else AVX2), which is the ceiling any matmul or conv row can reach.
#include <string>

#include "peers/kernel_row.h"

namespace tessel::bench {

/// A row (not a peer) for the table `kernel_label`; its GFLOP/s is the FMA peak with
/// `threads` threads. Its check_error is 0: there is no output to check.
KernelRow make_fma_peak_row(const std::string &kernel_label, int threads);

/// The same loop timed here: the best GFLOP/s of `repetitions` runs on `threads` threads (a
/// ceiling, so the best run is the one least disturbed). 0 when the CPU has neither AVX-512
/// nor AVX2+FMA. The threads are started once and sleep 10 ms before each repetition (see
/// parallel_bursts.h): about 0.5 s for 40 repetitions.
double measure_fma_peak_gflops(int threads, int repetitions = 40);

}  // namespace tessel::bench
