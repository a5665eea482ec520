#pragma once
// How `tessel bench` shows a timed table: latency median and spread, GFLOP/s and GB/s, the
// share of the machine's measured peak (FMA for compute-bound kernels, memory bandwidth for
// memory-bound ones, by the kernel's arithmetic intensity), and tessel's speedup over each row.
#include <string>
#include <vector>

#include "base/json_fwd.h"
#include "peers/bench_rows.h"
#include "peers/machine_peak.h"
#include "peers/timing.h"

namespace tessel {

struct TimedRow {
  const bench::KernelRow *row = nullptr;
  bench::Samples samples;
  double error = 0;  // max relative difference from the reference, measured before timing
};

/// Whether the kernel is memory-bound on this machine: FLOPs per byte below the machine's
/// balance point (peak FLOP/s over peak bytes/s).
bool is_memory_bound(double flops, double bytes, const bench::MachinePeak &peak);

/// The text table of one task (rows[0] is tessel's).
std::string format_bench_table(const BenchTask &task, const TaskBench &bench, const std::vector<TimedRow> &rows,
                               const bench::MachinePeak &peak);

/// The same as one JSON object (the caller places it in an array).
Json bench_json(const BenchTask &task, const TaskBench &bench, const std::vector<TimedRow> &rows,
                const bench::MachinePeak &peak);

/// Rows whose output differs from the reference by more than this are marked wrong.
inline constexpr double kBenchTolerance = 1e-4;

}  // namespace tessel
