#pragma once
// The graph optimizer's pass manager: runs graph-to-graph passes in a fixed order,
// re-inferring types after each one, and can print the graph after every pass or skip
// passes by name (for debugging a miscompile down to the pass that caused it).
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"
#include "graph/passes/fold_constants.h"

namespace tessel {

/// One graph-to-graph transformation. A pass may rewrite anything except the graph's
/// inputs and outputs, which keep their tensors, names and order.
struct GraphPass {
  std::string name;
  std::function<Result<Graph>(Graph)> run;
};

struct PassOptions {
  /// When set, the graph is printed here (print_graph) after every pass that ran.
  std::ostream *print_after_each = nullptr;
  /// Names of passes not to run; a name that matches no pass is an error (a typo would
  /// otherwise silently run the pass one meant to skip).
  std::set<std::string> skip;
};

/// Infers types, then runs the passes in order, re-inferring after each. Errors name the
/// pass; a pass that changes the graph's inputs or outputs is an error too.
Result<Graph> run_passes(Graph graph, const std::vector<GraphPass> &passes, const PassOptions &options = {});

/// The standard pipeline, in its fixed order: fold_constants, simplify_algebra,
/// eliminate_common_subexpressions, fold_batch_norm, fold_bias, prune_conv_taps, eliminate_dead_code.
/// Target-neutral: every pass keeps the ops' semantics and weight layouts.
std::vector<GraphPass> default_passes(const ConstantEvaluator &evaluate);

/// The kind of machine the kernels are compiled for, as far as passes care: weight layouts
/// that pay for one target's kernels may cost on another's.
enum class PassTarget { Cpu, Gpu };

/// Passes that rewrite weights and activations into the layout the target's kernels read best, run
/// after the default ones: pack_weights, winograd_conv, flatten_pointwise_conv, pad_conv_channels and
/// block_conv_weights for the CPU; none for the GPU yet.
std::vector<GraphPass> layout_passes(PassTarget target);

/// default_passes(evaluate) followed by layout_passes(target): what the tools run.
std::vector<GraphPass> default_passes(const ConstantEvaluator &evaluate, PassTarget target);

/// "fold_constants -> simplify_algebra -> ...": the order, for logs and --help texts.
std::string pass_order_text(const std::vector<GraphPass> &passes);

}  // namespace tessel
