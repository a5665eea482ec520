#include "graph/fusion/fuse.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "base/fnv_hash.h"
#include "graph/infer/model_stats.h"

namespace tessel {

bool is_view_op(const std::string &op_type) {
  static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
  return views.count(op_type) != 0;
}

bool runs_on_host(const std::string &op_type) {
  static const std::set<std::string> host = {"Constant", "Shape", "Size", "TopK", "RoiAlign", "GridSample", "ReverseSequence", "Det", "MaxUnpool", "DFT", "STFT", "MelWeightMatrix", "TfIdfVectorizer", "If", "Loop", "Scan"};
  return is_view_op(op_type) || host.count(op_type) != 0 || output_shape_depends_on_values(op_type);
}

bool output_shape_depends_on_values(const std::string &op_type) {
  return op_type == "NonZero" || op_type == "Compress" || op_type == "NonMaxSuppression" || op_type == "Unique";
}

OpPattern node_pattern(const Node &node) {
  if (!node.domain.empty() || is_view_op(node.op_type)) return OpPattern::Opaque;
  for (const auto &[name, value] : node.attributes.all())
    if (std::holds_alternative<std::shared_ptr<const Graph>>(value) ||
        std::holds_alternative<std::vector<std::shared_ptr<const Graph>>>(value))
      return OpPattern::Opaque;
  const OpSchema *schema = find_op_schema(node.op_type);
  return schema ? schema->pattern : OpPattern::Opaque;
}

namespace {

/// Nodes that read any output of each node (deduplicated), and whether an output of the
/// node leaves the graph.
struct Readers {
  std::vector<std::vector<int>> of_node;
  std::vector<bool> feeds_graph_output;
};

Readers node_readers(const Graph &g) {
  Readers r;
  r.of_node.resize(g.nodes.size());
  r.feeds_graph_output.assign(g.nodes.size(), false);
  const auto tensor_readers = g.consumers();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    std::set<int> readers;
    for (int t : g.node_outputs[n])
      if (t != kNoTensor) readers.insert(tensor_readers[t].begin(), tensor_readers[t].end());
    r.of_node[n].assign(readers.begin(), readers.end());
  }
  for (int t : g.outputs)
    if (t != kNoTensor && g.tensor_producer[t] >= 0) r.feeds_graph_output[g.tensor_producer[t]] = true;
  return r;
}

}  // namespace

std::vector<int> immediate_post_dominators(const Graph &g) {
  const Readers readers = node_readers(g);
  const std::vector<int> order = g.topological_order();
  std::vector<int> ipdom(g.nodes.size(), -1), depth(g.nodes.size(), 0);  // depth under the exit
  auto lca = [&](int a, int b) {
    while (a != b) {
      if (a == -1 || b == -1) return -1;
      if (depth[a] > depth[b]) a = ipdom[a];
      else if (depth[b] > depth[a]) b = ipdom[b];
      else { a = ipdom[a]; b = ipdom[b]; }
    }
    return a;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int n = *it;
    const auto &rs = readers.of_node[n];
    int dom = -1;
    if (!readers.feeds_graph_output[n] && !rs.empty()) {
      dom = rs[0];
      for (size_t i = 1; i < rs.size() && dom != -1; ++i) dom = lca(dom, rs[i]);
    }
    ipdom[n] = dom;
    depth[n] = dom == -1 ? 1 : depth[dom] + 1;
  }
  return ipdom;
}

namespace {

/// Groups reordered so every group comes after the groups producing its inputs (a group's
/// first member can precede a producer of a later member: Abs, Constant, Add(abs, c)).
/// Among ready groups, the one whose first member comes first goes first, which keeps the
/// order stable.
std::vector<FusedGroup> in_dependency_order(const Graph &g, std::vector<FusedGroup> groups) {
  std::vector<int> group_of(g.nodes.size(), -1);
  for (size_t i = 0; i < groups.size(); ++i)
    for (int n : groups[i].nodes) group_of[n] = static_cast<int>(i);
  std::vector<std::set<int>> successors(groups.size());
  std::vector<int> pending(groups.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int t : g.node_inputs[n]) {
      if (t == kNoTensor || g.tensor_producer[t] < 0) continue;
      const int from = group_of[g.tensor_producer[t]], to = group_of[n];
      if (from != to && successors[from].insert(to).second) ++pending[to];
    }
  std::set<int> ready;  // group indices are in first-member order already
  for (size_t i = 0; i < groups.size(); ++i)
    if (pending[i] == 0) ready.insert(static_cast<int>(i));
  std::vector<FusedGroup> ordered;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    ordered.push_back(std::move(groups[i]));
    for (int next : successors[i])
      if (--pending[next] == 0) ready.insert(next);
  }
  if (ordered.size() == groups.size()) return ordered;
  // A cycle between groups would be a fusion bug; run every node alone rather than fail.
  std::vector<FusedGroup> singles;
  for (int n : g.topological_order()) singles.push_back(FusedGroup{{n}, n, node_pattern(g.nodes[n])});
  return singles;
}

/// Union-find over nodes; the root of a group records its pattern.
struct Groups {
  std::vector<int> parent;
  std::vector<OpPattern> pattern;
  int find(int n) { return parent[n] == n ? n : parent[n] = find(parent[n]); }
  void merge_into(int child, int root) {
    int a = find(child), b = find(root);
    if (a == b) return;
    parent[a] = b;
    pattern[b] = std::max(pattern[a], pattern[b]);
  }
};

/// Every node on some path from src to sink (exclusive of both) passes `ok`, and so does
/// the sink with is_sink = true.
bool check_paths(int src, int sink, const Readers &readers, const std::vector<OpPattern> &patterns,
                 const std::function<bool(OpPattern, bool)> &ok) {
  std::set<int> visited;
  std::function<bool(int)> walk = [&](int n) -> bool {
    if (n == sink) return ok(patterns[n], true);
    if (!visited.insert(n).second) return true;
    if (!ok(patterns[n], false)) return false;
    if (readers.feeds_graph_output[n] && readers.of_node[n].empty()) return false;
    for (int r : readers.of_node[n])
      if (!walk(r)) return false;
    return true;
  };
  for (int r : readers.of_node[src])
    if (!walk(r)) return false;
  return true;
}

/// Whether fusing the paths from src to sink would put two anchors (conv, matmul, pool,
/// reduction) in one group: a group is scheduled around one anchor.
bool would_merge_anchors(int src, int sink, const Readers &readers, Groups &groups, const std::vector<OpPattern> &patterns) {
  std::set<int> roots{groups.find(sink)};
  std::set<int> visited;
  std::function<void(int)> walk = [&](int n) {
    if (n == sink || !visited.insert(n).second) return;
    roots.insert(groups.find(n));
    for (int r : readers.of_node[n]) walk(r);
  };
  walk(src);
  int anchors = 0;
  for (size_t n = 0; n < groups.parent.size(); ++n)
    if (roots.count(groups.find(static_cast<int>(n))) &&
        (patterns[n] == OpPattern::OutElementwiseFusable || patterns[n] == OpPattern::Reduction))
      ++anchors;
  return anchors > 1;
}

/// Puts src, sink and every node on a path between them into sink's group.
void fuse_paths(int src, int sink, const Readers &readers, Groups &groups) {
  std::set<int> visited;
  std::function<void(int)> walk = [&](int n) {
    if (n == sink || !visited.insert(n).second) return;
    groups.merge_into(n, sink);
    for (int r : readers.of_node[n]) walk(r);
  };
  walk(src);
}

}  // namespace

std::vector<FusedGroup> partition_graph(const Graph &g) {
  const size_t n_nodes = g.nodes.size();
  const Readers readers = node_readers(g);
  const std::vector<int> ipdom = immediate_post_dominators(g);
  const std::vector<int> order = g.topological_order();
  std::vector<OpPattern> patterns(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) patterns[n] = node_pattern(g.nodes[n]);
  Groups groups{std::vector<int>(n_nodes), patterns};
  std::iota(groups.parent.begin(), groups.parent.end(), 0);

  // How a node relates to its readers: the most complex reader pattern, where a
  // broadcasting reader whose output has this node's shape counts as elementwise (TVM's
  // edge pattern: a residual Add of same-shaped tensors is elementwise for the conv).
  auto same_shape = [&](int producer, int reader) {
    const int a = g.node_outputs[producer].empty() ? kNoTensor : g.node_outputs[producer][0];
    const int b = g.node_outputs[reader].empty() ? kNoTensor : g.node_outputs[reader][0];
    return a != kNoTensor && b != kNoTensor && g.tensors[a].type.fully_known() &&
           g.tensors[a].type.shape == g.tensors[b].type.shape;
  };
  auto relation = [&](int n) {
    OpPattern p = OpPattern::Elementwise;
    for (int r : readers.of_node[n]) {
      OpPattern edge = patterns[r];
      if (edge == OpPattern::Broadcast && same_shape(n, r)) edge = OpPattern::Elementwise;
      p = std::max(p, edge);
    }
    return p;
  };
  for (int phase = 0; phase < 2; ++phase) {
    for (int n : order) {
      const int dom = ipdom[n];
      if (dom < 0 || patterns[n] == OpPattern::Opaque || groups.find(n) == groups.find(dom)) continue;
      const OpPattern group_pattern = groups.pattern[groups.find(n)];
      if (group_pattern == OpPattern::OutElementwiseFusable) {
        // conv/matmul/pool + the elementwise chain after it.
        if (phase != 0 || relation(n) != OpPattern::Elementwise) continue;
        auto ok = [](OpPattern p, bool) { return p <= OpPattern::Broadcast; };
        if (check_paths(n, dom, readers, patterns, ok) && !would_merge_anchors(n, dom, readers, groups, patterns))
          fuse_paths(n, dom, readers, groups);
      } else if (group_pattern <= OpPattern::Broadcast) {
        // Elementwise producers fuse into an injective or reduction consumer.
        if (!(patterns[dom] <= OpPattern::Injective || patterns[dom] == OpPattern::Reduction)) continue;
        auto ok = [](OpPattern p, bool is_sink) {
          return is_sink ? p != OpPattern::Opaque : p <= OpPattern::Injective;
        };
        if (check_paths(n, dom, readers, patterns, ok) && !would_merge_anchors(n, dom, readers, groups, patterns))
          fuse_paths(n, dom, readers, groups);
      } else if (group_pattern == OpPattern::Injective) {
        if (phase != 1 || patterns[dom] > OpPattern::Injective) continue;
        auto ok = [](OpPattern p, bool) { return p <= OpPattern::Injective; };
        if (check_paths(n, dom, readers, patterns, ok) && !would_merge_anchors(n, dom, readers, groups, patterns))
          fuse_paths(n, dom, readers, groups);
      }
    }
  }

  // Collect groups in the topological order of their first member.
  std::map<int, size_t> index_of_root;
  std::vector<FusedGroup> result;
  for (int n : order) {
    const int root = groups.find(n);
    auto it = index_of_root.find(root);
    if (it == index_of_root.end()) {
      it = index_of_root.emplace(root, result.size()).first;
      result.push_back({});
      result.back().pattern = groups.pattern[root];
    }
    result[it->second].nodes.push_back(n);
  }
  result = in_dependency_order(g, std::move(result));
  for (FusedGroup &group : result) group.anchor = group_anchor(g, group.nodes);
  return result;
}

int group_anchor(const Graph &g, const std::vector<int> &nodes) {
  for (int n : nodes) {
    const OpPattern pattern = node_pattern(g.nodes[n]);
    if (pattern == OpPattern::OutElementwiseFusable || pattern == OpPattern::Reduction) return n;
  }
  return nodes.back();
}

std::string group_ops_text(const Graph &g, const FusedGroup &group) {
  std::string ops;
  for (int n : group.nodes) ops += (ops.empty() ? "" : "+") + g.nodes[n].op_type;
  return ops;
}

std::string workload_text(const Graph &g, const FusedGroup &group) {
  std::map<int, std::string> local;  // tensor id -> name inside the group
  std::string text;
  int external = 0;
  auto ref = [&](int t, const OpSchema *schema, int input_index) {
    if (t == kNoTensor) return std::string("_");
    auto it = local.find(t);
    if (it != local.end()) return it->second;
    // An external input: its type, and its value when the op bakes it into the kernel.
    const std::string short_name = "in" + std::to_string(external++);
    std::string name = short_name + ":" + g.tensors[t].type.to_string();
    const bool baked = schema && std::count(schema->value_inputs.begin(), schema->value_inputs.end(), input_index);
    if (baked && g.tensors[t].constant) name += "=" + tensor_canonical_text(*g.tensors[t].constant);
    local[t] = short_name;  // later reads name it only
    return name;
  };
  int produced = 0;
  for (int n : group.nodes) {
    const Node &node = g.nodes[n];
    const OpSchema *schema = find_op_schema(node.op_type);
    std::string line = node.op_type + "(";
    for (size_t i = 0; i < g.node_inputs[n].size(); ++i)
      line += (i ? "," : "") + ref(g.node_inputs[n][i], schema, static_cast<int>(i));
    line += "){" + node.attributes.canonical_text() + "}->";
    for (size_t i = 0; i < g.node_outputs[n].size(); ++i) {
      const int t = g.node_outputs[n][i];
      if (t == kNoTensor) {
        line += (i ? ",_" : "_");
        continue;
      }
      local[t] = "t" + std::to_string(produced++);
      line += (i ? "," : "") + local[t] + ":" + g.tensors[t].type.to_string();
    }
    text += line + ";";
  }
  return text;
}

std::vector<Workload> distinct_workloads(const Graph &graph, const std::vector<FusedGroup> &groups) {
  std::vector<Workload> tasks;
  std::map<std::string, size_t> by_key;
  for (const FusedGroup &group : groups) {
    if (group.nodes.size() == 1 && runs_on_host(graph.nodes[group.nodes[0]].op_type)) continue;
    std::string text = workload_text(graph, group);
    const std::string key = workload_key_of_text(text);
    auto it = by_key.find(key);
    if (it != by_key.end()) {
      ++tasks[it->second].weight;
      continue;
    }
    Workload task;
    task.workload_key = key;
    task.workload_text = std::move(text);
    task.group = group;
    task.weight = 1;
    task.flops = group_flops(graph, group);
    by_key.emplace(key, tasks.size());
    tasks.push_back(std::move(task));
  }
  return tasks;
}

int64_t group_flops(const Graph &graph, const FusedGroup &group) {
  int64_t flops = 0;
  for (int n : group.nodes) flops += node_flops(graph, n);
  return flops;
}

std::string workload_key(const Graph &graph, const FusedGroup &group) {
  return workload_key_of_text(workload_text(graph, group));
}

// Workload keys were first made with this basis, the standard one with its last digit lost.
// Every tuning database is keyed by it: a change would orphan every record ever measured.
constexpr uint64_t kWorkloadKeyBasis = 1469598103934665603ull;

std::string workload_key_of_text(const std::string &workload_text) {
  return fnv1a64_hex(workload_text, kWorkloadKeyBasis);
}

}  // namespace tessel
