#include "executor/load_model.h"

#include <iostream>

#include "executor/optimize_graph.h"
#include "graph/onnx/onnx_import.h"

namespace tessel {

Result<Graph> optimize_as_told(Graph graph, const OptimizeOptions &options) {
  auto target = parse_target(options.target);
  if (!target.ok()) return target.error();
  if (!options.enabled) return graph;
  PassOptions passes;
  passes.skip.insert(options.skip.begin(), options.skip.end());
  if (options.print_after_each) passes.print_after_each = &std::cerr;
  return optimize_graph(std::move(graph), passes, target.value());
}

Result<Graph> load_optimized_model(const std::string &path, const OptimizeOptions &options) {
  auto graph = load_model(path);
  if (!graph.ok()) return graph;
  auto optimized = optimize_as_told(std::move(graph.value()), options);
  if (!optimized.ok()) return make_error(optimized.error().kind, path + ": " + optimized.error().message);
  return optimized;
}

}  // namespace tessel
