// `tessel compile model.onnx --target cuda --ptx DIR`: every task's GPU kernels as PTX (its
// best record for the target, else the default GPU schedule), assembled by ptxas for the
// target's architecture where CUDA is installed. Works on machines without a GPU.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "codegen/ptx_compile.h"
#include "compiler/deployed_schedule_lookup.h"
#include "graph/fusion/fuse.h"
#include "task/task.h"
#include "tools/tessel/commands.h"

namespace tessel {

int write_ptx_command(const Graph &graph, const Target &target, const DeployScheduleLookup &lookup,
                      const std::string &directory) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) return fail(directory + ": cannot create: " + ec.message());
  const std::optional<std::string> ptxas = find_ptxas();
  const std::string arch = "sm_" + std::to_string(cuda_capability(target));
  auto shared = std::make_shared<const Graph>(graph);
  const std::vector<Workload> tasks = distinct_workloads(*shared, partition_graph(*shared));
  std::printf("%-18s %-28s %-8s %7s %9s %9s  %s\n", "task", "ops", "schedule", "kernels", "registers", "spills(B)",
              "file");
  int failures = 0;
  for (const Workload &t : tasks) {
    const std::string ops = group_ops_text(*shared, t.group);
    auto task = make_task(shared, t.group);
    if (!task.ok()) {
      std::printf("%-18s %-28s skipped: %s\n", t.workload_key.c_str(), ops.c_str(), task.error().message.c_str());
      continue;
    }
    std::optional<Schedule> tuned;
    if (lookup) {
      auto best = lookup(t.workload_key);
      if (!best.ok()) return fail(best.error().message);
      if (best.value() && !best.value()->schedule_text.empty())
        if (auto parsed = parse_schedule(best.value()->schedule_text); parsed.ok()) tuned = parsed.value();
    }
    auto ptx = compile_task_to_ptx(task.value(), tuned ? &*tuned : nullptr, target);
    if (!ptx.ok()) {
      std::printf("%-18s %-28s FAILED: %s\n", t.workload_key.c_str(), ops.c_str(), ptx.error().message.c_str());
      ++failures;
      continue;
    }
    const std::string file = directory + "/" + t.workload_key + ".ptx";
    std::ofstream(file, std::ios::binary) << ptx.value();
    std::string registers = "-", spills = "-";
    if (ptxas) {
      auto report = assemble_ptx(*ptxas, ptx.value(), arch);
      if (!report.ok()) {
        std::printf("%-18s %-28s ptxas FAILED: %s\n", t.workload_key.c_str(), ops.c_str(), report.error().message.c_str());
        ++failures;
        continue;
      }
      int most = 0;
      int64_t spilled = 0;
      for (const PtxasKernelReport &k : report->kernels) {
        most = std::max(most, k.registers);
        spilled += k.spill_store_bytes;
      }
      registers = std::to_string(most);
      spills = std::to_string(spilled);
    }
    std::printf("%-18s %-28.28s %-8s %7zu %9s %9s  %s\n", t.workload_key.c_str(), ops.c_str(), tuned ? "tuned" : "default",
                ptx_kernel_names(ptx.value()).size(), registers.c_str(), spills.c_str(), file.c_str());
  }
  std::printf("%s: PTX for %s%s\n", directory.c_str(), target.to_string().c_str(),
              ptxas ? (", assembled by " + *ptxas + " for " + arch).c_str() : " (ptxas not found: not assembled)");
  return failures ? 1 : 0;
}

}  // namespace tessel
