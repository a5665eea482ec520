#pragma once
// tessel's rows of the kernel benchmark: the built-in (hand-written) schedule, the sketch
// default schedule, the best of N random samples of the sketch space and, with a tuning
// database, the tuned schedule, each as a row that runs on the problem's own inputs and is
// checked against its naive reference.
#include <vector>

#include "peers/kernel_row.h"
#include "peers/problems.h"

namespace tessel::bench {

struct TesselRowOptions {
  int samples = 64;  // 0: no "best of N random samples" row
  unsigned long long seed = 1;
  /// Non-empty: a "tessel tuned" row. The database is topped up by tuning until it holds
  /// `trials` searched records of the kernel (a database filled earlier, by
  /// tessel_bench_tuning --keep-db say, is used as it is), then its five best records are
  /// measured again and the fastest is the row.
  std::string db_path;
  int trials = 1000;
};

std::vector<KernelRow> make_tessel_matmul_rows(const MatmulProblem &problem, const TesselRowOptions &options);
std::vector<KernelRow> make_tessel_conv_rows(const ConvProblem &problem, const TesselRowOptions &options);

}  // namespace tessel::bench
