// Every task of the exported models, scheduled for a CUDA GPU: its PTX is generated (and
// assembled by ptxas for Hopper where CUDA is installed) and, since no GPU need be present,
// the GPU schedules' loops run on the host and must match the CPU's results. Each model also
// compiles into a cuda artifact.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "codegen/ptx_compile.h"
#include "compiler/artifact_compiler.h"
#include "executor/optimize_graph.h"
#include "graph/fusion/fuse.h"
#include "graph/onnx/onnx_import.h"
#include "search/gpu/gpu_sketch.h"
#include "task/task.h"

using namespace tessel;

namespace {

/// The default GPU schedule and `samples` sampled ones of every task of a model.
void check_model_on_gpu(const std::string &model, int samples) {
  const std::string path = std::string(TESSEL_MODELS_DIR) + "/" + model + ".onnx";
  auto target = parse_target("cuda -arch=sm_90");
  REQUIRE(target.ok());
  auto graph = load_model(path);
  INFO(path << ": " << (graph.ok() ? std::string() : graph.error().message));
  REQUIRE(graph.ok());
  auto optimized = optimize_graph(std::move(graph.value()), {}, target.value());
  REQUIRE(optimized.ok());
  auto shared = std::make_shared<const Graph>(std::move(optimized.value()));
  const std::vector<Workload> tasks = distinct_workloads(*shared, partition_graph(*shared));
  REQUIRE_FALSE(tasks.empty());
  const GpuTargetDesc gpu = gpu_target_desc(target.value());
  const std::optional<std::string> ptxas = find_ptxas();
  if (!ptxas) WARN("ptxas not found: PTX is generated but not assembled");
  std::mt19937_64 rng(5);
  int kernels = 0;
  for (const Workload &t : tasks) {
    const std::string ops = group_ops_text(*shared, t.group);
    INFO("task " << t.workload_key << " (" << ops << ")");
    auto task = make_task(shared, t.group);
    INFO((task.ok() ? std::string() : task.error().message));
    REQUIRE(task.ok());
    const std::vector<Tensor> inputs = task_inputs(task.value(), 1);
    auto reference = compile_task(task.value(), nullptr);
    REQUIRE(reference.ok());
    auto want = run_task(reference.value(), task.value(), inputs);
    REQUIRE(want.ok());

    std::vector<Schedule> schedules{default_gpu_schedule(task->compute, gpu)};
    for (const Schedule &s : sample_gpu_schedules(task->compute, gpu, samples, rng)) schedules.push_back(s);
    for (const Schedule &schedule : schedules) {
      INFO(to_text(schedule));
      auto ptx = compile_task_to_ptx(task.value(), &schedule, target.value());
      INFO((ptx.ok() ? std::string() : ptx.error().message));
      REQUIRE(ptx.ok());
      const std::vector<std::string> names = ptx_kernel_names(ptx.value());
      REQUIRE_FALSE(names.empty());
      kernels += static_cast<int>(names.size());
      if (ptxas) {
        auto report = assemble_ptx(*ptxas, ptx.value(), gpu.arch());
        INFO((report.ok() ? std::string() : report.error().message));
        REQUIRE(report.ok());
        for (const PtxasKernelReport &k : report->kernels) {
          INFO(k.name);
          CHECK(k.registers <= gpu.max_registers_per_thread);
          CHECK(k.shared_bytes <= gpu.shared_bytes_per_block);
          if (&schedule == &schedules.front()) CHECK(k.spill_store_bytes == 0);  // the default never spills
        }
      }
      auto host = compile_gpu_schedule_on_host(task.value(), schedule);
      INFO((host.ok() ? std::string() : host.error().message));
      REQUIRE(host.ok());
      auto got = run_task(host.value(), task.value(), inputs);
      REQUIRE(got.ok());
      CHECK(max_relative_difference(got.value(), want.value()) < 1e-4);
    }
  }
  std::printf("%s: %zu tasks, %zu schedules each, %d GPU kernels in PTX%s; all match the CPU\n", model.c_str(),
              tasks.size(), static_cast<size_t>(samples) + 1, kernels, ptxas ? ", assembled by ptxas for sm_90" : "");
}

}  // namespace

TEST_CASE("every ResNet-18 task compiles to PTX and its GPU schedules compute the CPU's results", "[gpu_codegen]") {
  check_model_on_gpu("resnet18", 2);
}

TEST_CASE("the transformer encoder's and MobileNet-V2's tasks compile to PTX", "[gpu_codegen]") {
  check_model_on_gpu("transformer_encoder", 1);
  check_model_on_gpu("mobilenet_v2", 1);
}

TEST_CASE("every exported model compiles into a cuda artifact, one PTX kernel per kernel call at least",
          "[gpu_codegen]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tessel_cuda_artifacts_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto target = parse_target("cuda -arch=sm_90");
  REQUIRE(target.ok());
  for (const char *model : {"resnet18", "mobilenet_v2", "transformer_encoder"}) {
    INFO(model);
    auto graph = load_model(std::string(TESSEL_MODELS_DIR) + "/" + model + ".onnx");
    REQUIRE(graph.ok());
    auto optimized = optimize_graph(std::move(graph.value()), {}, target.value());
    REQUIRE(optimized.ok());
    ArtifactCompileOptions options;
    options.target = target.value();
    const fs::path artifact = dir / (std::string(model) + ".tsl");
    auto summary = compile_artifact(optimized.value(), options, artifact.string());
    INFO((summary.ok() ? std::string() : summary.error().message));
    REQUIRE(summary.ok());
    CHECK(summary->kernel_steps > 0);
    std::ifstream in(artifact / "kernels.so", std::ios::binary);
    const std::string library((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t entries = 0;
    for (size_t at = library.find(".entry "); at != std::string::npos; at = library.find(".entry ", at + 1)) ++entries;
    CHECK(entries >= static_cast<size_t>(summary->compiled_kernels));
    std::printf("%s: cuda artifact, %d kernel calls (%d compiled kernels, %zu PTX entries), %.1f s\n", model,
                summary->kernel_steps, summary->compiled_kernels, entries, summary->seconds);
  }
  fs::remove_all(dir);
}
