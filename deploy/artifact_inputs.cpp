#include "deploy/artifact_inputs.h"

#include "tensor/input_limit.h"
#include "tensor/npy.h"
#include "tensor/random_tensor.h"

namespace tessel {
namespace {

Result<std::vector<Tensor>> random_artifact_inputs(const Module &module, uint64_t seed, int64_t max_bytes) {
  const auto &declared = module.inputs();
  std::vector<Tensor> inputs(declared.size());
  for (size_t i = 0; i < declared.size(); ++i) {
    const std::string what = "input '" + declared[i].name + "'";
    TESSEL_TRY_VOID(check_input_bytes(what, declared[i].dtype, declared[i].shape, max_bytes));
    inputs[i] = random_tensor(TensorType{declared[i].dtype, declared[i].shape, true}, seed + i);
  }
  return inputs;
}

}  // namespace

Result<std::vector<Tensor>> artifact_inputs(const Module &module, const std::vector<std::string> &specs,
                                            uint64_t seed, int64_t max_bytes, std::vector<std::string> &notes) {
  if (specs.empty()) {
    notes.push_back("random inputs (seed " + std::to_string(seed) + ")");
    return random_artifact_inputs(module, seed, max_bytes);
  }
  const auto &declared = module.inputs();
  std::vector<Tensor> inputs(declared.size());
  size_t next_positional = 0;
  std::vector<bool> bound(declared.size(), false);
  for (const std::string &spec : specs) {
    TESSEL_TRY(auto input, read_input_spec(spec, max_bytes));
    const std::string &name = input.first;
    Tensor &tensor = input.second;
    size_t index = declared.size();
    if (name.empty()) {
      while (next_positional < declared.size() && bound[next_positional]) ++next_positional;
      index = next_positional;
    } else {
      for (size_t i = 0; i < declared.size(); ++i)
        if (declared[i].name == name) index = i;
      if (index == declared.size())
        return make_error(ErrorKind::InvalidInput, "the artifact has no input named '" + name + "'");
    }
    if (index >= declared.size()) return make_error(ErrorKind::InvalidInput, "more inputs given than the artifact takes");
    if (bound[index]) return make_error(ErrorKind::InvalidInput, "input '" + declared[index].name + "' given twice");
    bound[index] = true;
    inputs[index] = std::move(tensor);
  }
  for (size_t i = 0; i < declared.size(); ++i)
    if (!bound[i]) return make_error(ErrorKind::InvalidInput, "input '" + declared[i].name + "' is missing");
  return inputs;
}

}  // namespace tessel
