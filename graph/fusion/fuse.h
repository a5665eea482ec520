#pragma once
// Fusion: grouping nodes into fused subgraphs with TVM's op patterns and its
// post-dominator-tree algorithm (seed 001 §3.2), and the workload key of each group.
#include <string>
#include <vector>

#include "graph/ir/graph.h"
#include "graph/ir/op_registry.h"

namespace tessel {

/// Ops whose output is a metadata view of their input: executed as zero-copy views, never
/// fused into a kernel.
bool is_view_op(const std::string &op_type);

/// Ops the runtime executes on the host without a kernel: views, shape queries, constants,
/// sorting (TopK) and control flow. They are never part of a task.
bool runs_on_host(const std::string &op_type);

/// Host ops whose output shapes only their input values tell (NonZero, Compress,
/// NonMaxSuppression): inference knows their rank, a run knows the rest.
bool output_shape_depends_on_values(const std::string &op_type);

/// The fusion pattern of a node: its schema's, or Opaque for views, control flow, nodes
/// with subgraphs and ops without a schema.
OpPattern node_pattern(const Node &node);

/// One fused subgraph: member nodes in topological order, the node whose kind decides the
/// group's schedule (conv, matmul, pool, reduction, or the last node), the group's pattern
/// (the most complex member's).
struct FusedGroup {
  std::vector<int> nodes;
  int anchor = -1;
  OpPattern pattern = OpPattern::Opaque;
};

/// Partitions every node of the graph into groups, in topological order of groups:
/// conv/matmul/pool absorb the elementwise/broadcast chain after them (bias, activation,
/// residual Add), elementwise/broadcast ops fuse into injective or reduction consumers that
/// post-dominate them, injective chains fuse. View and opaque ops stay alone.
std::vector<FusedGroup> partition_graph(const Graph &graph);

/// The immediate post-dominator of every node (-1: the graph's exit), exposed for tests.
std::vector<int> immediate_post_dominators(const Graph &graph);

/// A distinct fused subgraph to compile and tune: one per workload key, with how many times
/// it occurs in the model (weight) and its FLOPs per occurrence.
struct Workload {
  std::string workload_key;
  std::string workload_text;
  FusedGroup group;  // the first occurrence
  int weight = 0;
  int64_t flops = 0;
};

/// The group's op types joined by "+" ("Conv+Add+Relu"), for tables and logs.
std::string group_ops_text(const Graph &graph, const FusedGroup &group);

/// The member whose kind decides the group's schedule: its first conv/matmul/pool or
/// reduction, else its last node (as partition_graph sets FusedGroup::anchor).
int group_anchor(const Graph &graph, const std::vector<int> &nodes);

/// The tasks of a partitioned graph, in order of first occurrence. Groups that run on the
/// host (views, shape queries, control flow) are not tasks.
std::vector<Workload> distinct_workloads(const Graph &graph, const std::vector<FusedGroup> &groups);

/// Canonical text of a group's compute: ops, attributes, the types of its external inputs
/// (values of shape-like inputs included), internal wiring and output types. Node and
/// tensor names do not appear, so identical subgraphs of one model or of two models get
/// the same text.
std::string workload_text(const Graph &graph, const FusedGroup &group);
/// A short stable hash of workload_text (16 hex digits, FNV-1a 64).
std::string workload_key(const Graph &graph, const FusedGroup &group);
std::string workload_key_of_text(const std::string &workload_text);

/// FLOPs of one run of the group: its members' (graph/infer/model_stats.h).
int64_t group_flops(const Graph &graph, const FusedGroup &group);

}  // namespace tessel
