#include <Halide.h>

#include "schedule/group_pipeline.h"

#include <map>
#include <set>

#include "schedule/default_schedule.h"
#include "schedule/node_pipeline_internal.h"
#include "schedule/op_compute.h"
#include "schedule/pipeline_layout.h"

namespace tessel {

GroupSignature group_interface(const Graph &g, const FusedGroup &group) {
  GroupSignature sig;
  std::set<int> members(group.nodes.begin(), group.nodes.end());
  std::set<int> produced, seen_inputs;
  for (int n : group.nodes) {
    for (int t : g.node_inputs[n])
      if (t != kNoTensor && !produced.count(t) && seen_inputs.insert(t).second) sig.inputs.push_back(t);
    for (int t : g.node_outputs[n])
      if (t != kNoTensor) produced.insert(t);
  }
  // A tensor leaves the group when a graph output, a node outside the group, or the body of
  // a node outside the group (by name) reads it.
  std::set<int> read_outside(g.outputs.begin(), g.outputs.end());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (members.count(static_cast<int>(n))) continue;
    for (int t : g.node_inputs[n])
      if (t != kNoTensor) read_outside.insert(t);
    for (const std::string &name : node_body_captures(g.nodes[n]))
      if (int t = g.find_tensor(name); t != kNoTensor) read_outside.insert(t);
  }
  for (int n : group.nodes)
    for (int t : g.node_outputs[n])
      if (t != kNoTensor && read_outside.count(t)) sig.outputs.push_back(t);
  return sig;
}

Result<std::shared_ptr<NodePipeline>> build_group_pipeline(const Graph &g, const FusedGroup &group,
                                                           const GroupSignature &sig) {
  const Node &first = g.nodes[group.nodes.front()];
  const std::string where = "fused group at node '" + first.name + "'";
  if (sig.outputs.empty()) return make_error(where + ": nothing reads the group's results");
  try {
    auto result = std::make_shared<NodePipeline>();
    std::map<int, TensorFunc> funcs;  // tensor id -> its Func in this pipeline
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      const int t = sig.inputs[i];
      const TensorType &type = sig.types.at(t);
      Halide::ImageParam param = make_dense_parameter(type, static_cast<int>(i));
      funcs[t] = TensorFunc{Halide::Func(param), type.dtype, type.shape};
      result->parameters.push_back(param);
    }

    // Member names become Func names; two members must never share one.
    std::set<std::string> used_names;
    for (int n : group.nodes) {
      Node node = g.nodes[n];
      if (!used_names.insert(halide_name(node.name)).second) {
        node.name += "_" + std::to_string(n);
        used_names.insert(halide_name(node.name));
      }
      const ComputeFn *rule = find_compute_rule(node.op_type);
      if (!rule) return make_error(where + ": no kernel for op " + node.op_type + " (node '" + node.name + "')");
      ComputeContext ctx{node, g.opset, {}, {}, {}};
      for (int t : g.node_inputs[n]) {
        if (t == kNoTensor) {
          ctx.inputs.emplace_back();
          ctx.values.push_back(nullptr);
          continue;
        }
        ctx.inputs.push_back(funcs.at(t));
        ctx.values.push_back(sig.values.size() > static_cast<size_t>(t) ? sig.values[t] : nullptr);
      }
      for (int t : g.node_outputs[n]) ctx.output_types.push_back(t == kNoTensor ? TensorType{} : sig.types.at(t));
      std::vector<TensorFunc> outputs = (*rule)(ctx);
      for (size_t i = 0; i < g.node_outputs[n].size() && i < outputs.size(); ++i) {
        const int t = g.node_outputs[n][i];
        if (t == kNoTensor || !outputs[i].defined()) continue;
        if (outputs[i].shape != sig.types.at(t).shape)
          return make_error(where + ": node '" + node.name + "' computes shape " + shape_to_string(outputs[i].shape) +
                            " but inference says " + shape_to_string(sig.types.at(t).shape));
        funcs[t] = outputs[i];
      }
    }

    std::set<int> output_set(sig.outputs.begin(), sig.outputs.end());
    // Producers stay inline in their consumers, except reductions: Halide cannot inline a
    // Func with update definitions, so those are computed once, at root.
    for (const auto &[t, f] : funcs)
      if (!output_set.count(t) && f.func.has_update_definition() && !f.func.function().schedule().compute_level().is_root())
        const_cast<Halide::Func &>(f.func).compute_root();

    std::vector<Halide::Func> pipeline_outputs;
    for (size_t i = 0; i < sig.outputs.size(); ++i) {
      auto it = funcs.find(sig.outputs[i]);
      if (it == funcs.end()) return make_error(where + ": output '" + g.tensors[sig.outputs[i]].name + "' is not computed");
      if (shape_numel(it->second.shape) == 0) return make_error(where + ": empty outputs run node by node");
      // Two outputs may be one Func (a rule may forward its input): copy the second, since
      // each pipeline output needs a Func of its own.
      TensorFunc out = it->second;
      for (const Halide::Func &f : pipeline_outputs)
        if (f.name() == out.func.name()) {
          out = define_tensor(out.func.name() + "_copy", out.dtype, out.shape,
                              [&](const std::vector<Halide::Expr> &index) { return it->second.at(index); });
          break;
        }
      apply_default_schedule(out);
      pin_dense_output_layout(out);
      pipeline_outputs.push_back(out.func);
      result->computed_outputs.push_back(static_cast<int>(i));
      result->output_types.push_back(sig.types.at(sig.outputs[i]));
    }
    result->pipeline = Halide::Pipeline(pipeline_outputs);
    record_used_parameters(*result);
    return result;
  } catch (const Halide::Error &e) {
    return make_error(where + ": Halide rejected the kernel: " + e.what());
  } catch (const std::exception &e) {
    return make_error(where + ": " + e.what());
  }
}

}  // namespace tessel
