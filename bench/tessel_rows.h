#pragma once
// tessel's rows of the kernel benchmark: the built-in (hand-written) schedule, the sketch
// default schedule and the best of N random samples of the sketch space, each as a row that
// runs on the problem's own inputs and is checked against its naive reference.
#include <vector>

#include "bench/peers/kernel_row.h"
#include "bench/peers/problems.h"

namespace tessel::bench {

struct TesselRowOptions {
  int samples = 64;
  unsigned long long seed = 1;
};

std::vector<KernelRow> make_tessel_matmul_rows(const MatmulProblem &problem, const TesselRowOptions &options);
std::vector<KernelRow> make_tessel_conv_rows(const ConvProblem &problem, const TesselRowOptions &options);

}  // namespace tessel::bench
