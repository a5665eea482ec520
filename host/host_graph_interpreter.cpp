#include "host/host_graph_interpreter.h"

#include <algorithm>

#include "graph/infer/shape_inference.h"
#include "host/host_control_flow.h"
#include "host/host_op.h"

namespace tessel {

const Tensor *HostScope::find(const std::string &name) const {
  for (const HostScope *s = this; s; s = s->parent)
    if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
  return nullptr;
}

namespace {

bool body_runs_on_host(const Graph &body, std::vector<std::string> *missing) {
  bool all = true;
  for (const Node &n : body.nodes) all &= can_run_on_host(n, missing);
  return all;
}

/// Bodies run here too, seeing the enclosing values through `scope`.
BodyRunner host_body_runner(int64_t opset, const HostScope &scope) {
  return [opset, &scope](const std::shared_ptr<const Graph> &body, const std::vector<Tensor> &inputs) {
    return run_graph_on_host(*body, opset, inputs, scope);
  };
}

}  // namespace

bool can_run_on_host(const Node &node, std::vector<std::string> *missing) {
  bool ok = node.op_type == "Constant" || (node.domain.empty() && has_host_implementation(node.op_type));
  if (node.op_type == "If" || node.op_type == "Loop") {
    ok = true;
    for (const char *branch : {"then_branch", "else_branch", "body"})
      if (node.attributes.has(branch)) ok &= body_runs_on_host(*node.attributes.get_graph(branch), missing);
  }
  if (!ok && missing && std::find(missing->begin(), missing->end(), node.op_type) == missing->end())
    missing->push_back(node.op_type);
  return ok;
}

Result<std::vector<Tensor>> run_node_on_host(const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs,
                                             size_t num_outputs, const HostScope &scope) {
  if (node.op_type == "If") return run_if_node(node, inputs, host_body_runner(opset, scope));
  if (node.op_type == "Loop") return run_loop_node(node, inputs, host_body_runner(opset, scope));
  if (node.op_type == "Constant") {
    auto value = constant_node_value(node);
    if (!value.ok()) return value.error();
    return std::vector<Tensor>{value.value()};
  }
  std::vector<TensorType> input_types;
  for (const Tensor *t : inputs) input_types.push_back(t ? t->type() : TensorType{});
  auto types = infer_node_types(node, opset, input_types, inputs, num_outputs);
  if (!types.ok())
    return make_error(types.error().kind, "node '" + node.name + "' (" + node.op_type + "): " + types.error().message);
  return evaluate_host_op(HostCall{node, opset, inputs, types.value()});
}

Result<std::vector<Tensor>> run_graph_on_host(const Graph &graph, int64_t opset, const std::vector<Tensor> &inputs,
                                              const HostScope &scope) {
  if (inputs.size() != graph.inputs.size())
    return make_error(ErrorKind::InvalidInput, "graph '" + graph.name + "' takes " +
                                                   std::to_string(graph.inputs.size()) + " inputs, got " +
                                                   std::to_string(inputs.size()));
  // Every value this graph defines, by name, so that nested bodies see them too.
  HostScope values;
  values.parent = &scope;
  for (size_t i = 0; i < inputs.size(); ++i) values.values[graph.tensors[graph.inputs[i]].name] = inputs[i];
  for (size_t t = 0; t < graph.tensors.size(); ++t)
    if (graph.tensors[t].constant && graph.tensor_producer[t] < 0)
      values.values[graph.tensors[t].name] = *graph.tensors[t].constant;
  auto value_of = [&](int t) { return t == kNoTensor ? nullptr : values.find(graph.tensors[t].name); };
  for (int n : graph.topological_order()) {
    std::vector<const Tensor *> node_inputs;
    for (int t : graph.node_inputs[n]) {
      const Tensor *v = value_of(t);
      if (t != kNoTensor && !v)
        return make_error(ErrorKind::InvalidInput, "graph '" + graph.name + "': node '" + graph.nodes[n].name +
                                                       "' reads '" + graph.tensors[t].name + "', which nothing defines");
      node_inputs.push_back(v);
    }
    auto outputs = run_node_on_host(graph.nodes[n], opset, node_inputs, graph.node_outputs[n].size(), values);
    if (!outputs.ok()) return outputs.error();
    for (size_t o = 0; o < graph.node_outputs[n].size() && o < outputs->size(); ++o)
      if (graph.node_outputs[n][o] != kNoTensor)
        values.values[graph.tensors[graph.node_outputs[n][o]].name] = (*outputs)[o];
  }
  std::vector<Tensor> outputs;
  for (int t : graph.outputs) {
    const Tensor *v = value_of(t);
    if (!v) return make_error(ErrorKind::InvalidInput, "graph '" + graph.name + "': output '" + graph.tensors[t].name + "' is never computed");
    outputs.push_back(*v);
  }
  return outputs;
}

}  // namespace tessel
