#pragma once
// Interleaved timing of benchmark rows: the VM is shared and noisy, so every row gets a slice of
// each round instead of one row owning a quiet (or a loud) minute.
#include <string>
#include <vector>

#include "peers/kernel_row.h"

namespace tessel::bench {

struct TimingOptions {
  int rounds = 5;            // each round times every row once, in a rotating order
  int warmup_runs = 1;       // per row per round, untimed (caches, thread pools, page faults)
  double min_seconds = 0.5;  // a row's slice of a round ends at >= min_seconds ...
  int min_runs = 50;         // ... or >= min_runs timed runs, whichever comes first
  // Idle gap between two rows: OpenBLAS's and OpenMP's worker threads keep spinning for a while
  // after a call (OpenBLAS ~2^28 cycles) and would steal one of the 2 cores from the next row.
  double gap_seconds = 0.2;
  // Each row's constant operands evicted from the caches before every run (KernelRow::evict_constants).
  bool cold = false;
  std::string describe() const;
};

struct Samples {
  std::vector<double> seconds;  // one per timed run, all rounds together
  double median() const;
  double min() const;
};

/// Times every available row (unavailable ones get empty Samples). Progress goes to stderr.
std::vector<Samples> time_rows_interleaved(const std::vector<KernelRow> &rows, const TimingOptions &options);

}  // namespace tessel::bench
