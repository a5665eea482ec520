#include "graph/passes/pass_manager.h"

#include "graph/infer/shape_inference.h"
#include "graph/passes/block_conv_weights.h"
#include "graph/passes/block_nhwc_conv_weights.h"
#include "graph/passes/channels_last_conv.h"
#include "graph/passes/eliminate_common_subexpressions.h"
#include "graph/passes/eliminate_dead_code.h"
#include "graph/passes/flatten_pointwise_conv.h"
#include "graph/passes/fold_batch_norm.h"
#include "graph/passes/fold_bias.h"
#include "graph/passes/prune_conv_taps.h"
#include "graph/passes/pack_weights.h"
#include "graph/passes/pad_conv_channels.h"
#include "graph/passes/panel_matmul_weights.h"
#include "graph/passes/simplify_algebra.h"
#include "graph/passes/winograd_conv.h"

namespace tessel {

/// Names of the graph's inputs and outputs, in order: what no pass may change.
static std::vector<std::string> interface_names(const Graph &g) {
  std::vector<std::string> names;
  for (int t : g.inputs) names.push_back("in:" + g.tensors[t].name);
  for (int t : g.outputs) names.push_back("out:" + g.tensors[t].name);
  return names;
}

std::string pass_order_text(const std::vector<GraphPass> &passes) {
  std::string text;
  for (const GraphPass &p : passes) text += (text.empty() ? "" : " -> ") + p.name;
  return text;
}

Result<Graph> run_passes(Graph graph, const std::vector<GraphPass> &passes, const PassOptions &options) {
  for (const std::string &name : options.skip) {
    bool known = false;
    for (const GraphPass &p : passes) known |= p.name == name;
    if (!known)
      return make_error(ErrorKind::InvalidInput,
                        "cannot skip pass '" + name + "': no such pass (passes: " + pass_order_text(passes) + ")");
  }
  // Passes read types (shapes decide whether a Reshape is a no-op), so they start inferred.
  auto inferred = infer_shapes(std::move(graph));
  if (!inferred.ok()) return make_error(inferred.error().kind, "before the graph passes: " + inferred.error().message);
  Graph current = std::move(inferred.value());
  const std::vector<std::string> interface = interface_names(current);
  for (const GraphPass &pass : passes) {
    if (options.skip.count(pass.name)) continue;
    std::optional<Result<Graph>> result;
    try {
      result.emplace(pass.run(std::move(current)));
    } catch (const std::exception &e) {
      return make_error("graph pass " + pass.name + ": " + e.what());
    }
    if (!result->ok())
      return make_error(result->error().kind, "graph pass " + pass.name + ": " + result->error().message);
    if (interface_names(result->value()) != interface)
      return make_error(ErrorKind::Internal, "graph pass " + pass.name + " changed the graph's inputs or outputs");
    // Rewritten nodes (a Gemm for a MatMul, a merged Reshape) need their types again.
    auto reinferred = infer_shapes(std::move(result->value()));
    if (!reinferred.ok())
      return make_error(ErrorKind::Internal, "after graph pass " + pass.name + ": " + reinferred.error().message);
    current = std::move(reinferred.value());
    if (options.print_after_each)
      *options.print_after_each << "--- after " << pass.name << " (" << current.nodes.size() << " nodes) ---\n"
                                << print_graph(current);
  }
  return current;
}

std::vector<GraphPass> default_passes(const ConstantEvaluator &evaluate) {
  // Folding first: it turns Constant nodes and shape chains into the constants the other
  // passes look for. Simplification then removes no-op views before CSE compares nodes, BN
  // folding precedes bias folding (a folded BN leaves the conv with a bias an Add can join),
  // and dead code goes last, collecting what the others left unread.
  return {
      {"fold_constants", [evaluate](Graph g) { return fold_constants(std::move(g), evaluate); }},
      {"simplify_algebra", simplify_algebra},
      {"eliminate_common_subexpressions", eliminate_common_subexpressions},
      {"fold_batch_norm", fold_batch_norm},
      {"fold_bias", fold_bias},
      {"prune_conv_taps", prune_conv_taps},
      {"eliminate_dead_code", eliminate_dead_code},
  };
}

std::vector<GraphPass> layout_passes(PassTarget target) {
  if (target == PassTarget::Cpu)
    return {{"channels_last_conv", channels_last_conv},
            {"pack_weights", pack_weights},
            {"panel_matmul_weights", panel_matmul_weights},
            {"winograd_conv", winograd_conv},
            {"flatten_pointwise_conv", flatten_pointwise_conv},
            {"pad_conv_channels", pad_conv_channels},
            {"block_conv_weights", block_conv_weights},
            {"block_nhwc_conv_weights", block_nhwc_conv_weights}};
  return {};
}

std::vector<GraphPass> default_passes(const ConstantEvaluator &evaluate, PassTarget target) {
  std::vector<GraphPass> passes = default_passes(evaluate);
  for (GraphPass &p : layout_passes(target)) passes.push_back(std::move(p));
  return passes;
}

}  // namespace tessel
