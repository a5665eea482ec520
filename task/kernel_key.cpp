#include "task/kernel_key.h"

#include <algorithm>
#include <map>

#include "graph/ir/op_registry.h"

namespace tessel {

std::string kernel_key(const Node &node, int64_t opset, const std::vector<TensorType> &input_types,
                       const std::vector<const Tensor *> &baked_values, const std::vector<TensorType> &output_types) {
  std::string key = node.op_type + "@" + std::to_string(opset) + "|" + node.attributes.canonical_text() + "|";
  for (size_t i = 0; i < input_types.size(); ++i) {
    key += input_types[i].to_string();
    if (i < baked_values.size() && baked_values[i]) key += "=" + tensor_canonical_text(*baked_values[i]);
    key += ";";
  }
  key += "->";
  for (const TensorType &t : output_types) key += t.to_string() + ";";
  return key;
}

std::string group_kernel_key(const Graph &g, const FusedGroup &group, const GroupSignature &sig) {
  std::map<int, std::string> local;  // tensor id -> position inside the group
  for (size_t i = 0; i < sig.inputs.size(); ++i) local[sig.inputs[i]] = "in" + std::to_string(i);
  std::string key;
  int produced = 0;
  for (int n : group.nodes) {
    const Node &node = g.nodes[n];
    const OpSchema *schema = find_op_schema(node.op_type);
    std::vector<TensorType> in_types, out_types;
    std::vector<const Tensor *> baked;
    std::string wiring = "(";
    for (size_t i = 0; i < g.node_inputs[n].size(); ++i) {
      const int t = g.node_inputs[n][i];
      in_types.push_back(t == kNoTensor ? TensorType{} : sig.types[t]);
      const bool is_value = schema && std::count(schema->value_inputs.begin(), schema->value_inputs.end(), static_cast<int>(i));
      baked.push_back(t != kNoTensor && is_value && static_cast<size_t>(t) < sig.values.size() ? sig.values[t] : nullptr);
      wiring += (i ? "," : "") + (t == kNoTensor ? std::string("_") : local.at(t));
    }
    wiring += ")->(";
    for (size_t i = 0; i < g.node_outputs[n].size(); ++i) {
      const int t = g.node_outputs[n][i];
      out_types.push_back(t == kNoTensor ? TensorType{} : sig.types[t]);
      if (t != kNoTensor) local[t] = "t" + std::to_string(produced++);
      wiring += (i ? "," : "") + (t == kNoTensor ? std::string("_") : local[t]);
    }
    key += kernel_key(node, g.opset, in_types, baked, out_types) + wiring + ");";
  }
  key += "out:";
  for (int t : sig.outputs) key += local.at(t) + ",";
  return key;
}

}  // namespace tessel
