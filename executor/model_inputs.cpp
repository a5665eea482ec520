#include "executor/model_inputs.h"

#include "tensor/input_limit.h"
#include "tensor/npy.h"

namespace tessel {

Result<std::vector<Tensor>> bind_inputs(const Graph &graph, const std::vector<std::pair<std::string, Tensor>> &given) {
  std::vector<Tensor> bound(graph.inputs.size());
  std::vector<bool> set(graph.inputs.size(), false);
  size_t next_positional = 0;
  auto names = [&] {
    std::string list;
    for (int t : graph.inputs) list += (list.empty() ? "" : ", ") + graph.tensors[t].name;
    return list;
  };
  for (const auto &[name, tensor] : given) {
    size_t slot = graph.inputs.size();
    if (name.empty()) {
      while (next_positional < graph.inputs.size() && set[next_positional]) ++next_positional;
      slot = next_positional;
      if (slot >= graph.inputs.size())
        return make_error(ErrorKind::InvalidInput,
                          "too many inputs: the model takes " + std::to_string(graph.inputs.size()) + " (" + names() + ")");
    } else {
      for (size_t i = 0; i < graph.inputs.size(); ++i)
        if (graph.tensors[graph.inputs[i]].name == name) slot = i;
      if (slot == graph.inputs.size())
        return make_error(ErrorKind::InvalidInput,
                          "the model has no input named '" + name + "' (inputs: " + names() + ")");
    }
    if (set[slot])
      return make_error(ErrorKind::InvalidInput,
                        "input '" + graph.tensors[graph.inputs[slot]].name + "' is given twice");
    bound[slot] = tensor;
    set[slot] = true;
  }
  for (size_t i = 0; i < set.size(); ++i)
    if (!set[i]) return make_error(ErrorKind::InvalidInput,
                                   "missing input '" + graph.tensors[graph.inputs[i]].name + "' (" +
                                   graph.tensors[graph.inputs[i]].type.to_string() + ")");
  return bound;
}

Result<std::vector<Tensor>> random_inputs(const Graph &graph, uint64_t seed, std::vector<std::string> *notes,
                                          int64_t max_bytes) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    TensorType type = graph.tensors[graph.inputs[i]].type;
    const std::string &name = graph.tensors[graph.inputs[i]].name;
    if (!dtype_is_supported(type.dtype))
      return make_error(ErrorKind::Unsupported,
                        "input '" + name + "' has type " + dtype_name(type.dtype) + "; give it with --input");
    if (!type.rank_known)
      return make_error(ErrorKind::InvalidInput, "input '" + name + "' has no declared shape; give it with --input");
    for (int64_t &d : type.shape)
      if (d == kUnknownDim) {
        d = 1;
        if (notes) notes->push_back("input '" + name + "': unknown dimension set to 1");
      }
    if (auto within = check_input_bytes("input '" + name + "'", type.dtype, type.shape, max_bytes); !within.ok())
      return within.error();
    inputs.push_back(random_tensor(type, seed + i));
  }
  return inputs;
}

Result<std::vector<Tensor>> model_inputs(const Graph &graph, const std::vector<std::string> &specs, uint64_t seed,
                                         int64_t max_bytes, std::vector<std::string> &notes) {
  if (specs.empty()) {
    TESSEL_TRY(std::vector<Tensor> random, random_inputs(graph, seed, &notes, max_bytes));
    notes.push_back("random inputs (seed " + std::to_string(seed) + ")");
    return random;
  }
  std::vector<std::pair<std::string, Tensor>> given;
  for (const std::string &spec : specs) {
    TESSEL_TRY(auto input, read_input_spec(spec, max_bytes));
    given.push_back(std::move(input));
  }
  return bind_inputs(graph, given);
}

}  // namespace tessel
