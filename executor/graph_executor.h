#pragma once
// Untuned execution of a whole graph through JIT-compiled Halide kernels, one per fused
// group (or per node), and host code for metadata ops and control flow.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "codegen/target.h"
#include "graph/fusion/fuse.h"
#include "graph/fusion/memory_plan.h"
#include "graph/ir/graph.h"
#include "task/group_pipeline.h"

namespace tessel {

/// Values visible to a graph by name from enclosing graphs (If/Loop bodies read them).
struct Scope {
  const Graph *graph = nullptr;
  const std::vector<Tensor> *values = nullptr;  // by tensor id of `graph`
  const Scope *parent = nullptr;
  /// The value named `name` here or in an enclosing scope, or nullptr.
  const Tensor *find(const std::string &name) const;
};

/// Memory for a node's output (called once per wanted kernel output with its inferred
/// type); host ops allocate their own.
using OutputAllocator = std::function<Tensor(int output_index, const TensorType &type)>;

/// Runs one node on concrete inputs (nullptr for omitted ones): host code, or the cached
/// kernel for its types. `outputs_wanted` has one entry per node output, false where the
/// output is omitted (its shape need not be inferable). The executor runs every node
/// through this; constant folding (executor/constant_evaluator.h) does too.
Result<std::vector<Tensor>> run_node(const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs,
                                     const std::vector<bool> &outputs_wanted, const Scope &scope,
                                     const Target &target, const OutputAllocator &allocate = {});

struct ExecutorOptions {
  /// One kernel per fused group (graph/fusion/fuse.h) instead of one per node.
  bool fuse = true;
  /// Intermediate tensors live in one arena laid out by plan_memory (needs fuse).
  bool use_memory_plan = true;
  /// Tuned schedules: the schedule text to use for a group with this workload key (from a
  /// tuning database or log), an empty text when the best record is the built-in schedule,
  /// or nothing when there is no record. Used only when the group's run-time types are the
  /// graph's static ones the key was computed from.
  std::function<std::optional<std::string>(const std::string &workload_key)> schedule_for;
};

/// Runs a graph. The graph is shared and never modified; run() may be called from several
/// threads at once.
class GraphExecutor {
 public:
  explicit GraphExecutor(std::shared_ptr<const Graph> graph, Target target = {}, ExecutorOptions options = {});

  /// Runs with one tensor per graph input, in order; checks count, dtype and known dims,
  /// and returns one tensor per graph output.
  Result<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) const;
  /// Same, with outer-scope values for a nested body.
  Result<std::vector<Tensor>> run(const std::vector<Tensor> &inputs, const Scope *outer) const;

  const Graph &graph() const { return *graph_; }
  const Target &target() const { return target_; }
  /// The groups executed in order (one per node when fusion is off).
  const std::vector<FusedGroup> &groups() const { return groups_; }
  const MemoryPlan &memory_plan() const { return plan_; }
  /// Kernels launched by the last run (host ops excluded).
  int last_kernel_launches() const { return last_launches_; }
  /// Groups that run with a tuned schedule (see ExecutorOptions::schedule_for).
  int tuned_groups() const;
  /// Groups whose best record is the built-in schedule: tuned, and kept by the search.
  int builtin_best_groups() const { return builtin_best_groups_; }

 private:
  struct RunState;
  Result<void> check_inputs(const std::vector<Tensor> &inputs) const;
  Result<void> run_group(size_t index, RunState &state) const;
  Result<void> run_nodes_of(const FusedGroup &group, RunState &state) const;
  std::shared_ptr<uint8_t[]> take_arena() const;
  void return_arena(std::shared_ptr<uint8_t[]> arena) const;

  std::shared_ptr<const Graph> graph_;
  Target target_;
  ExecutorOptions options_;
  std::vector<FusedGroup> groups_;
  std::vector<GroupSignature> signatures_;
  std::vector<std::string> tuned_schedule_;  // per group: schedule text, empty for built-in
  int builtin_best_groups_ = 0;
  MemoryPlan plan_;
  mutable std::mutex arena_mutex_;
  mutable std::vector<std::shared_ptr<uint8_t[]>> free_arenas_;
  mutable std::atomic<int> last_launches_{0};
};

}  // namespace tessel
