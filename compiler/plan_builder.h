#pragma once
// The execution plan of an artifact as the compiler builds it: which bytes every tensor a
// step touches lives in (input, output, weight, arena slot or a view of another tensor), the
// kernel and copy steps in order, and the weights file's bytes.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "deploy/execution_plan.h"
#include "graph/fusion/memory_plan.h"
#include "graph/ir/graph.h"

namespace tessel {

class PlanBuilder {
 public:
  PlanBuilder(const Graph &g, const MemoryPlan &memory);

  /// The plan tensor id of graph tensor t, declaring it on first use.
  int tensor(int t);

  void view(int output, int source) { view_source_[output] = source; }
  bool is_graph_output(int t) const { return output_position_.count(t) != 0; }
  bool in_arena(int t) const { return memory_.arena_offset[t] != MemoryPlan::kNotInArena; }
  bool is_view(int t) const { return view_source_.count(t) != 0; }

  void kernel(const std::string &symbol, const std::vector<int> &graph_tensors);
  /// A host step computing host.json's node `node` (kNoTensor: omitted or unread).
  void host(int node, const std::vector<int> &inputs, const std::vector<int> &outputs);
  void copy(int source, int destination) { plan_.steps.push_back(deploy::CopyStep{tensor(source), tensor(destination)}); }

  /// Inputs, outputs, and copies into every output position no step wrote.
  deploy::ExecutionPlan finish();

  const std::string &weights() const { return weights_; }
  int64_t arena_bytes() const { return arena_end_; }

 private:
  const deploy::PlanTensor *find(int id) const;
  int64_t add_weight(const Tensor &value);

  const Graph &g_;
  const MemoryPlan &memory_;
  int64_t arena_end_;
  std::map<int, int> input_position_, output_position_, view_source_, declared_;
  deploy::ExecutionPlan plan_;
  std::string weights_;
};

}  // namespace tessel
