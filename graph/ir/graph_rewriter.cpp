#include "graph/ir/graph_rewriter.h"

#include <algorithm>

namespace tessel {

bool node_has_subgraph(const Node &node) {
  for (const auto &[name, value] : node.attributes.all())
    if (std::holds_alternative<std::shared_ptr<const Graph>>(value) ||
        std::holds_alternative<std::vector<std::shared_ptr<const Graph>>>(value))
      return true;
  return false;
}

bool is_nondeterministic_op(const std::string &op_type) {
  return op_type == "RandomNormal" || op_type == "RandomUniform" || op_type == "RandomNormalLike" ||
         op_type == "RandomUniformLike" || op_type == "Bernoulli" || op_type == "Multinomial";
}

const Tensor *constant_value(const Graph &graph, int tensor) {
  if (tensor == kNoTensor || !graph.tensors[tensor].constant) return nullptr;
  return &*graph.tensors[tensor].constant;
}

/// Names that nested bodies read from this graph without listing them as inputs.
static std::set<std::string> captured_names(const Graph &graph) {
  std::set<std::string> names;
  for (const Node &node : graph.nodes)
    for (const std::string &name : node_body_captures(node)) names.insert(name);
  return names;
}

std::set<int> captured_tensors(const Graph &graph) {
  const std::set<std::string> names = captured_names(graph);
  std::set<int> ids;
  if (names.empty()) return ids;
  for (size_t t = 0; t < graph.tensors.size(); ++t)
    if (names.count(graph.tensors[t].name)) ids.insert(static_cast<int>(t));
  return ids;
}

GraphRewriter::GraphRewriter(Graph graph) : graph_(std::move(graph)) {
  readers_ = graph_.consumers();
  removed_.assign(graph_.nodes.size(), false);
  pinned_.insert(graph_.inputs.begin(), graph_.inputs.end());
  pinned_.insert(graph_.outputs.begin(), graph_.outputs.end());
  const std::set<int> captured = captured_tensors(graph_);
  pinned_.insert(captured.begin(), captured.end());
  for (const TensorInfo &t : graph_.tensors) names_.insert(t.name);
  order_ = graph_.topological_order();
}

int GraphRewriter::sole_reader(int tensor) const {
  if (is_pinned(tensor) || readers_[tensor].size() != 1) return -1;
  return readers_[tensor][0];
}

static void erase_value(std::vector<int> &v, int x) { v.erase(std::remove(v.begin(), v.end(), x), v.end()); }

static void insert_sorted(std::vector<int> &v, int x) {
  auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it == v.end() || *it != x) v.insert(it, x);
}

void GraphRewriter::set_input(int n, size_t slot, int tensor) {
  std::vector<int> &ins = graph_.node_inputs[n];
  if (slot >= ins.size()) ins.resize(slot + 1, kNoTensor);  // filling an omitted trailing input
  const int old = ins[slot];
  ins[slot] = tensor;
  if (old != kNoTensor && std::find(ins.begin(), ins.end(), old) == ins.end()) erase_value(readers_[old], n);
  if (tensor != kNoTensor && !removed_[n]) insert_sorted(readers_[tensor], n);
}

void GraphRewriter::set_output(int n, size_t slot, int tensor) {
  std::vector<int> &outs = graph_.node_outputs[n];
  if (outs[slot] != kNoTensor && graph_.tensor_producer[outs[slot]] == n) graph_.tensor_producer[outs[slot]] = -1;
  outs[slot] = tensor;
  if (tensor != kNoTensor) graph_.tensor_producer[tensor] = n;
}

void GraphRewriter::remove_node(int n) {
  if (removed_[n]) return;
  removed_[n] = true;
  for (int t : graph_.node_inputs[n])
    if (t != kNoTensor) erase_value(readers_[t], n);
  for (int t : graph_.node_outputs[n])
    if (t != kNoTensor && graph_.tensor_producer[t] == n) graph_.tensor_producer[t] = -1;
}

bool GraphRewriter::can_merge(int keep, int drop) const {
  if (keep == drop) return false;
  if (!is_pinned(drop)) return true;
  if (std::find(graph_.inputs.begin(), graph_.inputs.end(), drop) != graph_.inputs.end()) return false;
  if (constant_value(graph_, keep)) return true;
  const int p = producer(keep);
  return p >= 0 && !removed_[p] && !is_pinned(keep);
}

int GraphRewriter::merge_into(int keep, int drop) {
  auto move_readers = [&](int from, int to) {
    const std::vector<int> moved = readers_[from];
    for (int r : moved) {
      std::vector<int> &ins = graph_.node_inputs[r];
      for (size_t s = 0; s < ins.size(); ++s)
        if (ins[s] == from) set_input(r, s, to);
    }
  };
  if (!is_pinned(drop)) {
    move_readers(drop, keep);
    return keep;
  }
  const int p = producer(keep);
  if (p < 0 || removed_[p] || is_pinned(keep)) {
    // No producer to hand the pinned name to, so the pinned tensor becomes the constant.
    const Tensor &value = *constant_value(graph_, keep);
    graph_.tensors[drop].constant = value;
    graph_.tensors[drop].type = value.type();
    return drop;
  }
  // The pinned name survives: keep's producer writes it, keep's readers follow.
  const std::vector<int> &outs = graph_.node_outputs[p];
  for (size_t s = 0; s < outs.size(); ++s)
    if (outs[s] == keep) set_output(p, s, drop);
  graph_.tensors[drop].type = graph_.tensors[keep].type;
  graph_.tensors[drop].constant = graph_.tensors[keep].constant;
  move_readers(keep, drop);
  return drop;
}

int GraphRewriter::add_tensor(const std::string &base, TensorType type, std::optional<Tensor> constant) {
  std::string name = base;
  for (int i = 1; names_.count(name); ++i) name = base + "_" + std::to_string(i);
  names_.insert(name);
  const int id = graph_.add_tensor(TensorInfo{name, std::move(type), std::move(constant)});
  readers_.emplace_back();
  return id;
}

int GraphRewriter::add_constant(const std::string &base, Tensor value) {
  TensorType type = value.type();
  return add_tensor(base, std::move(type), std::move(value));
}

int GraphRewriter::add_node(Node node, std::vector<int> inputs, std::vector<int> outputs) {
  const int n = graph_.add_node(std::move(node), inputs, outputs);
  removed_.push_back(false);
  for (int t : inputs)
    if (t != kNoTensor) insert_sorted(readers_[t], n);
  return n;
}

Graph GraphRewriter::finish() const {
  std::vector<bool> keep_tensor(graph_.tensors.size(), false);
  for (int t : pinned_) keep_tensor[t] = true;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    if (removed_[n]) continue;
    for (const auto *ids : {&graph_.node_inputs[n], &graph_.node_outputs[n]})
      for (int t : *ids)
        if (t != kNoTensor) keep_tensor[t] = true;
  }
  Graph out;
  out.name = graph_.name;
  out.opset = graph_.opset;
  std::vector<int> remap(graph_.tensors.size(), kNoTensor);
  for (size_t t = 0; t < graph_.tensors.size(); ++t)
    if (keep_tensor[t]) remap[t] = out.add_tensor(graph_.tensors[t]);
  auto mapped = [&](const std::vector<int> &ids) {
    std::vector<int> r;
    r.reserve(ids.size());
    for (int t : ids) r.push_back(t == kNoTensor ? kNoTensor : remap[t]);
    return r;
  };
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    if (!removed_[n]) out.add_node(graph_.nodes[n], mapped(graph_.node_inputs[n]), mapped(graph_.node_outputs[n]));
  out.inputs = mapped(graph_.inputs);
  out.outputs = mapped(graph_.outputs);
  return out;
}

}  // namespace tessel
