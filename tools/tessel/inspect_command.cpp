// `tessel inspect model.onnx`: what is in a model.
#include <cstdio>

#include <algorithm>

#include "base/json.h"
#include "compiler/artifact_compiler.h"
#include "graph/fusion/fuse.h"
#include "graph/fusion/graph_dot.h"
#include "graph/fusion/memory_plan.h"
#include "graph/infer/model_stats.h"
#include "graph/onnx/onnx_import.h"
#include "tools/tessel/commands.h"

namespace tessel {

/// The fused tasks: one line each, most FLOPs first.
static void print_tasks(const Graph &g) {
  const std::vector<FusedGroup> groups = partition_graph(g);
  std::vector<Workload> tasks = distinct_workloads(g, groups_with_steps(g, groups));
  int kernel_groups = 0;
  int64_t total = 0;
  for (const Workload &t : tasks) {
    kernel_groups += t.weight;
    total += t.flops * t.weight;
  }
  std::printf("\nfusion: %zu nodes -> %zu groups, %d kernel launches, %zu distinct tasks\n", g.nodes.size(),
              groups.size(), kernel_groups, tasks.size());
  const MemoryPlan plan = artifact_memory_plan(g, groups);
  std::printf("memory plan: arena %.2f MB, %.2f MB if every intermediate had its own buffer; %d views, %d in place, "
              "%d Concats in place\n",
              plan.arena_bytes / 1e6, plan.unshared_bytes / 1e6, plan.views, plan.in_place, plan.concats_in_place);
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Workload &a, const Workload &b) { return a.flops * a.weight > b.flops * b.weight; });
  std::printf("%-16s %-34s %-20s %6s %12s %7s\n", "key", "ops", "anchor output", "weight", "MFLOPs", "share");
  for (const Workload &t : tasks) {
    std::string ops = group_ops_text(g, t.group);
    if (ops.size() > 34) ops = ops.substr(0, 31) + "...";
    const int out = g.node_outputs[t.group.anchor].empty() ? kNoTensor : g.node_outputs[t.group.anchor][0];
    const std::string shape = out == kNoTensor ? "" : shape_to_string(g.tensors[out].type.shape);
    const double mflops = t.flops * t.weight / 1e6;
    std::printf("%-16s %-34s %-20s %6d %12.2f %6.1f%%\n", t.workload_key.c_str(), ops.c_str(), shape.c_str(), t.weight,
                mflops, total ? 100.0 * t.flops * t.weight / total : 0.0);
  }
}

int inspect_command(const InspectOptions &options) {
  auto graph = load_optimized_model(options.model_path, options.optimize);
  if (!graph.ok()) return fail(graph.error().message);
  const Graph &g = graph.value();
  if (options.task >= 0) return print_task_schedule(g, options.task, options.schedule, options.optimize.target);
  if (!options.dot_path.empty()) {
    const std::string dot = fused_graph_dot(g, partition_graph(g));
    // On stdout the DOT is all that is printed, so it can be piped into `dot`.
    if (options.dot_path == "-") {
      std::fwrite(dot.data(), 1, dot.size(), stdout);
      return 0;
    }
    std::FILE *file = std::fopen(options.dot_path.c_str(), "wb");
    bool written = file != nullptr;
    if (file) {
      written = std::fwrite(dot.data(), 1, dot.size(), file) == dot.size();
      written = std::fclose(file) == 0 && written;
    }
    if (!written) {
      std::fprintf(stderr, "tessel: error: %s: cannot write the DOT file\n", options.dot_path.c_str());
      return 1;
    }
  }
  const ModelStats stats = compute_model_stats(g);
  if (options.json) {
    Json json;
    json["model"] = options.model_path;
    json["opset"] = g.opset;
    json["nodes"] = g.nodes.size();
    json["parameters"] = stats.parameter_count;
    json["parameter_bytes"] = stats.parameter_bytes;
    json["flops"] = stats.flops;
    json["ops"] = Json::object();
    for (const auto &[op, count] : stats.op_histogram) json["ops"][op] = count;
    for (const char *which : {"inputs", "outputs"}) {
      json[which] = Json::array();
      for (int t : std::string(which) == "inputs" ? g.inputs : g.outputs) {
        Json tensor;
        tensor["name"] = g.tensors[t].name;
        tensor["type"] = g.tensors[t].type.to_string();
        json[which].push_back(tensor);
      }
    }
    std::printf("%s\n", dump_json(json).c_str());
    return 0;
  }
  std::printf("model     %s\n", options.model_path.c_str());
  std::printf("graph     %s, opset %lld, %zu nodes\n", g.name.c_str(), static_cast<long long>(g.opset), g.nodes.size());
  for (int t : g.inputs) std::printf("input     %-24s %s\n", g.tensors[t].name.c_str(), g.tensors[t].type.to_string().c_str());
  for (int t : g.outputs) std::printf("output    %-24s %s\n", g.tensors[t].name.c_str(), g.tensors[t].type.to_string().c_str());
  std::printf("params    %lld (%.2f MB)\n", static_cast<long long>(stats.parameter_count), stats.parameter_bytes / 1e6);
  std::printf("FLOPs     %.3f G (multiply-add = 2)\n", stats.flops / 1e9);
  std::printf("ops:\n");
  for (const auto &[op, count] : stats.op_histogram) std::printf("  %-28s %d\n", op.c_str(), count);
  if (options.print_graph) std::printf("\n%s", print_graph(g).c_str());
  if (options.tasks) print_tasks(g);
  return 0;
}

}  // namespace tessel
