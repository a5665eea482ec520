// The artifact compiler's host steps: nodes the deploy runtime computes by plain C++
// (host/host_op.h) because their shapes are known only at run time (downstream of NonZero,
// TopK with a computed k, If) or because they are host ops (TopK, NonMaxSuppression,
// RoiAlign). Everything else stays a compiled kernel.
#include "compiler/artifact_build.h"
#include "host/host_graph_interpreter.h"

namespace tessel {

std::vector<int> tensor_uses(const Graph &graph) {
  std::vector<int> uses(graph.tensors.size(), 0);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int t : graph.node_inputs[n])
      if (t != kNoTensor) ++uses[t];
    // An If or Loop body reads enclosing values by name.
    for (const std::string &name : node_body_captures(graph.nodes[n]))
      if (const int t = graph.find_tensor(name); t != kNoTensor) ++uses[t];
  }
  for (int t : graph.outputs) ++uses[t];
  return uses;
}

namespace {

bool any_output_used(const Graph &g, const std::vector<int> &uses, int n) {
  for (int t : g.node_outputs[n])
    if (t != kNoTensor && uses[t] > 0) return true;
  return false;
}

/// A host op whose outputs something reads and that is not a plain view (Dropout's mask
/// is a second output a view cannot give), or a node touching a run-time shape.
/// (A dead node touching a run-time shape is marked too: no kernel could be built for it, and
/// emit_host_group drops it.)
bool needs_host_step(const Graph &g, const std::vector<int> &uses, int n) {
  for (const std::vector<int> *list : {&g.node_inputs[n], &g.node_outputs[n]})
    for (int t : *list)
      if (t != kNoTensor && !g.tensors[t].type.fully_known()) return true;
  if (!any_output_used(g, uses, n) || !runs_on_host(g.nodes[n].op_type)) return false;
  bool extra_outputs = false;
  for (size_t i = 1; i < g.node_outputs[n].size(); ++i)
    extra_outputs |= g.node_outputs[n][i] != kNoTensor && uses[g.node_outputs[n][i]] > 0;
  return !is_view_op(g.nodes[n].op_type) || extra_outputs;
}

/// A host Gemm whose B is a constant read transposed (a fully connected layer, transB=1)
/// gets B transposed once here, so each run reads it row by row instead of transposing
/// panels of it (Faster R-CNN's box head: 12544 x 1024). Returns the plan id of the upright
/// weight, or -1 where the node keeps its B. Called before B is declared, so weights.bin
/// holds B only if something else reads it.
int upright_constant_gemm_weight(ArtifactBuild &build, const Graph &g, int n, Node &node) {
  if (node.op_type != "Gemm" || node.attributes.get_int("transB", 0) == 0 || g.node_inputs[n].size() < 2) return -1;
  const int b = g.node_inputs[n][1];
  if (!g.is_constant(b) || g.tensors[b].constant->rank() != 2) return -1;
  node.attributes.set("transB", int64_t{0});
  return build.plan.extra_weight(g.tensors[b].name + ".upright", g.tensors[b].constant->permuted({1, 0}));
}

}  // namespace

std::vector<bool> host_step_groups(const Graph &graph, const std::vector<FusedGroup> &groups,
                                   const std::vector<int> &uses) {
  std::vector<bool> host(groups.size(), false);
  for (size_t i = 0; i < groups.size(); ++i)
    for (int n : groups[i].nodes) host[i] = host[i] || needs_host_step(graph, uses, n);
  return host;
}

Result<void> check_host_steps(const ArtifactBuild &build) {
  std::vector<std::string> missing, nodes;
  bool any = false;
  for (size_t i = 0; i < build.groups.size(); ++i) {
    if (!build.host_group[i]) continue;
    for (int n : build.groups[i].nodes) {
      if (!any_output_used(build.graph, build.uses, n)) continue;
      any = true;
      std::vector<std::string> ops;
      for (int t : build.graph.node_outputs[n])
        if (t != kNoTensor && build.uses[t] > 0 && build.graph.tensors[t].type.dtype == DType::Undefined)
          return make_error(ErrorKind::Unsupported, "the element type of '" + build.graph.tensors[t].name +
                                                        "' (output of '" + build.graph.nodes[n].name +
                                                        "') is not known before a run; an artifact needs it");
      if (!can_run_on_host(build.graph.nodes[n], &ops)) {
        for (const std::string &op : ops)
          if (std::find(missing.begin(), missing.end(), op) == missing.end()) missing.push_back(op);
        if (nodes.size() < 8) nodes.push_back("'" + build.graph.nodes[n].name + "'");
      }
    }
  }
  if (any && build.target.kind == Target::Kind::Cuda)
    return make_error(ErrorKind::Unsupported,
                      "this model has nodes whose shapes are known only at run time (or host ops such as TopK); "
                      "artifacts run those on the host, which cuda artifacts do not do yet");
  if (missing.empty()) return {};
  std::string ops, names;
  for (const std::string &op : missing) ops += (ops.empty() ? "" : ", ") + op;
  for (const std::string &n : nodes) names += (names.empty() ? "" : ", ") + n;
  return make_error(ErrorKind::Unsupported,
                    "the deploy runtime runs these nodes on the host (host ops, or shapes only a run decides) "
                    "and has no host implementation of " + ops + " (nodes " + names + ")");
}

Result<void> emit_host_group(ArtifactBuild &build, const FusedGroup &group) {
  const Graph &g = build.graph;
  for (int n : group.nodes) {
    if (!any_output_used(g, build.uses, n)) continue;
    deploy::HostNode host{g.nodes[n], node_body_captures(g.nodes[n])};
    std::vector<int> inputs = g.node_inputs[n], outputs;
    for (const std::string &name : host.captures) {
      const int t = g.find_tensor(name);
      if (t == kNoTensor)
        return make_error(ErrorKind::Unsupported, "node '" + g.nodes[n].name + "' reads '" + name +
                                                      "' from an enclosing graph that is not the model's");
      inputs.push_back(t);
    }
    for (int t : g.node_outputs[n]) outputs.push_back(t != kNoTensor && build.uses[t] > 0 ? t : kNoTensor);
    const int upright_b = upright_constant_gemm_weight(build, g, n, host.node);
    std::vector<int> plan_inputs, plan_outputs;
    for (size_t i = 0; i < inputs.size(); ++i)
      plan_inputs.push_back(i == 1 && upright_b >= 0 ? upright_b
                            : inputs[i] == kNoTensor ? -1 : build.plan.tensor(inputs[i]));
    for (int t : outputs) plan_outputs.push_back(t == kNoTensor ? -1 : build.plan.tensor(t));
    build.plan.host(static_cast<int>(build.host_program.nodes.size()), plan_inputs, plan_outputs);
    build.host_program.nodes.push_back(std::move(host));
    ++build.summary.host_steps;
  }
  return {};
}

}  // namespace tessel
