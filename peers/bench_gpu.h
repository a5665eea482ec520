#pragma once
// `tessel bench ... --target cuda`: tessel's default and tuned kernels timed on this
// machine's GPU, each checked against the task's CPU reference.
#include <vector>

#include "base/result.h"
#include "codegen/cuda_device.h"
#include "codegen/target.h"
#include "peers/bench_rows.h"

namespace tessel {

struct GpuBenchOptions {
  int rounds = 5;
  double min_seconds = 0.2;  // per row and round
  double tolerance = 1e-4;   // max relative difference from the CPU reference
  bool json = false;
};

/// Times every task (its `tuned` kernel, when one was picked, and the default GPU schedule)
/// on `device` (from query_cuda_device) and prints a table or JSON; 1 when an output
/// differs from the reference or a kernel fails on the GPU.
Result<int> bench_tasks_on_gpu(std::vector<BenchTask> &tasks, const Target &target, const CudaDeviceInfo &device,
                               const GpuBenchOptions &options);

}  // namespace tessel
