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
  /// A host step computing host.json's node `node`, its tensors given as plan ids (tensor()
  /// or extra_weight(); -1: omitted or unread).
  void host(int node, const std::vector<int> &plan_inputs, const std::vector<int> &plan_outputs);
  /// A constant the graph does not have (a weight laid out for a host step), in weights.bin;
  /// returns its plan tensor id.
  int extra_weight(const std::string &name, const Tensor &value);
  void copy(int source, int destination);
  /// `whole` holds its value now: `parts` were computed into its bytes, in order.
  void join(int whole, const std::vector<int> &parts);

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
  int next_id_;  // plan ids past the graph's tensors: extra weights, then output copies
  deploy::ExecutionPlan plan_;
  std::string weights_;
};

}  // namespace tessel
