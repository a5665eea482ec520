#include "runtime/graph_executor.h"

#include "graph/op_registry.h"
#include "graph/shape_inference.h"
#include "runtime/host_ops.h"
#include "runtime/kernel_cache.h"

namespace tessel {

const Tensor *Scope::find(const std::string &name) const {
  for (const Scope *s = this; s != nullptr; s = s->parent) {
    if (!s->graph) continue;
    int id = s->graph->find_tensor(name);
    if (id != kNoTensor && (*s->values)[id].defined()) return &(*s->values)[id];
  }
  return nullptr;
}

GraphExecutor::GraphExecutor(std::shared_ptr<const Graph> graph, Target target)
    : graph_(std::move(graph)), target_(std::move(target)), order_(graph_->topological_order()) {}

Result<void> GraphExecutor::check_inputs(const std::vector<Tensor> &inputs) const {
  const Graph &g = *graph_;
  if (inputs.size() != g.inputs.size()) {
    std::string names;
    for (int t : g.inputs) names += (names.empty() ? "" : ", ") + g.tensors[t].name;
    return make_error("the model takes " + std::to_string(g.inputs.size()) + " input(s) (" + names +
                      "), got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo &info = g.tensors[g.inputs[i]];
    const Tensor &given = inputs[i];
    if (info.type.dtype != DType::Undefined && given.dtype() != info.type.dtype)
      return make_error("input '" + info.name + "' must be " + dtype_name(info.type.dtype) + ", got " +
                        dtype_name(given.dtype()));
    if (!info.type.rank_known) continue;
    bool match = info.type.shape.size() == given.shape().size();
    for (size_t d = 0; match && d < given.shape().size(); ++d)
      match = info.type.shape[d] == kUnknownDim || info.type.shape[d] == given.shape()[d];
    if (!match)
      return make_error("input '" + info.name + "' must have shape " + shape_to_string(info.type.shape) +
                        ", got " + shape_to_string(given.shape()));
  }
  return {};
}

Result<std::vector<Tensor>> run_node(const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs,
                                     const std::vector<bool> &outputs_wanted, const Scope &scope,
                                     const Target &target) {
  const size_t num_outputs = outputs_wanted.size();
  HostOpContext host{node, opset, inputs, scope, target};
  if (node.op_type == "If") return run_if(host);
  if (node.op_type == "Loop") return run_loop(host);

  std::vector<TensorType> in_types;
  for (const Tensor *t : inputs) in_types.push_back(t ? t->type() : TensorType{});
  auto out_types = infer_node_types(node, opset, in_types, inputs, num_outputs);
  if (!out_types.ok()) return out_types.error();
  for (size_t i = 0; i < num_outputs; ++i)
    if (outputs_wanted[i] && !out_types.value()[i].fully_known())
      return make_error("node '" + node.name + "' (" + node.op_type + "): could not infer the shape of output " +
                        std::to_string(i));
  if (is_host_op(node.op_type)) return run_host_op(host, out_types.value());

  std::vector<Tensor> outputs;
  bool all_empty = true;
  for (const TensorType &t : out_types.value()) {
    outputs.emplace_back(t.fully_known() ? Tensor(t.dtype, t.shape) : Tensor());
    all_empty &= t.fully_known() && shape_numel(t.shape) == 0;
  }
  if (all_empty) return outputs;  // nothing to compute; the kernel skips empty outputs

  const OpSchema *schema = find_op_schema(node.op_type);
  std::vector<const Tensor *> baked(inputs.size(), nullptr);
  for (int v : schema->value_inputs)
    if (v < static_cast<int>(inputs.size())) baked[v] = inputs[v];
  auto kernel = get_or_compile_kernel(node, opset, in_types, baked, out_types.value(), target);
  if (!kernel.ok()) return kernel.error();
  auto ran = kernel->run(inputs, outputs);
  if (!ran.ok()) return make_error("node '" + node.name + "' (" + node.op_type + "): " + ran.error().message);
  return outputs;
}

Result<std::vector<Tensor>> GraphExecutor::run(const std::vector<Tensor> &inputs) const {
  if (auto ok = check_inputs(inputs); !ok.ok()) return ok.error();
  return run(inputs, nullptr);
}

Result<std::vector<Tensor>> GraphExecutor::run(const std::vector<Tensor> &inputs, const Scope *outer) const {
  const Graph &g = *graph_;
  if (inputs.size() != g.inputs.size())
    return make_error("graph '" + g.name + "' takes " + std::to_string(g.inputs.size()) + " inputs, got " +
                      std::to_string(inputs.size()));
  std::vector<Tensor> env(g.tensors.size());
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].constant && g.tensor_producer[t] < 0) env[t] = *g.tensors[t].constant;
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = inputs[i];
  Scope scope{&g, &env, outer};

  auto lookup = [&](int t) -> const Tensor * {
    if (env[t].defined()) return &env[t];
    return outer ? outer->find(g.tensors[t].name) : nullptr;
  };
  try {
    for (int n : order_) {
      std::vector<const Tensor *> node_inputs;
      for (int t : g.node_inputs[n]) {
        if (t == kNoTensor) { node_inputs.push_back(nullptr); continue; }
        const Tensor *value = lookup(t);
        if (!value)
          return make_error("node '" + g.nodes[n].name + "' (" + g.nodes[n].op_type + "): input '" +
                            g.tensors[t].name + "' has no value");
        node_inputs.push_back(value);
      }
      std::vector<bool> wanted;
      for (int t : g.node_outputs[n]) wanted.push_back(t != kNoTensor);
      auto outputs = run_node(g.nodes[n], g.opset, node_inputs, wanted, scope, target_);
      if (!outputs.ok()) return outputs.error();
      for (size_t i = 0; i < g.node_outputs[n].size() && i < outputs->size(); ++i)
        if (g.node_outputs[n][i] != kNoTensor) env[g.node_outputs[n][i]] = std::move((*outputs)[i]);
    }
  } catch (const std::exception &e) {
    return make_error(e.what());
  }
  std::vector<Tensor> results;
  for (int t : g.outputs) {
    const Tensor *value = lookup(t);
    if (!value) return make_error("graph output '" + g.tensors[t].name + "' was never computed");
    results.push_back(*value);
  }
  return results;
}

}  // namespace tessel
