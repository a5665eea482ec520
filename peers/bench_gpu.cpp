// `tessel bench ... --target cuda`: the kernels timed on this machine's GPU. The peers of a
// GPU kernel (cuBLAS, cuDNN, PyTorch) are not libraries tessel links: bench/bench_gpu.py
// times them through PyTorch in the same run and prints the ratios against these rows.
#include "peers/bench_gpu.h"

#include <cstdio>
#include <limits>

#include "base/json.h"
#include "graph/infer/model_stats.h"
#include "tuner/kernel_timing.h"

namespace tessel {

namespace {

struct GpuRow {
  std::string name;
  std::optional<JitKernel> kernel;
  std::string unavailable;
  double error = std::numeric_limits<double>::infinity();
  std::vector<double> medians;  // one per round
};

}  // namespace

Result<int> bench_tasks_on_gpu(std::vector<BenchTask> &tasks, const Target &target, const CudaDeviceInfo &device,
                               const GpuBenchOptions &options) {
  Json json;
  json["device"] = device.describe();
  json["target"] = target.to_string();
  json["kernels"] = Json::array();
  if (!options.json) std::printf("GPU: %s, target %s\n\n", device.describe().c_str(), target.to_string().c_str());
  bool wrong = false;
  for (BenchTask &task : tasks) {
    const std::vector<Tensor> inputs = task_inputs(task.task, 7);
    // The reference: the task's built-in schedule on the host CPU.
    auto reference_kernel = compile_task(task.task, nullptr, Target{});
    if (!reference_kernel.ok())
      return make_error(reference_kernel.error().kind,
                        task.label + ": the CPU reference: " + reference_kernel.error().message);
    auto reference = run_task(reference_kernel.value(), task.task, inputs);
    if (!reference.ok())
      return make_error(reference.error().kind, task.label + ": the CPU reference: " + reference.error().message);

    std::vector<GpuRow> rows(2);
    rows[0].name = "tessel default";
    if (auto k = compile_task(task.task, nullptr, target); k.ok()) rows[0].kernel = std::move(k.value());
    else rows[0].unavailable = k.error().message;
    rows[1].name = "tessel tuned";
    if (task.tuned) rows[1].kernel = std::move(*task.tuned);
    else rows[1].unavailable = task.tuned_source.empty() ? "no tuning database" : task.tuned_source;
    for (GpuRow &row : rows) {
      if (!row.kernel) continue;
      auto out = run_task(*row.kernel, task.task, inputs);
      if (!out.ok()) {
        row.unavailable = "failed: " + out.error().message;
        row.kernel.reset();
        continue;
      }
      row.error = max_relative_difference(out.value(), reference.value());
    }
    // Rounds alternate the rows, so a clock or neighbour change hits both alike.
    TimingOptions timing;
    timing.warmup_runs = 3;
    timing.min_runs = 10;
    timing.min_seconds = options.min_seconds;
    for (int round = 0; round < options.rounds; ++round)
      for (GpuRow &row : rows) {
        if (!row.kernel) continue;
        auto timed = time_task(*row.kernel, task.task, inputs, timing);
        if (!timed.ok()) {
          row.unavailable = "failed: " + timed.error().message;
          row.kernel.reset();
          continue;
        }
        row.medians.push_back(timed->median);
      }

    const int64_t flops = task.task.flops;
    Json kernel;
    if (options.json) {
      kernel["label"] = task.label;
      kernel["workload_key"] = task.workload_key;
      kernel["flops"] = flops;
      kernel["tuned_source"] = task.tuned_source;
      kernel["rows"] = Json::array();
    } else {
      std::printf("%s  (%s, %.3f GFLOP)\n", task.label.c_str(), task.ops.c_str(), flops / 1e9);
      std::printf("  %-16s %12s %12s %10s\n", "row", "median ms", "GFLOP/s", "max rel err");
    }
    for (const GpuRow &row : rows) {
      const bool timed = row.unavailable.empty() && !row.medians.empty();
      const double seconds = timed ? median_of(row.medians) : 0;
      if (timed && !(row.error <= options.tolerance)) wrong = true;
      if (row.unavailable.rfind("failed", 0) == 0) wrong = true;  // built, but did not run
      if (options.json) {
        Json json_row;
        json_row["name"] = row.name;
        if (timed) {
          json_row["median_ms"] = seconds * 1e3;
          json_row["gflops"] = flops / seconds / 1e9;
          json_row["max_relative_error"] = row.error;
        } else {
          json_row["unavailable"] = row.unavailable;
        }
        kernel["rows"].push_back(json_row);
      } else if (timed) {
        std::printf("  %-16s %12.4f %12.1f %10.2e%s\n", row.name.c_str(), seconds * 1e3, flops / seconds / 1e9, row.error,
                    row.error <= options.tolerance ? "" : "  WRONG");
      } else {
        std::printf("  %-16s %s\n", row.name.c_str(), row.unavailable.c_str());
      }
    }
    if (options.json) {
      json["kernels"].push_back(kernel);
    } else {
      if (!task.tuned_source.empty()) std::printf("  tuned: %s\n", task.tuned_source.c_str());
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  if (options.json) std::printf("%s\n", dump_json(json).c_str());
  else
    std::printf("timing: median of %d rounds, each the median of >= 10 runs and %.2f s, kernels only (inputs on the "
                "device, each run waits for the GPU)\n",
                options.rounds, options.min_seconds);
  return wrong ? 1 : 0;
}

}  // namespace tessel
