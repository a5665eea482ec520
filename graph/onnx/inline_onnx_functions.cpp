#include "graph/onnx/inline_onnx_functions.h"

#include <set>
#include <unordered_map>

#include "onnx/defs/function.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace tessel {
namespace {

/// A body nested this deep still bringing in functions is a loop, not a model.
constexpr int kMaxRounds = 8;

int64_t default_opset(const onnx::ModelProto &model) {
  int64_t opset = 0;
  for (const auto &op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
  return opset;
}

/// The type of every named value ONNX's shape inference can tell; only declared types when
/// the model was not checked (ONNX's inference assumes a valid model and may crash on others).
std::unordered_map<std::string, onnx::TypeProto> value_types(const onnx::ModelProto &model, bool checked) {
  onnx::ModelProto typed = model;
  try {
    if (checked) onnx::shape_inference::InferShapes(typed);
  } catch (const std::exception &) {
    // Declared types only: a body that needs more will not be built.
  }
  std::unordered_map<std::string, onnx::TypeProto> types;
  const onnx::GraphProto &g = typed.graph();
  for (const auto *list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto &v : *list)
      if (v.has_type()) types[v.name()] = v.type();
  for (const auto &init : g.initializer()) {
    onnx::TypeProto t;
    t.mutable_tensor_type()->set_elem_type(init.data_type());
    for (int64_t d : init.dims()) t.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    types[init.name()] = t;
  }
  return types;
}

/// The schema of a default-domain op at `opset`, or nullptr.
const onnx::OpSchema *schema_of(const onnx::NodeProto &node, int64_t opset) {
  return onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "");
}

/// The ONNX function body of `node` at `opset`, if its schema has one.
bool function_body(const onnx::NodeProto &node, int64_t opset,
                   const std::unordered_map<std::string, onnx::TypeProto> &types, onnx::FunctionProto &body) {
  const onnx::OpSchema *schema = schema_of(node, opset);
  if (!schema) return false;
  if (schema->HasFunction()) {
    body = *schema->GetFunction();
    return true;
  }
  if (!schema->HasContextDependentFunction()) return false;
  std::vector<onnx::TypeProto> input_types;
  for (const std::string &input : node.input()) {
    auto it = types.find(input);
    input_types.push_back(it != types.end() ? it->second : onnx::TypeProto{});
  }
  try {
    return schema->BuildContextDependentFunction(onnx::FunctionBodyBuildContextImpl(node, input_types), body);
  } catch (const std::exception &) {
    return false;  // the body needs a type nobody knows: the node stays
  }
}

/// A body's attribute that refers to an attribute the caller did not set takes that
/// attribute's default from the op's schema, or is absent when it has none. ONNX's
/// expansion helper keeps such references as they are, and a nested function built from
/// them reads them as set (SoftmaxCrossEntropyLoss's inner NegativeLogLikelihoodLoss would
/// ignore class 0; the window functions' Cast would have no `to`). The helper appends the
/// body's nodes in order, starting at `first_node`.
void resolve_attribute_defaults(const onnx::NodeProto &caller, const onnx::OpSchema &schema,
                                const onnx::FunctionProto &body, onnx::GraphProto &graph, int first_node) {
  std::set<std::string> given;
  for (const auto &a : caller.attribute()) given.insert(a.name());
  for (int k = 0; k < body.node_size() && first_node + k < graph.node_size(); ++k) {
    onnx::NodeProto &expanded = *graph.mutable_node(first_node + k);
    for (const auto &a : body.node(k).attribute()) {
      if (!a.has_ref_attr_name() || given.count(a.ref_attr_name())) continue;
      auto *attributes = expanded.mutable_attribute();
      for (int i = attributes->size() - 1; i >= 0; --i)
        if (attributes->Get(i).name() == a.name()) attributes->DeleteSubrange(i, 1);
      const auto declared = schema.attributes().find(a.ref_attr_name());
      if (declared == schema.attributes().end() || !declared->second.default_value.has_type()) continue;
      onnx::AttributeProto value = declared->second.default_value;
      value.set_name(a.name());
      *expanded.add_attribute() = value;
    }
  }
}

}  // namespace

int inline_onnx_functions(onnx::ModelProto &model, const std::function<bool(const std::string &)> &is_supported,
                          bool checked) {
  const int64_t opset = default_opset(model);
  int inlined = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool wanted = false;
    for (const auto &node : model.graph().node())
      wanted |= (node.domain().empty() || node.domain() == "ai.onnx") && !is_supported(node.op_type());
    if (!wanted) break;
    const auto types = value_types(model, checked);
    onnx::GraphProto rebuilt = model.graph();
    rebuilt.clear_node();
    int this_round = 0;
    for (const auto &node : model.graph().node()) {
      onnx::FunctionProto body;
      const bool inline_it = (node.domain().empty() || node.domain() == "ai.onnx") && !is_supported(node.op_type()) &&
                             function_body(node, opset, types, body);
      if (!inline_it) {
        *rebuilt.add_node() = node;
        continue;
      }
      // The prefix keeps the body's internal value names apart from the model's and from
      // other inlined copies of the same function.
      const std::string prefix = (node.name().empty() ? node.op_type() : node.name()) + "/inlined" +
                                 std::to_string(round) + "_" + std::to_string(this_round);
      const int first_new = rebuilt.node_size();
      onnx::FunctionExpandHelper(node, body, rebuilt, prefix);
      resolve_attribute_defaults(node, *schema_of(node, opset), body, rebuilt, first_new);
      ++this_round;
    }
    if (this_round == 0) break;
    *model.mutable_graph() = std::move(rebuilt);
    inlined += this_round;
  }
  return inlined;
}

}  // namespace tessel
