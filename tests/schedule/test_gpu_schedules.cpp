// GPU sketches, their limits, PTX generation and (without a GPU) the GPU schedules' loop
// structure run on the host against the CPU default's results.
#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <tuple>

#include "codegen/cuda_device.h"
#include "codegen/ptx_compile.h"
#include "search/gpu/gpu_sketch.h"
#include "search/schedule_space.h"
#include "tests/support/task_test_util.h"
#include "tuner/benchmark_problems.h"
#include "tuner/xgb_cost_model.h"
#include "tuner/evolutionary_search.h"
#include "tuner/measure.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Task benchmark_task(const std::string &kind, const std::string &spec, bool bias_relu = false) {
  BenchmarkGraphOptions options;
  options.bias_relu = bias_relu;
  auto graph = make_benchmark_graph(kind, spec, options);
  INFO((graph.ok() ? std::string() : graph.error().message));
  REQUIRE(graph.ok());
  return largest_task(graph.value());
}

std::vector<Tensor> run_cpu_default(const Task &task, const std::vector<Tensor> &inputs) {
  auto kernel = compile_task(task, nullptr);
  REQUIRE(kernel.ok());
  auto out = run_task(kernel.value(), task, inputs);
  REQUIRE(out.ok());
  return out.value();
}

/// A matmul task (with bias and ReLU) and its GPU sketches, the warp tile second.
struct WarpMatmul {
  Task task;
  std::vector<Sketch> sketches;
};
WarpMatmul warp_matmul(const std::string &spec, const GpuTargetDesc &target) {
  WarpMatmul m{benchmark_task("matmul", spec, true), {}};
  m.sketches = generate_gpu_sketches(m.task.compute, target);
  REQUIRE(m.sketches.size() == 2);
  REQUIRE(m.sketches[1].name == "gpu_warp_tile");
  return m;
}

/// The GPU schedule's loops run on the host must give the CPU default's results.
void check_on_host(const Task &task, const Schedule &schedule, const std::vector<Tensor> &inputs,
                   const std::vector<Tensor> &want) {
  INFO(to_text(schedule));
  auto kernel = compile_gpu_schedule_on_host(task, schedule);
  INFO((kernel.ok() ? std::string() : kernel.error().message));
  REQUIRE(kernel.ok());
  auto got = run_task(kernel.value(), task, inputs);
  INFO((got.ok() ? std::string() : got.error().message));
  REQUIRE(got.ok());
  CHECK(max_relative_difference(got.value(), want) < 1e-4);
}

const Target kCuda86 = [] {
  auto t = parse_target("cuda -arch=sm_86");
  return t.value();
}();

}  // namespace

TEST_CASE("cuda targets name an architecture Halide can generate", "[gpu]") {
  auto hopper = parse_target("cuda -arch=sm_90");
  REQUIRE(hopper.ok());
  CHECK(hopper->to_string() == "cuda -arch=sm_90");
  CHECK(cuda_capability(hopper.value()) == 90);
  // Halide 14 stops at 8.6: Hopper gets sm_86 PTX, which its driver compiles.
  CHECK(hopper->halide_target().find("cuda_capability_86") != std::string::npos);
  auto volta = parse_target("cuda -arch=sm_70");
  REQUIRE(volta.ok());
  CHECK(volta->halide_target().find("cuda_capability_70") != std::string::npos);
  CHECK(gpu_target_desc(hopper.value()).compute_capability == 90);
  for (const char *bad : {"cuda -arch=90", "cuda -arch=sm_", "cuda -arch=sm_2", "cuda -arch=sm_9x"}) {
    auto t = parse_target(bad);
    INFO(bad);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message.find("bad CUDA architecture") != std::string::npos);
  }
}

TEST_CASE("the CUDA device query says why there is no device", "[gpu]") {
  auto device = query_cuda_device();
  if (device.ok()) {
    WARN("GPU present: " << device->describe());
    CHECK(device->capability() >= 30);
    CHECK(device->max_threads_per_block >= 256);
  } else {
    INFO(device.error().message);
    const std::string &m = device.error().message;
    CHECK((m.find("libcuda") != std::string::npos || m.find("cuInit") != std::string::npos ||
           m.find("does not exist") != std::string::npos));
  }
  auto missing = query_cuda_device(1000);
  CHECK_FALSE(missing.ok());
}

TEST_CASE("GPU sketches tile anchored outputs over blocks, threads and registers", "[gpu][sketch]") {
  Task matmul = benchmark_task("matmul", "256x192x64", true);
  const GpuTargetDesc target = gpu_target_for_capability(86);
  const std::vector<Sketch> sketches = generate_gpu_sketches(matmul.compute, target);
  REQUIRE(sketches.size() == 2);
  CHECK(sketches[0].name == "gpu_tile");  // the default schedule's
  CHECK(sketches[1].name == "gpu_warp_tile");
  const Schedule fallback = default_gpu_schedule(matmul.compute, target);
  auto tree = check_gpu_schedule(matmul.compute, fallback, target);
  INFO(to_text(fallback));
  REQUIRE(tree.ok());
  const GpuLaunchShape shape = gpu_launch_shape(tree.value());
  CHECK(shape.kernels == 1);
  CHECK(shape.max_threads_per_block == 256);
  CHECK(shape.max_register_bytes == 4 * 3 * 2);  // 3 x 2 accumulators per thread (3 x 32 divides 192)
  CHECK(to_text(fallback).find("bind") != std::string::npos);

  // A small device: every sample respects its limits.
  GpuTargetDesc small = target;
  small.max_threads_per_block = 128;
  std::mt19937_64 rng(7);
  SamplerStats stats;
  const std::vector<Schedule> samples = sample_gpu_schedules(matmul.compute, small, 40, rng, &stats);
  std::set<std::string> distinct;
  for (const Schedule &s : samples) {
    auto checked = check_gpu_schedule(matmul.compute, s, small);
    INFO(to_text(s));
    REQUIRE(checked.ok());
    const GpuLaunchShape launch = gpu_launch_shape(checked.value());
    CHECK(launch.max_threads_per_block <= 128);
    CHECK(launch.max_threads_per_block >= 32);
    CHECK(launch.max_register_bytes / 4 <= small.accumulator_budget());
    distinct.insert(schedule_hash(s));
  }
  CHECK(distinct.size() >= 30);
  CHECK(stats.fallbacks == 0);
}

TEST_CASE("GPU schedules compute what the CPU default computes (GPU loops run on the host)", "[gpu][task]") {
  const GpuTargetDesc target = gpu_target_for_capability(86);
  struct Case {
    std::string kind, spec;
    bool bias_relu;
  };
  const std::vector<Case> cases = {
      {"matmul", "67x45x33", true},         // ragged tiles
      {"conv", "1,8,10,10,16,3,3", true},   // padded 3x3 with epilogue
      {"conv", "1,8,9,9,8,3,3,2", false},   // stride 2
      {"depthwise", "1,8,12,12,3,3", false},
      {"softmax", "6x50", false},          // internal statistics placed for the GPU
      {"layernorm", "5x40", false},
      {"reduce_mean", "7x30", false},
      {"elementwise", "3x5x17", false},
      // Long reductions, split into interleaved partials across threads.
      {"softmax", "4x256", false},
      {"layernorm", "3x640", false},
      {"reduce_mean", "5x96", false},
      {"softmax", "3x200", false},  // 25 partials: shared memory on a GPU
  };
  std::mt19937_64 rng(11);
  for (const Case &c : cases) {
    INFO(c.kind << " " << c.spec);
    Task task = benchmark_task(c.kind, c.spec, c.bias_relu);
    const std::vector<Tensor> inputs = task_inputs(task, 3);
    const std::vector<Tensor> want = run_cpu_default(task, inputs);
    check_on_host(task, default_gpu_schedule(task.compute, target), inputs, want);
    for (const Schedule &s : sample_gpu_schedules(task.compute, target, 2, rng)) check_on_host(task, s, inputs, want);
  }
}

TEST_CASE("GPU kernels compile to PTX that ptxas assembles for Hopper", "[gpu][ptx]") {
  const std::optional<std::string> ptxas = find_ptxas();
  if (!ptxas) WARN("ptxas not found: PTX is generated but not assembled");
  for (const auto &[kind, spec] : std::vector<std::pair<std::string, std::string>>{
           {"matmul", "128x128x64"}, {"conv", "1,16,14,14,32,3,3"}, {"softmax", "8x100"}}) {
    INFO(kind << " " << spec);
    Task task = benchmark_task(kind, spec, kind != "softmax");
    auto ptx = compile_task_to_ptx(task, nullptr, kCuda86);
    INFO((ptx.ok() ? std::string() : ptx.error().message));
    REQUIRE(ptx.ok());
    CHECK(ptx->find(".target sm_86") != std::string::npos);
    const std::vector<std::string> kernels = ptx_kernel_names(ptx.value());
    CHECK_FALSE(kernels.empty());
    if (!ptxas) continue;
    auto report = assemble_ptx(*ptxas, ptx.value(), "sm_90");
    INFO((report.ok() ? std::string() : report.error().message));
    REQUIRE(report.ok());
    REQUIRE(report->kernels.size() == kernels.size());
    for (const PtxasKernelReport &k : report->kernels) {
      INFO(k.name << ": " << k.registers << " registers");
      CHECK(k.registers > 0);
      CHECK(k.registers <= 255);
    }
  }
  // A long softmax row is reduced by one block per row whose threads keep interleaved
  // partials, folded in the same kernel: no kernel more than a short row's, which keeps one
  // thread per row. 512 = 32 x 16: a full warp, its partials in registers read by warp
  // shuffles; 200 = 25 x 8: 25 threads, partials in shared memory behind a barrier.
  auto softmax_ptx = [](const std::string &spec) {
    auto ptx = compile_task_to_ptx(benchmark_task("softmax", spec), nullptr, kCuda86);
    REQUIRE(ptx.ok());
    return ptx.value();
  };
  const std::string warp_row = softmax_ptx("8x512"), shared_row = softmax_ptx("8x200"), short_row = softmax_ptx("8x40");
  CHECK(ptx_kernel_names(warp_row).size() == ptx_kernel_names(short_row).size());
  CHECK(ptx_kernel_names(shared_row).size() == ptx_kernel_names(short_row).size());
  CHECK(warp_row.find("shfl.sync") != std::string::npos);
  CHECK(warp_row.find(".shared") == std::string::npos);
  // The 32 partials of each statistic (the row's max, then its sum) fold as a tree of four
  // levels, two shuffles each at most (one lane fetching all 32: 64 shuffles in all).
  size_t shuffles = 0;
  for (size_t at = warp_row.find("shfl.sync"); at != std::string::npos; at = warp_row.find("shfl.sync", at + 1)) ++shuffles;
  CHECK(shuffles <= 2 * 4 * 2 + 4);
  // The tree's sums, its loops run on the host, equal the CPU's.
  for (const auto &[kind, spec] : std::vector<std::pair<std::string, std::string>>{{"softmax", "8x512"}, {"layernorm", "8x512"}}) {
    INFO(kind << " " << spec);
    Task task = benchmark_task(kind, spec);
    const std::vector<Tensor> inputs = task_inputs(task, 4);
    check_on_host(task, default_gpu_schedule(task.compute, gpu_target_for_capability(90)), inputs,
                  run_cpu_default(task, inputs));
  }
  CHECK(shared_row.find(".shared") != std::string::npos);
  CHECK(shared_row.find("bar.sync") != std::string::npos);
  CHECK(short_row.find(".shared") == std::string::npos);
  CHECK(short_row.find("shfl.sync") == std::string::npos);
  if (ptxas)
    for (const std::string *ptx : {&warp_row, &shared_row}) CHECK(assemble_ptx(*ptxas, *ptx, "sm_90").ok());
  // A CPU target has no PTX.
  Task task = benchmark_task("matmul", "16x16x16");
  CHECK_FALSE(compile_task_to_ptx(task, nullptr, Target{}).ok());
}

TEST_CASE("warp tiles stage operands in shared memory: host replay equals the CPU, ptxas finds no spills",
          "[gpu][warp]") {
  const GpuTargetDesc target = gpu_target_for_capability(90);
  const std::optional<std::string> ptxas = find_ptxas();
  std::mt19937_64 rng(5);
  for (const auto &[kind, spec] : std::vector<std::pair<std::string, std::string>>{
           {"matmul", "64x128x96"}, {"conv", "1,8,12,12,32,3,3"}, {"conv", "1,16,8,8,64,3,3,2"}}) {
    INFO(kind << " " << spec);
    Task task = benchmark_task(kind, spec, true);
    const std::vector<Sketch> sketches = generate_gpu_sketches(task.compute, target);
    REQUIRE(sketches.size() == 2);
    REQUIRE(sketches[1].name == "gpu_warp_tile");
    const std::vector<Tensor> inputs = task_inputs(task, 4);
    const std::vector<Tensor> want = run_cpu_default(task, inputs);
    const std::vector<Schedule> defaults = default_gpu_sketch_schedules(task.compute, target);
    REQUIRE(defaults.size() == 2);  // the built-in gpu_tile one, then the warp tile's
    for (int i = 0; i < 6; ++i) {
      const Schedule s = i == 0 ? defaults[1] : sample_gpu_schedule(task.compute, sketches[1], target, rng);
      const std::string text = to_text(s);
      INFO(text);
      REQUIRE(text.find("cache_inputs") != std::string::npos);
      REQUIRE(text.find("gpu_lane") != std::string::npos);
      auto tree = check_gpu_schedule(task.compute, s, target);
      REQUIRE(tree.ok());
      const GpuLaunchShape shape = gpu_launch_shape(tree.value());
      // One warp per block, or (the matmul) up to four along the rows.
      CHECK(shape.max_threads_per_block % 32 == 0);
      CHECK(shape.max_threads_per_block <= (kind == "matmul" ? 128 : 32));
      CHECK(shape.max_register_bytes / 4 <= target.max_accumulators());  // the block tile striped over the lanes
      CHECK(gpu_register_cap(shape, target) == (shape.max_threads_per_block <= 256 ? 255 : 65536 / shape.max_threads_per_block / 8 * 8));
      check_on_host(task, s, inputs, want);
      auto ptx = compile_task_to_ptx(task, &s, kCuda86);
      INFO((ptx.ok() ? std::string() : ptx.error().message));
      REQUIRE(ptx.ok());
      CHECK(ptx->find("st.shared") != std::string::npos);  // the staged operand tiles
      CHECK(ptx->find("bar.sync") != std::string::npos);   // between their loads and use
      if (!ptxas) continue;
      auto report = assemble_ptx(*ptxas, ptx.value(), "sm_90");
      INFO((report.ok() ? std::string() : report.error().message));
      REQUIRE(report.ok());
      for (const PtxasKernelReport &k : report->kernels) {
        INFO(k.name << ": " << k.registers << " registers, " << k.shared_bytes << " bytes shared");
        CHECK(k.registers <= 255);
        CHECK(k.spill_store_bytes == 0);
      }
    }
  }
}

TEST_CASE("a warp tile of four warps shares its staged tiles: host replay equals the CPU, vector loads in PTX",
          "[gpu][warp]") {
  const GpuTargetDesc target = gpu_target_for_capability(90);
  const auto [task, sketches] = warp_matmul("128x256x64", target);
  SketchChoices choices = default_gpu_choices(task.compute, sketches[1], target);
  // Not a parameter the search draws (slower on an H100: gpu_warp_tile.cpp), but one the
  // writer takes.
  std::string warps_param;
  for (const SketchParam &p : sketches[1].params)
    if (p.name.size() > 12 && p.name.compare(p.name.size() - 12, 12, ".warp.vector") == 0)
      warps_param = p.name.substr(0, p.name.size() - 12) + ".warp.warps";
  REQUIRE(!warps_param.empty());
  CHECK(choices.count(warps_param) == 0);
  choices[warps_param] = 4;
  for (auto &[name, value] : choices)
    if (name.find(".warp.register.") != std::string::npos) value = 4;  // 4 x 4 per lane, 4 warps
  auto schedule = build_gpu_sketch_schedule(task.compute, sketches[1], target, choices);
  INFO((schedule.ok() ? std::string() : schedule.error().message));
  REQUIRE(schedule.ok());
  const std::string text = to_text(schedule.value());
  INFO(text);
  CHECK(text.find("gpu_thread 1") != std::string::npos);
  auto tree = check_gpu_schedule(task.compute, schedule.value(), target);
  INFO((tree.ok() ? std::string() : tree.error().message));
  REQUIRE(tree.ok());
  CHECK(gpu_launch_shape(tree.value()).max_threads_per_block == 128);
  const std::vector<Tensor> inputs = task_inputs(task, 4);
  check_on_host(task, schedule.value(), inputs, run_cpu_default(task, inputs));
  auto ptx = compile_task_to_ptx(task, &schedule.value(), kCuda86);
  INFO((ptx.ok() ? std::string() : ptx.error().message));
  REQUIRE(ptx.ok());
  CHECK(ptx->find("ld.shared.v4.f32") != std::string::npos);  // A's rows stored k-major
  CHECK(ptx->find("%tid.y") != std::string::npos);              // the warps
}

TEST_CASE("the GPU search space proposes and mutates only schedules the device can run", "[gpu][search]") {
  Task conv = benchmark_task("conv", "1,16,14,14,32,3,3", true);
  GpuTargetDesc target = gpu_target_for_capability(90);
  target.max_threads_per_block = 256;
  const ScheduleSpace space = ScheduleSpace::for_gpu(target);
  CHECK(space.gpu());
  CHECK(space.parallelism() == 132);
  std::mt19937_64 rng(3);
  XgbCostModel untrained;
  SearchOptions options;
  options.population = 48;
  options.generations = 2;
  const std::vector<Candidate> picked =
      propose_candidates(conv.compute, space, untrained, {space.default_schedule(conv.compute)}, {}, 12, options, rng);
  REQUIRE(picked.size() == 12);
  for (const Candidate &c : picked) {
    INFO(to_text(c.schedule));
    CHECK(space.admits(conv.compute, c.schedule).ok());
    CHECK_FALSE(c.features.empty());
  }
  int mutated = 0;
  for (const Candidate &c : picked) {
    auto m = space.mutate(conv.compute, c.schedule, rng);
    if (!m.ok()) continue;
    ++mutated;
    INFO(to_text(m.value()));
    CHECK(space.admits(conv.compute, m.value()).ok());
    CHECK(m.value() != c.schedule);
  }
  CHECK(mutated >= 6);
}

TEST_CASE("GPU measurement times candidates on the device against the CPU's outputs", "[gpu][measure]") {
  auto device = query_cuda_device();
  if (!device.ok()) {
    WARN("skipped: no CUDA GPU (" << device.error().message << ")");
    return;
  }
  auto target = parse_target("cuda -arch=sm_" + std::to_string(device->capability()));
  REQUIRE(target.ok());
  Task task = benchmark_task("matmul", "256x256x256", true);
  Measurer measurer(task, target.value());
  auto baseline = measurer.prepare_reference();
  INFO((baseline.ok() ? std::string() : baseline.error().message));
  REQUIRE(baseline.ok());
  CHECK(baseline->median_seconds > 0);
  std::mt19937_64 rng(1);
  const std::vector<Schedule> schedules = sample_gpu_schedules(task.compute, device->target_desc(), 4, rng);
  for (const MeasureResult &r : measurer.measure(schedules)) {
    INFO(to_text(r.status) << ": " << r.error);
    CHECK(r.status == RecordStatus::Ok);
    CHECK(r.median_seconds > 0);
  }
}

TEST_CASE("a CUDA kernel JIT-compiles anywhere; without a GPU, running it is an error, not a crash", "[gpu][jit]") {
  Task task = benchmark_task("matmul", "64x64x64", true);
  auto kernel = compile_task(task, nullptr, kCuda86);
  INFO((kernel.ok() ? std::string() : kernel.error().message));
  REQUIRE(kernel.ok());
  CHECK(kernel->on_gpu());
  const std::vector<Tensor> inputs = task_inputs(task, 2);
  auto out = run_task(kernel.value(), task, inputs);
  if (query_cuda_device().ok()) {
    INFO((out.ok() ? std::string() : out.error().message));
    REQUIRE(out.ok());
    CHECK(max_relative_difference(out.value(), run_cpu_default(task, inputs)) < 1e-4);
  } else {
    REQUIRE_FALSE(out.ok());
    WARN("no GPU: " << out.error().message);
    CHECK_FALSE(out.error().message.empty());
  }
}

TEST_CASE("split-k splits a long reduction over a block's threads: host replay equals the CPU, one kernel, no spills",
          "[gpu][splitk]") {
  const GpuTargetDesc target = gpu_target_for_capability(90);
  const std::optional<std::string> ptxas = find_ptxas();
  std::mt19937_64 rng(11);
  for (const auto &[kind, spec] : std::vector<std::pair<std::string, std::string>>{
           {"conv", "1,64,7,7,32,3,3"}, {"conv", "1,512,4,4,64,1,1"}, {"matmul", "4x64x512"}}) {
    INFO(kind << " " << spec);
    Task task = benchmark_task(kind, spec, true);
    const std::vector<Sketch> sketches = generate_gpu_sketches(task.compute, target);
    const Sketch *split = nullptr;
    for (const Sketch &s : sketches)
      if (s.name == "gpu_split_k") split = &s;
    REQUIRE(split != nullptr);
    const std::vector<Tensor> inputs = task_inputs(task, 4);
    const std::vector<Tensor> want = run_cpu_default(task, inputs);
    Schedule split_default;
    for (const Schedule &s : default_gpu_sketch_schedules(task.compute, target))
      if (to_text(s).find("rfactor") != std::string::npos) split_default = s;
    REQUIRE(split_default.steps.size() > 0);
    for (int i = 0; i < 4; ++i) {
      const Schedule s = i == 0 ? split_default : sample_gpu_schedule(task.compute, *split, target, rng);
      const std::string text = to_text(s);
      INFO(text);
      REQUIRE(text.find("rfactor") != std::string::npos);
      auto tree = check_gpu_schedule(task.compute, s, target);
      INFO((tree.ok() ? std::string() : tree.error().message));
      REQUIRE(tree.ok());
      const GpuLaunchShape shape = gpu_launch_shape(tree.value());
      CHECK(shape.kernels == 1);  // partials and their fold in the same block
      CHECK(shape.max_shared_bytes > 0);
      check_on_host(task, s, inputs, want);
      auto ptx = compile_task_to_ptx(task, &s, kCuda86);
      INFO((ptx.ok() ? std::string() : ptx.error().message));
      REQUIRE(ptx.ok());
      CHECK(ptx_kernel_names(ptx.value()).size() == 1);
      CHECK(ptx->find("bar.sync") != std::string::npos);  // between the partials and their fold
      if (!ptxas) continue;
      auto report = assemble_ptx(*ptxas, ptx.value(), "sm_90");
      INFO((report.ok() ? std::string() : report.error().message));
      REQUIRE(report.ok());
      for (const PtxasKernelReport &k : report->kernels) CHECK(k.spill_store_bytes == 0);
    }
  }
  // The default schedule of a small output with a long reduction (ResNet-18's 7x7x512
  // convs), and only there; the other sketches' defaults still start the search.
  for (const auto &[spec, split_default] : std::vector<std::pair<std::string, bool>>{
           {"1,512,7,7,512,3,3", true}, {"1,64,56,56,64,3,3", false}}) {
    INFO(spec);
    Task task = benchmark_task("conv", spec, true);
    CHECK((to_text(default_gpu_schedule(task.compute, target)).find("rfactor") != std::string::npos) == split_default);
    std::set<std::string> starts;
    for (const Schedule &s : default_gpu_sketch_schedules(task.compute, target)) CHECK(starts.insert(to_text(s)).second);
    CHECK(starts.size() == generate_gpu_sketches(task.compute, target).size());
  }
  // Not offered where the output fills the device or the reduction is short.
  for (const auto &[kind, spec] : std::vector<std::pair<std::string, std::string>>{
           {"matmul", "1024x1024x1024"}, {"conv", "1,8,12,12,32,3,3"}}) {
    Task task = benchmark_task(kind, spec, true);
    for (const Sketch &s : generate_gpu_sketches(task.compute, target)) CHECK(s.name != "gpu_split_k");
  }
}

TEST_CASE("warp tiles with the stage's reduction steps unrolled, and 128 accumulators per lane, replay on the host",
          "[gpu][warp]") {
  const GpuTargetDesc target = gpu_target_for_capability(90);
  const auto [task, sketches] = warp_matmul("64x256x64", target);
  const std::vector<Tensor> inputs = task_inputs(task, 4);
  const std::vector<Tensor> want = run_cpu_default(task, inputs);
  for (const auto &[lane_tile, row_tile, unroll] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {2, 16, 4}, {2, 16, 16}, {4, 32, 8}}) {
    SketchChoices choices = default_gpu_choices(task.compute, sketches[1], target);
    std::string anchor;
    int axis = 0;
    for (const SketchParam &p : sketches[1].params) {
      if (p.name.find(".warp.register.") != std::string::npos) choices[p.name] = axis++ == 0 ? lane_tile : row_tile;
      const auto at = p.name.find(".warp.reduce.");
      if (at != std::string::npos) {
        anchor = p.name.substr(0, at);
        choices[p.name] = 16;
      }
    }
    choices[anchor + ".warp.unroll_k"] = unroll;
    auto schedule = build_gpu_sketch_schedule(task.compute, sketches[1], target, choices);
    INFO(lane_tile << " x " << row_tile << ", unrolled by " << unroll);
    INFO((schedule.ok() ? std::string() : schedule.error().message));
    REQUIRE(schedule.ok());
    CHECK(to_text(schedule.value()).find("unroll matmul_acc.u0 matmul_k") != std::string::npos);
    auto tree = check_gpu_schedule(task.compute, schedule.value(), target);
    INFO((tree.ok() ? std::string() : tree.error().message));
    REQUIRE(tree.ok());
    check_on_host(task, schedule.value(), inputs, want);
  }
  // An unroll longer than the stage (8 by default) is refused; others take the largest
  // factor that divides the stage.
  SketchChoices bad = default_gpu_choices(task.compute, sketches[1], target);
  for (const SketchParam &p : sketches[1].params) {
    const auto at = p.name.find(".warp.reduce.");
    if (at != std::string::npos) bad[p.name.substr(0, at) + ".warp.unroll_k"] = 32;
  }
  CHECK_FALSE(build_gpu_sketch_schedule(task.compute, sketches[1], target, bad).ok());
}
