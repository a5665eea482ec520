#include "graph/onnx/node_emitter.h"

#include "graph/infer/shape_inference.h"

namespace tessel {

int NodeEmitter::op(const std::string &type, std::vector<int> inputs, Attributes attributes, int out) {
  const std::string name = prefix_ + "/" + type + "_" + std::to_string(count_++);
  if (out == kNoTensor) out = rewriter_.add_tensor(name + "_output", TensorType{});
  rewriter_.add_node(Node{type, name, "", std::move(attributes)}, std::move(inputs), {out});
  return out;
}

int NodeEmitter::shape(const std::vector<int64_t> &dims) {
  auto [it, added] = shapes_.try_emplace(dims, kNoTensor);
  if (added)
    it->second =
        rewriter_.add_constant(prefix_ + "/shape", Tensor::from_int64s(dims, {static_cast<int64_t>(dims.size())}));
  return it->second;
}

int NodeEmitter::index(int64_t i) {
  auto [it, added] = indices_.try_emplace(i, kNoTensor);
  if (added) it->second = rewriter_.add_constant(prefix_ + "/index", Tensor::scalar(DType::Int64, i));
  return it->second;
}

int NodeEmitter::value(double v) {
  auto [it, added] = values_.try_emplace(v, kNoTensor);
  if (added) it->second = rewriter_.add_constant(prefix_ + "/value", Tensor::scalar(dtype_, v));
  return it->second;
}

int NodeEmitter::scalar(DType dtype, double v) { return rewriter_.add_constant(prefix_ + "/value", Tensor::scalar(dtype, v)); }

int NodeEmitter::zeros(const Shape &dims) { return rewriter_.add_constant(prefix_ + "/zeros", Tensor(dtype_, dims)); }

std::function<bool(const Node &)> default_domain(bool (*is_op)(const std::string &)) {
  return [is_op](const Node &node) { return node.domain.empty() && is_op(node.op_type); };
}

Result<Graph> expand_nodes(Graph graph, const std::function<bool(const Node &)> &wanted, const ExpandNode &expand,
                           TypesNeeded types) {
  std::vector<int> picked;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (wanted(graph.nodes[n])) picked.push_back(static_cast<int>(n));
  if (picked.empty()) return graph;
  auto typed = types == TypesNeeded::Yes ? infer_shapes(graph) : Result<Graph>(graph);
  if (!typed.ok()) return graph;
  return guarded([&]() -> Graph {
    GraphRewriter rewriter(std::move(graph));
    for (int n : picked) {
      const Node node = rewriter.graph().nodes[n];
      if (auto expanded = expand(rewriter, typed.value(), n); !expanded.ok())
        throw TesselException("node '" + node.name + "' (" + node.op_type + "): " + expanded.error().message);
    }
    return rewriter.finish();
  });
}

int NodeEmitter::cast(int x, DType to, int out) {
  // DType values are ONNX TensorProto codes.
  return op("Cast", {x}, with("to", static_cast<int64_t>(to)), out);
}

}  // namespace tessel
