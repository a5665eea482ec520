#include "graph/passes/fold_constants.h"

#include <algorithm>
#include <optional>

#include "graph/infer/shape_inference.h"
#include "graph/ir/graph_rewriter.h"

namespace tessel {

/// Outputs of Constant, Shape and Size, which need no evaluator: a Constant's attribute,
/// or the statically known shape of the input.
static std::optional<std::vector<Tensor>> value_without_evaluator(const Graph &g, int n) {
  const Node &node = g.nodes[n];
  if (node.op_type == "Constant") {
    auto value = constant_node_value(node);
    if (!value.ok()) return std::nullopt;
    return std::vector<Tensor>{value.value()};
  }
  if (node.op_type != "Shape" && node.op_type != "Size") return std::nullopt;
  if (g.node_inputs[n].empty() || g.node_inputs[n][0] == kNoTensor) return std::nullopt;
  const TensorType &in = g.tensors[g.node_inputs[n][0]].type;
  if (!in.fully_known()) return std::nullopt;
  if (node.op_type == "Size") return std::vector<Tensor>{Tensor::scalar(DType::Int64, shape_numel(in.shape))};
  return std::vector<Tensor>{shape_node_value(node, in.shape)};
}

/// Evaluates a node whose inputs are all constant, or nullopt when it should stay a node.
static std::optional<std::vector<Tensor>> value_from_evaluator(const Graph &g, int n,
                                                               const ConstantEvaluator &evaluate) {
  const Node &node = g.nodes[n];
  const std::vector<int> &ins = g.node_inputs[n];
  std::vector<TensorType> types;
  std::vector<const Tensor *> values;
  for (int t : ins) {
    const Tensor *value = t == kNoTensor ? nullptr : constant_value(g, t);
    if (t != kNoTensor && !value) return std::nullopt;
    types.push_back(value ? value->type() : TensorType{});
    values.push_back(value);
  }
  const size_t num_outputs = g.node_outputs[n].size();
  // Folded values live in the graph (and in every compiled artifact) for the model's
  // lifetime, while computing them costs one kernel run: a big generated tensor
  // (ConstantOfShape, Expand, Tile, Range of a large extent) costs far more memory than it
  // saves time, so only outputs whose size is known and small are folded.
  auto out_types = infer_node_types(node, g.opset, types, values, num_outputs);
  if (!out_types.ok()) return std::nullopt;
  size_t bytes = 0;
  for (size_t i = 0; i < num_outputs; ++i) {
    const TensorType &t = out_types.value()[i];
    if (!t.fully_known()) return std::nullopt;
    bytes += static_cast<size_t>(shape_numel(t.shape)) * dtype_size(t.dtype);
  }
  if (bytes > kMaxFoldedBytes) return std::nullopt;
  auto computed = evaluate(node, g.opset, values, num_outputs);
  // A node the evaluator cannot run stays, so the runtime reports the failure with context.
  if (!computed.ok() || computed->size() < num_outputs) return std::nullopt;
  return std::move(computed.value());
}

/// Dimensions of `type` that are known; -1 when even its rank is not.
static int known_dims(const TensorType &type) {
  if (!type.rank_known) return -1;
  int known = 0;
  for (int64_t d : type.shape) known += d != kUnknownDim;
  return known;
}

/// Infers again the output types of a node that stays, now that folds upstream may have
/// made its shape-like inputs constant: a static model's shapes become known in the same
/// walk, so a later Shape of them folds too (PyTorch's MultiheadAttention slices its
/// packed projection by sizes computed from a Shape, layer after layer).
static void refine_output_types(GraphRewriter &rewriter, int n) {
  const Graph &g = rewriter.graph();
  bool all_known = true;
  for (int t : g.node_outputs[n]) all_known &= t == kNoTensor || g.tensors[t].type.fully_known();
  if (all_known) return;
  std::vector<TensorType> types;
  std::vector<const Tensor *> values;
  for (int t : g.node_inputs[n]) {
    types.push_back(t == kNoTensor ? TensorType{} : g.tensors[t].type);
    values.push_back(t == kNoTensor ? nullptr : constant_value(g, t));
  }
  auto inferred = infer_node_types(g.nodes[n], g.opset, types, values, g.node_outputs[n].size());
  if (!inferred.ok()) return;  // the runtime reports it with real values
  const std::vector<int> outs = g.node_outputs[n];
  for (size_t i = 0; i < outs.size() && i < inferred->size(); ++i) {
    const TensorType &better = inferred.value()[i];
    if (outs[i] == kNoTensor || !better.rank_known || better.dtype == DType::Undefined) continue;
    TensorType &current = rewriter.tensor(outs[i]).type;
    if (known_dims(better) >= known_dims(current)) current = better;
  }
}

Result<Graph> fold_constants(Graph graph, const ConstantEvaluator &evaluate) {
  return guarded([&]() -> Graph {
    GraphRewriter rewriter(std::move(graph));
    const Graph &g = rewriter.graph();
    for (int n : rewriter.order()) {
      const Node &node = g.nodes[n];
      // Bodies read enclosing values by name and random ops must differ per run: neither folds.
      if (!node.domain.empty() || node_has_subgraph(node) || is_nondeterministic_op(node.op_type)) continue;
      std::optional<std::vector<Tensor>> outputs = value_without_evaluator(g, n);
      if (!outputs && evaluate) outputs = value_from_evaluator(g, n, evaluate);
      if (!outputs) {
        refine_output_types(rewriter, n);
        continue;
      }
      const std::vector<int> outs = g.node_outputs[n];
      bool all_defined = true;
      for (size_t i = 0; i < outs.size(); ++i)
        all_defined &= outs[i] == kNoTensor || (i < outputs->size() && (*outputs)[i].defined());
      if (!all_defined) continue;
      rewriter.remove_node(n);
      for (size_t i = 0; i < outs.size(); ++i) {
        if (outs[i] == kNoTensor) continue;
        TensorInfo &info = rewriter.tensor(outs[i]);
        info.type = (*outputs)[i].type();
        info.constant = (*outputs)[i];
      }
    }
    return rewriter.finish();
  });
}

}  // namespace tessel
