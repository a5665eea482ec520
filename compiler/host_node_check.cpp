// The artifact compiler's first pass: the deploy runtime runs kernels, views and copies, so
// a live node it cannot run (control flow, TopK, shape queries left after folding) is an
// error listing every such node, before anything is compiled.
#include "compiler/artifact_build.h"

namespace tessel {

std::vector<int> tensor_uses(const Graph &graph) {
  std::vector<int> uses(graph.tensors.size(), 0);
  for (const auto &inputs : graph.node_inputs)
    for (int t : inputs)
      if (t != kNoTensor) ++uses[t];
  for (int t : graph.outputs) ++uses[t];
  return uses;
}

namespace {
/// A host node whose outputs something reads and that is not a plain view (Dropout's mask
/// is a second output a view cannot give).
bool needs_host_support(const Graph &g, const std::vector<int> &uses, int n) {
  if (!runs_on_host(g.nodes[n].op_type)) return false;
  bool used = false;
  for (int t : g.node_outputs[n]) used |= t != kNoTensor && uses[t] > 0;
  if (!used) return false;
  bool extra_outputs = false;
  for (size_t i = 1; i < g.node_outputs[n].size(); ++i)
    extra_outputs |= g.node_outputs[n][i] != kNoTensor && uses[g.node_outputs[n][i]] > 0;
  return !is_view_op(g.nodes[n].op_type) || extra_outputs;
}
}  // namespace

Result<void> check_host_nodes(const Graph &graph) {
  const std::vector<int> uses = tensor_uses(graph);
  std::vector<std::string> unsupported;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (needs_host_support(graph, uses, static_cast<int>(n)))
      unsupported.push_back("'" + graph.nodes[n].name + "' (" + graph.nodes[n].op_type + ")");
  if (unsupported.empty()) return {};
  std::string list;
  for (const std::string &u : unsupported) list += (list.empty() ? "" : ", ") + u;
  return make_error(ErrorKind::Unsupported,
                    "the deploy runtime cannot run " + std::to_string(unsupported.size()) +
                    " node(s) of this model yet (control flow, TopK and shape queries that depend on run-time "
                    "values): " + list);
}

}  // namespace tessel
