// Benchmark of the graph optimizer's runtime effect: untuned latency of a model executed one
// kernel per node (unfused, every intermediate in its own buffer) against one kernel per fused
// group with intermediates in the planned arena, measured in the same run, interleaved.
//
//   tessel_bench_fusion [--rounds R] [--runs N] [--out FILE] model.onnx [model.onnx ...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "executor/graph_executor.h"
#include "executor/model_inputs.h"
#include "executor/optimize_graph.h"
#include "graph/onnx/onnx_import.h"

using namespace tessel;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Bytes of every tensor produced by a node that is neither a graph output nor a constant:
/// what an executor without planning allocates per run.
int64_t intermediate_bytes(const Graph &g) {
  std::vector<bool> is_output(g.tensors.size(), false);
  for (int t : g.outputs) is_output[t] = true;
  int64_t total = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int t : g.node_outputs[n])
      if (t != kNoTensor && !is_output[t] && !g.tensors[t].constant && g.tensors[t].type.fully_known())
        total += shape_numel(g.tensors[t].type.shape) * dtype_size(g.tensors[t].type.dtype);
  return total;
}

struct Row {
  std::string model;
  size_t nodes = 0;
  int unfused_launches = 0, fused_launches = 0;
  double unfused_ms = 0, fused_ms = 0;
  int64_t intermediates = 0, arena = 0;
};

std::string shell_output(const char *command) {
  std::string out;
  if (FILE *p = popen(command, "r")) {
    char buf[256];
    while (fgets(buf, sizeof(buf), p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  int rounds = 5, runs = 20;
  std::string out_file;
  std::vector<std::string> models;
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc) out_file = argv[++i];
    else models.push_back(a);
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: tessel_bench_fusion [--rounds R] [--runs N] [--out FILE] model.onnx...\n");
    return 2;
  }

  std::vector<Row> rows;
  for (const std::string &path : models) {
    auto loaded = load_model(path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
      return 1;
    }
    auto optimized = optimize_graph(loaded.value());
    if (!optimized.ok()) {
      std::fprintf(stderr, "%s\n", optimized.error().message.c_str());
      return 1;
    }
    auto graph = std::make_shared<const Graph>(std::move(optimized.value()));
    auto inputs = random_inputs(*graph, 1);
    if (!inputs.ok()) return 1;
    ExecutorOptions unfused_options;
    unfused_options.fuse = false;
    GraphExecutor unfused(graph, Target{}, unfused_options), fused(graph);

    // Both produce the same numbers before anything is timed (and the kernels are compiled).
    auto a = unfused.run(inputs.value()), b = fused.run(inputs.value());
    if (!a.ok() || !b.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), (!a.ok() ? a.error() : b.error()).message.c_str());
      return 1;
    }
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < a->at(0).numel(); ++i) {
      const double x = a->at(0).element_as_double(i), y = b->at(0).element_as_double(i);
      diff += (x - y) * (x - y);
      norm += x * x;
    }
    std::printf("%s: fused vs unfused relative L2 %.2g\n", path.c_str(), std::sqrt(diff / std::max(norm, 1e-30)));

    std::vector<double> unfused_ms, fused_ms;
    auto time_one = [&](const GraphExecutor &e, std::vector<double> &into) {
      for (int r = 0; r < runs; ++r) {
        const auto start = std::chrono::steady_clock::now();
        auto result = e.run(inputs.value());
        into.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        if (!result.ok()) std::exit(1);
      }
    };
    for (int round = 0; round < rounds; ++round) {  // interleaved: noise hits both alike
      time_one(unfused, unfused_ms);
      time_one(fused, fused_ms);
    }
    Row row;
    row.model = path.substr(path.find_last_of('/') + 1);
    row.nodes = graph->nodes.size();
    row.unfused_launches = unfused.last_kernel_launches();
    row.fused_launches = fused.last_kernel_launches();
    row.unfused_ms = median(unfused_ms);
    row.fused_ms = median(fused_ms);
    row.intermediates = intermediate_bytes(*graph);
    row.arena = fused.memory_plan().arena_bytes;
    rows.push_back(row);
  }

  std::ostringstream table;
  table << "| model | nodes | kernels unfused | kernels fused | unfused ms | fused ms | speedup | intermediates MB | arena MB | arena / intermediates |\n"
        << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  char line[512];
  for (const Row &r : rows) {
    std::snprintf(line, sizeof(line), "| %s | %zu | %d | %d | %.3f | %.3f | %.2fx | %.2f | %.2f | %.2f |\n",
                  r.model.c_str(), r.nodes, r.unfused_launches, r.fused_launches, r.unfused_ms, r.fused_ms,
                  r.unfused_ms / r.fused_ms, r.intermediates / 1e6, r.arena / 1e6,
                  static_cast<double>(r.arena) / std::max<int64_t>(r.intermediates, 1));
    table << line;
  }
  std::printf("\n%s", table.str().c_str());
  if (!out_file.empty()) {
    std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof(date), "%Y-%m-%d", std::localtime(&now));
    std::ofstream f(out_file);
    f << "# Fusion and memory planning: untuned latency and memory\n\n"
      << "- date: " << date << "\n"
      << "- machine: " << shell_output("lscpu | grep 'Model name' | sed 's/.*: *//'") << ", "
      << shell_output("nproc") << " cores\n"
      << "- command: `" << command_line << "`\n"
      << "- method: the model after the default graph passes, executed by two executors built in the same\n"
      << "  process: one kernel per node with every intermediate in its own buffer, and one kernel per fused\n"
      << "  group with intermediates in the planned arena. Kernels compile before timing; " << rounds
      << " interleaved rounds of " << runs << " runs each; the median wall time of one `run()` is reported.\n"
      << "  HL_NUM_THREADS=" << (std::getenv("HL_NUM_THREADS") ? std::getenv("HL_NUM_THREADS") : "(all cores)") << ".\n"
      << "- intermediates: the bytes of every node output that is not a graph output or a constant (what the\n"
      << "  unfused executor allocates per run); arena: the planned arena of the fused executor.\n\n"
      << table.str();
  }
  return 0;
}
