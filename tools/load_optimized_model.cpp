#include <iostream>

#include "graph/onnx_import.h"
#include "runtime/optimize_graph.h"
#include "tools/commands.h"

namespace tessel {

Result<Graph> load_optimized_model(const std::string &path, const OptimizeOptions &options) {
  auto target = parse_target(options.target);
  if (!target.ok()) return target.error();
  auto graph = load_model(path);
  if (!graph.ok() || !options.enabled) return graph;
  PassOptions passes;
  passes.skip.insert(options.skip.begin(), options.skip.end());
  if (options.print_after_each) passes.print_after_each = &std::cerr;
  auto optimized = optimize_graph(std::move(graph.value()), passes, target.value());
  if (!optimized.ok()) return make_error(path + ": " + optimized.error().message);
  return optimized;
}

}  // namespace tessel
