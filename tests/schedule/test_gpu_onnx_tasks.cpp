// A long property run (hidden tag, run by hand): the default GPU schedule of every static
// task of the ONNX node tests compiles to PTX and, replayed on the host, computes what the
// CPU's default schedule computes.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "codegen/ptx_compile.h"
#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"
#include "graph/onnx/onnx_import.h"
#include "search/gpu/gpu_sketch.h"
#include "task/task.h"

using namespace tessel;

TEST_CASE("the default GPU schedule of every ONNX node-test task", "[.][gpu_onnx]") {
  const std::string root = "/usr/share/libonnx-testdata/data/node";
  if (!std::filesystem::exists(root)) {
    WARN("libonnx-testdata is not installed: nothing to check");
    return;
  }
  const Target cuda = parse_target("cuda -arch=sm_86").value();
  const GpuTargetDesc gpu = gpu_target_for_capability(86);
  int tasks = 0, passed = 0, not_tunable = 0;
  std::vector<std::string> failures;
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(root)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    auto model = load_model(root + "/" + name + "/model.onnx");
    if (!model.ok()) continue;
    auto typed = infer_shapes(std::move(model.value()));
    if (!typed.ok()) continue;
    auto graph = std::make_shared<const Graph>(std::move(typed.value()));
    for (const Workload &t : distinct_workloads(*graph, partition_graph(*graph))) {
      if (t.workload_text.find('?') != std::string::npos || t.workload_text.find("[*]") != std::string::npos) continue;
      auto task = make_task(graph, t.group);
      if (!task.ok()) {
        ++not_tunable;
        continue;
      }
      ++tasks;
      auto fail = [&](const std::string &why) { failures.push_back(name + " (" + t.workload_key + "): " + why); };
      const std::vector<Tensor> inputs = task_inputs(task.value(), 1);
      auto reference = compile_task(task.value(), nullptr);
      if (!reference.ok()) {
        --tasks;
        ++not_tunable;
        continue;
      }
      auto want = run_task(reference.value(), task.value(), inputs);
      if (!want.ok()) {
        --tasks;
        ++not_tunable;
        continue;
      }
      const Schedule schedule = default_gpu_schedule(task->compute, gpu);
      if (auto checked = check_gpu_schedule(task->compute, schedule, gpu); !checked.ok() && !task->compute.funcs.empty()) {
        bool scalar = true;
        for (const FuncDesc &f : task->compute.funcs) scalar &= !f.is_output || f.pure_axes.empty();
        if (!scalar) {
          fail("no valid GPU schedule: " + checked.error().message);
          continue;
        }
      }
      auto host = compile_gpu_schedule_on_host(task.value(), schedule);
      if (!host.ok()) {
        fail("host replay: " + host.error().message);
        continue;
      }
      auto got = run_task(host.value(), task.value(), inputs);
      if (!got.ok()) {
        fail("host replay run: " + got.error().message);
        continue;
      }
      if (!(max_relative_difference(got.value(), want.value()) < 1e-4)) {
        fail("host replay differs from the CPU");
        continue;
      }
      auto ptx = compile_task_to_ptx(task.value(), &schedule, cuda);
      if (!ptx.ok()) {
        fail("PTX: " + ptx.error().message);
        continue;
      }
      ++passed;
    }
  }
  std::printf("ONNX node tests: %d static tasks, %d passed, %zu failed, %d not tunable\n", tasks, passed,
              failures.size(), not_tunable);
  for (const std::string &f : failures) std::printf("  %s\n", f.substr(0, 300).c_str());
  CHECK(failures.empty());
}
