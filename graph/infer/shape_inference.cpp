#include "graph/infer/shape_inference.h"

#include <map>
#include <set>

#include "graph/ir/op_registry.h"

namespace tessel {

/// Outputs of a node whose shapes only a run can tell: dtypes from the op's output_dtype
/// rule, or else the first data input's dtype.
static std::vector<TensorType> unknown_shape_outputs(const OpSchema &schema, const InferenceContext &ctx) {
  DType guess = DType::Undefined;
  for (size_t i = 0; i < ctx.input_types.size(); ++i) {
    bool is_value_input = false;
    for (int v : schema.value_inputs) is_value_input |= static_cast<int>(i) == v;
    if (!is_value_input && ctx.input_types[i].dtype != DType::Undefined) { guess = ctx.input_types[i].dtype; break; }
  }
  std::vector<TensorType> out(ctx.num_outputs, TensorType{guess, {}, false});
  if (!schema.output_dtype) return out;
  try {
    for (size_t i = 0; i < out.size(); ++i) out[i].dtype = schema.output_dtype(ctx, i);
  } catch (const std::exception &) {
    // An input the rule reads is missing: the op's own check reports it once shapes are known.
  }
  return out;
}

Result<std::vector<TensorType>> infer_node_types(const Node &node, int64_t opset,
                                                 const std::vector<TensorType> &input_types,
                                                 const std::vector<const Tensor *> &input_values,
                                                 size_t num_outputs) {
  const OpSchema *schema = node.domain.empty() ? find_op_schema(node.op_type) : nullptr;
  if (!schema)
    return make_error(ErrorKind::Unsupported, "node '" + node.name + "': unsupported op " +
                                              (node.domain.empty() ? "" : node.domain + ".") + node.op_type);
  InferenceContext ctx{node, opset, input_types, input_values, num_outputs};
  try {
    std::vector<TensorType> out = schema->infer(ctx);
    if (out.size() < num_outputs) out.resize(num_outputs);
    return out;
  } catch (const UnknownValue &) {
    // A needed value (a shape, axes, repeats ...) is only known at run time: the outputs'
    // shapes are unknown, their dtypes are not.
    return unknown_shape_outputs(*schema, ctx);
  } catch (const std::exception &e) {
    return make_error(ErrorKind::InvalidInput, e.what());
  }
}

static void collect_unsupported(const Graph &graph, std::map<std::string, std::vector<std::string>> &found) {
  for (const Node &node : graph.nodes) {
    const bool known = node.domain.empty() && find_op_schema(node.op_type) != nullptr;
    if (!known) found[(node.domain.empty() ? "" : node.domain + ".") + node.op_type].push_back(node.name);
    for (const auto &[name, value] : node.attributes.all()) {
      if (auto g = std::get_if<std::shared_ptr<const Graph>>(&value)) collect_unsupported(**g, found);
      if (auto gs = std::get_if<std::vector<std::shared_ptr<const Graph>>>(&value))
        for (const auto &g : *gs) collect_unsupported(*g, found);
    }
  }
}

Result<void> check_supported_ops(const Graph &graph) {
  std::map<std::string, std::vector<std::string>> found;
  collect_unsupported(graph, found);
  // Model inputs and outputs of a type tessel cannot hold (bfloat16, string) count too.
  for (const std::vector<int> *list : {&graph.inputs, &graph.outputs})
    for (int t : *list) {
      const DType d = graph.tensors[t].type.dtype;
      if (d != DType::Undefined && !dtype_is_supported(d))
        found["type " + dtype_name(d)].push_back(graph.tensors[t].name);
    }
  if (found.empty()) return {};
  std::string msg = "unsupported ops: ";
  bool first = true;
  for (const auto &[op, nodes] : found) {
    msg += (first ? "" : "; ") + op + " (";
    first = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i == 8) { msg += ", ... " + std::to_string(nodes.size() - 8) + " more"; break; }
      msg += (i ? ", " : "") + nodes[i];
    }
    msg += ")";
  }
  return make_error(ErrorKind::Unsupported, msg);
}

Result<Tensor> constant_node_value(const Node &node) {
  const Attributes &a = node.attributes;
  try {
    if (a.has("value")) return a.get_tensor("value");
    if (a.has("value_float")) return Tensor::scalar(DType::Float32, a.get_float("value_float", 0));
    if (a.has("value_int")) return Tensor::scalar(DType::Int64, a.get_int("value_int"));
    if (a.has("value_floats")) {
      auto v = a.get_floats("value_floats");
      Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
      for (size_t i = 0; i < v.size(); ++i) t.data_as<float>()[i] = v[i];
      return t;
    }
    if (a.has("value_ints")) {
      auto v = a.get_ints("value_ints");
      return Tensor::from_int64s(v, {static_cast<int64_t>(v.size())});
    }
  } catch (const std::exception &e) {
    return make_error(ErrorKind::InvalidInput, "node '" + node.name + "' (Constant): " + e.what());
  }
  return make_error(ErrorKind::Unsupported,
                    "node '" + node.name + "' (Constant): no supported value attribute (sparse and string constants are not supported)");
}

Tensor shape_node_value(const Node &node, const Shape &input_shape) {
  const int64_t rank = static_cast<int64_t>(input_shape.size());
  int64_t start = node.attributes.get_int("start", 0), end = node.attributes.get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(input_shape.begin() + start, input_shape.begin() + end);
  return Tensor::from_int64s(dims, {static_cast<int64_t>(dims.size())});
}

// Values that static inference can compute without kernels: enough for the common
// Shape -> Gather/Slice -> Concat -> Reshape chains would need folding (graph optimizer);
// here only Constant, Shape and Size, which need nothing but types.
static std::optional<Tensor> static_value(const Graph &graph, int node_id, const std::vector<TensorType> &in) {
  const Node &node = graph.nodes[node_id];
  if (node.op_type == "Constant") {
    auto value = constant_node_value(node);
    return value.ok() ? std::optional<Tensor>(value.value()) : std::nullopt;
  }
  if (in.empty() || !in[0].fully_known()) return std::nullopt;
  if (node.op_type == "Size") return Tensor::scalar(DType::Int64, shape_numel(in[0].shape));
  if (node.op_type == "Shape") return shape_node_value(node, in[0].shape);
  return std::nullopt;
}

Result<Graph> infer_shapes(Graph graph) {
  if (auto supported = check_supported_ops(graph); !supported.ok()) return supported.error();
  std::vector<int> order;
  try {
    order = graph.topological_order();
  } catch (const std::exception &e) {
    return make_error(ErrorKind::InvalidInput, e.what());
  }
  for (int n : order) {
    const Node &node = graph.nodes[n];
    std::vector<TensorType> in_types;
    std::vector<const Tensor *> in_values;
    for (int t : graph.node_inputs[n]) {
      in_types.push_back(t == kNoTensor ? TensorType{} : graph.tensors[t].type);
      in_values.push_back(t != kNoTensor && graph.tensors[t].constant ? &*graph.tensors[t].constant : nullptr);
    }
    // An input whose type is still unknown (behind a run-time-only shape) is not a missing
    // input: the outputs are unknown too, and the runtime infers them with real values.
    bool input_unknown = false;
    for (size_t i = 0; i < in_types.size(); ++i)
      input_unknown |= graph.node_inputs[n][i] != kNoTensor && in_types[i].dtype == DType::Undefined;
    if (input_unknown) continue;
    auto out = infer_node_types(node, graph.opset, in_types, in_values, graph.node_outputs[n].size());
    if (!out.ok()) return out.error();
    std::optional<Tensor> value = static_value(graph, n, in_types);
    for (size_t i = 0; i < graph.node_outputs[n].size(); ++i) {
      int t = graph.node_outputs[n][i];
      if (t == kNoTensor) continue;
      TensorInfo &info = graph.tensors[t];
      TensorType inferred = out.value()[i];
      // Keep a declared type when inference could not do better.
      if (inferred.rank_known || info.type.dtype == DType::Undefined) info.type = inferred;
      if (i == 0 && value) {
        info.constant = value;
        info.type = value->type();
      }
    }
  }
  return graph;
}

}  // namespace tessel
