#include "graph/ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "base/result.h"

namespace tessel {

int Graph::add_tensor(TensorInfo info) {
  tensors.push_back(std::move(info));
  tensor_producer.push_back(-1);
  return static_cast<int>(tensors.size()) - 1;
}

int Graph::add_node(Node node, std::vector<int> input_ids, std::vector<int> output_ids) {
  const int id = static_cast<int>(nodes.size());
  for (int t : output_ids)
    if (t != kNoTensor) tensor_producer[t] = id;
  nodes.push_back(std::move(node));
  node_inputs.push_back(std::move(input_ids));
  node_outputs.push_back(std::move(output_ids));
  return id;
}

int Graph::find_tensor(const std::string &tensor_name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == tensor_name) return static_cast<int>(i);
  return kNoTensor;
}

std::vector<int> Graph::topological_order() const {
  // Kahn's algorithm, taking ready nodes in file order so the result is stable.
  const int n = static_cast<int>(nodes.size());
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> readers = consumers();
  for (int i = 0; i < n; ++i) {
    std::set<int> producers;
    for (int t : node_inputs[i])
      if (t != kNoTensor && tensor_producer[t] >= 0) producers.insert(tensor_producer[t]);
    pending[i] = static_cast<int>(producers.size());
  }
  std::set<int> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int node = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(node);
    std::set<int> released;
    for (int t : node_outputs[node])
      if (t != kNoTensor)
        for (int c : readers[t]) released.insert(c);
    for (int c : released)
      if (--pending[c] == 0) ready.insert(c);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        throw TesselException("graph has a cycle through node '" + nodes[i].name + "' (" +
                              nodes[i].op_type + ")");
  }
  return order;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> readers(tensors.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int t : node_inputs[i])
      if (t != kNoTensor &&
          (readers[t].empty() || readers[t].back() != static_cast<int>(i)))
        readers[t].push_back(static_cast<int>(i));
  }
  return readers;
}

std::vector<std::string> Graph::outer_scope_names() const {
  std::set<int> fed(inputs.begin(), inputs.end());
  std::set<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensor_producer[i] < 0 && !fed.count(static_cast<int>(i)) && !tensors[i].constant)
      names.insert(tensors[i].name);
  }
  // Names that nested bodies capture and this graph does not define are captured too.
  std::set<std::string> defined;
  for (const TensorInfo &t : tensors) defined.insert(t.name);
  for (const Node &node : nodes)
    for (const std::string &captured : node_body_captures(node))
      if (!defined.count(captured)) names.insert(captured);
  std::vector<std::string> result(names.begin(), names.end());
  return result;
}

void Graph::replace_uses(int old_tensor, int new_tensor) {
  for (auto &ins : node_inputs)
    std::replace(ins.begin(), ins.end(), old_tensor, new_tensor);
  std::replace(outputs.begin(), outputs.end(), old_tensor, new_tensor);
}

std::vector<std::string> node_body_captures(const Node &node) {
  std::vector<std::string> names;
  for (const auto &[attr_name, value] : node.attributes.all()) {
    std::vector<std::shared_ptr<const Graph>> bodies;
    if (auto g = std::get_if<std::shared_ptr<const Graph>>(&value)) bodies.push_back(*g);
    if (auto gs = std::get_if<std::vector<std::shared_ptr<const Graph>>>(&value))
      bodies.insert(bodies.end(), gs->begin(), gs->end());
    for (const auto &body : bodies)
      for (const std::string &captured : body->outer_scope_names()) names.push_back(captured);
  }
  return names;
}

Graph Graph::without_dead_nodes() const {
  // Mark live tensors backwards from the outputs, then rebuild with fresh ids.
  std::vector<bool> live_node(nodes.size(), false), live_tensor(tensors.size(), false);
  std::vector<int> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    int t = stack.back();
    stack.pop_back();
    if (t == kNoTensor || live_tensor[t]) continue;
    live_tensor[t] = true;
    int p = tensor_producer[t];
    if (p >= 0 && !live_node[p]) {
      live_node[p] = true;
      for (int in : node_inputs[p]) stack.push_back(in);
      // If/Loop bodies read enclosing values by name, not through node inputs.
      for (const std::string &name : node_body_captures(nodes[p])) stack.push_back(find_tensor(name));
    }
  }
  // Graph inputs always stay (the caller feeds them).
  for (int t : inputs) live_tensor[t] = true;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (live_node[n])
      for (int t : node_outputs[n])
        if (t != kNoTensor) live_tensor[t] = true;

  Graph out;
  out.name = name;
  out.opset = opset;
  std::vector<int> remap(tensors.size(), kNoTensor);
  for (size_t t = 0; t < tensors.size(); ++t)
    if (live_tensor[t]) remap[t] = out.add_tensor(tensors[t]);
  auto mapped = [&](const std::vector<int> &ids) {
    std::vector<int> r;
    for (int t : ids) r.push_back(t == kNoTensor ? kNoTensor : remap[t]);
    return r;
  };
  for (size_t n = 0; n < nodes.size(); ++n)
    if (live_node[n]) out.add_node(nodes[n], mapped(node_inputs[n]), mapped(node_outputs[n]));
  out.inputs = mapped(inputs);
  out.outputs = mapped(outputs);
  return out;
}

}  // namespace tessel
