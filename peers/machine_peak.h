#pragma once
// The machine's ceilings for "% of peak": fp32 FMA throughput (compute-bound kernels) and
// memory bandwidth (memory-bound ones), measured once per CPU model and thread count and
// cached, so every `tessel bench` run divides by the same figures without re-measuring.
#include <cstddef>
#include <string>

#include "peers/memory_bandwidth.h"

namespace tessel::bench {

struct MachinePeak {
  double fma_gflops = 0;    // measure_fma_peak_gflops: best of 40 runs
  double memory_gbs = 0;    // measure_memory_bandwidth_gbs (STREAM triad bytes): best of 12 passes
  int threads = 0;
  std::string cpu;          // /proc/cpuinfo "model name"
  std::string measured_at;  // UTC, ISO 8601
  bool from_cache = false;
};

/// How machine_peak measures. The defaults are the real thing; tests shrink them to stay fast
/// (small arrays measure the caches, not DRAM, so such figures are no machine's peak).
struct PeakMeasurementSettings {
  int fma_repetitions = 40;
  size_t bandwidth_array_bytes = kBandwidthArrayBytes;
  int bandwidth_repetitions = 12;
};

/// The peaks for `threads` threads on this CPU: from the cache when it has them and
/// `remeasure` is false, else measured (about 1.5 s) and stored in the cache. The cache is
/// $XDG_CACHE_HOME/tessel/machine_peak.json (else $HOME/.cache/tessel/), one entry per (CPU
/// model, threads). A cache that cannot be read or parsed is ignored and rewritten; one that
/// cannot be written costs a warning on stderr, never an error. Writes go to a temporary file
/// renamed over the old one, so readers never see half a file (two processes measuring at the
/// same moment may drop each other's new entry; the next run measures it again).
MachinePeak machine_peak(int threads, bool remeasure, const PeakMeasurementSettings &settings = {});

/// One line for report headers, e.g. "peak (AMD EPYC, 2 threads): 487.7 GFLOP/s FMA, 23.8 GB/s
/// memory (STREAM triad), measured 2026-11-21T15:51:07Z, cached".
std::string describe(const MachinePeak &peak);

/// Where machine_peak keeps its cache; empty when neither XDG_CACHE_HOME nor HOME is set.
std::string machine_peak_cache_path();

/// /proc/cpuinfo's first "model name", or "unknown CPU".
std::string cpu_model_name();

}  // namespace tessel::bench
