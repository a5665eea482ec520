#include "executor/optimize_graph.h"

#include "executor/constant_evaluator.h"

namespace tessel {

Result<Graph> optimize_graph(Graph graph, const PassOptions &options, const Target &target) {
  const PassTarget kind = target.kind == Target::Kind::Cuda ? PassTarget::Gpu : PassTarget::Cpu;
  return run_passes(std::move(graph), default_passes(make_constant_evaluator(), kind), options);
}

}  // namespace tessel
