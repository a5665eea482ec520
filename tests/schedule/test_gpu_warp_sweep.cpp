// A device probe, not a unit test (hidden tag [.gpu_sweep], skipped by the default suite):
// times named warp-tile variants of one matmul on the GPU in one process, so that one short
// call on a lent GPU compares register tiles, stage sizes and reduction unrolling side by
// side (scripts/gpu_check.sh stage "sweep"). Every variant is checked against the CPU
// reference by the Measurer, as in tuning. SWEEP_SPEC picks the matmul (default 4096^3).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstdio>

#include "codegen/cuda_device.h"
#include "codegen/ptx_compile.h"
#include "search/gpu/gpu_sampler.h"
#include "search/gpu/gpu_sketch.h"
#include "search/gpu/gpu_sketch_schedule.h"
#include "tests/support/task_test_util.h"
#include "tuner/benchmark_problems.h"
#include "tuner/measure.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

struct WarpVariant {
  const char *label;
  int64_t lane_tile, row_tile, stage, unroll_k;
};

}  // namespace

TEST_CASE("GPU probe: warp-tile variants of a matmul timed side by side", "[.gpu_sweep]") {
  auto target = parse_target("cuda");
  REQUIRE(target.ok());
  auto device = name_device_architecture(target.value());
  if (!device.ok()) {
    WARN("no CUDA GPU (" << device.error().message << "): ptxas reports only, for sm_90");
    target = parse_target("cuda -arch=sm_90");
    REQUIRE(target.ok());
  }
  const std::optional<std::string> ptxas = find_ptxas();
  const char *spec = std::getenv("SWEEP_SPEC");
  auto graph = make_benchmark_graph("matmul", spec ? spec : "4096x4096x4096", {});
  REQUIRE(graph.ok());
  const Task task = largest_task(graph.value());
  const GpuTargetDesc gpu = gpu_target_desc(target.value());
  const std::vector<Sketch> sketches = generate_gpu_sketches(task.compute, gpu);
  const Sketch *warp = nullptr;
  for (const Sketch &s : sketches)
    if (s.name == "gpu_warp_tile") warp = &s;
  REQUIRE(warp);
  // The default (4 x 32, KT 8) and its neighbours, then the old default and the variants
  // that lost on an H200 (bench/results/gpu.md, calls 8-10): unrolled stages, 2 x 16 tiles.
  const std::vector<WarpVariant> variants = {
      {"4x32 k8", 4, 32, 8, 1},     {"4x32 k4", 4, 32, 4, 1},      {"4x32 k16", 4, 32, 16, 1},
      {"4x32 k8 u2", 4, 32, 8, 2},  {"4x16 k8", 4, 16, 8, 1},      {"2x64 k8", 2, 64, 8, 1},
      {"2x32 k8", 2, 32, 8, 1},     {"2x32 k16", 2, 32, 16, 1},    {"4x16 k16", 4, 16, 16, 1},
      {"2x16 k16", 2, 16, 16, 1},   {"2x16 k16 u16", 2, 16, 16, 16}};
  // SWEEP_ONLY: a comma-separated list of labels to keep.
  const char *only = std::getenv("SWEEP_ONLY");
  auto wanted = [&](const std::string &label) {
    return !only || ("," + std::string(only) + ",").find("," + label + ",") != std::string::npos;
  };
  std::vector<Schedule> schedules;
  std::vector<std::string> labels;
  for (const WarpVariant &v : variants) {
    if (!wanted(v.label)) continue;
    SketchChoices choices = default_gpu_choices(task.compute, *warp, gpu);
    // The sketch names its parameters after the output's and anchor's funcs and axes.
    int register_axis = 0;
    for (const SketchParam &p : warp->params) {
      if (p.name.find(".warp.register.") != std::string::npos)
        choices[p.name] = register_axis++ == 0 ? v.lane_tile : v.row_tile;
      else if (p.name.find(".warp.reduce.") != std::string::npos) choices[p.name] = v.stage;
      else if (p.name.find(".warp.unroll_k") != std::string::npos) choices[p.name] = v.unroll_k;
    }
    auto schedule = build_gpu_sketch_schedule(task.compute, *warp, gpu, choices);
    if (!schedule.ok()) {
      std::printf("%-14s not built: %s\n", v.label, schedule.error().message.c_str());
      continue;
    }
    if (ptxas) {
      auto ptx = compile_task_to_ptx(task, &schedule.value(), target.value());
      auto report = ptx.ok() ? assemble_ptx(*ptxas, ptx.value(), gpu.arch()) : Result<PtxasReport>(ptx.error());
      if (!report.ok()) std::printf("%-14s ptxas: %s\n", v.label, report.error().message.c_str());
      for (const PtxasKernelReport &k : report.ok() ? report->kernels : std::vector<PtxasKernelReport>{})
        std::printf("%-14s %3d registers, %6ld B shared, spills %ld/%ld B\n", v.label, k.registers,
                    static_cast<long>(k.shared_bytes), static_cast<long>(k.spill_store_bytes),
                    static_cast<long>(k.spill_load_bytes));
    }
    schedules.push_back(schedule.value());
    labels.push_back(v.label);
  }
  if (!device.ok()) return;
  // SWEEP_PROFILE=1: run each variant twice in this process and stop (for a profiler such as
  // Nsight Compute, which sees kernels in order: two launches per label above).
  if (std::getenv("SWEEP_PROFILE")) {
    const std::vector<Tensor> inputs = task_inputs(task, 1);
    for (size_t i = 0; i < schedules.size(); ++i) {
      auto kernel = compile_task(task, &schedules[i], target.value());
      REQUIRE(kernel.ok());
      for (int run = 0; run < 2; ++run) REQUIRE(run_task(kernel.value(), task, inputs).ok());
      std::printf("profiled %s\n", labels[i].c_str());
    }
    return;
  }
  MeasureOptions options;
  options.run_timeout_seconds = 60;
  options.early_stop_factor = 0;
  Measurer measurer(task, target.value(), options);
  auto baseline = measurer.prepare_reference();
  REQUIRE(baseline.ok());
  double flops = 2;  // M x N x K multiply-adds
  {
    int64_t m = 0, n = 0, k = 0;
    REQUIRE(std::sscanf(spec ? spec : "4096x4096x4096", "%ldx%ldx%ld", &m, &n, &k) == 3);
    flops *= static_cast<double>(m) * n * k;
  }
  for (int round = 0; round < 2; ++round) {
    const std::vector<MeasureResult> results = measurer.measure(schedules);
    for (size_t i = 0; i < results.size(); ++i) {
      const MeasureResult &r = results[i];
      if (r.status == RecordStatus::Ok)
        std::printf("round %d  %-14s %9.4f ms  %6.1f TFLOP/s\n", round, labels[i].c_str(), r.median_seconds * 1e3,
                    flops / r.median_seconds * 1e-12);
      else
        std::printf("round %d  %-14s %s: %s\n", round, labels[i].c_str(), to_text(r.status), r.error.c_str());
    }
    std::fflush(stdout);
  }
}
