#pragma once
// The machine's memory bandwidth, the ceiling of memory-bound kernels (softmax, layernorm,
// reduce, elementwise chains), measured STREAM-style.
#include <cstddef>

namespace tessel::bench {

/// 128 MiB per array, 3 arrays: 12x this VM's 32 MiB L3, so the triad streams from DRAM.
inline constexpr size_t kBandwidthArrayBytes = size_t(128) << 20;

/// GB/s (1e9 bytes/s) of the triad a[i] = b[i] + s * c[i] over three fp32 arrays of
/// `array_bytes` each, split evenly across `threads` std::threads; the best of `repetitions`.
/// Counted bytes are those STREAM counts, 3 x array_bytes per pass (b and c read, a written):
/// the write-allocate read of a's lines is NOT counted, matching PeerProblem::bytes (inputs read
/// once, output written once), so "% of peak" compares like with like. Each thread first-touches
/// its own slice (page faults and NUMA placement happen outside the timing); the threads sleep
/// 10 ms before each pass (see parallel_bursts.h). About 0.8 s with the defaults. Smaller
/// `array_bytes` are for tests: they measure the caches, not DRAM.
double measure_memory_bandwidth_gbs(int threads, size_t array_bytes = kBandwidthArrayBytes, int repetitions = 12);

}  // namespace tessel::bench
