#include <Halide.h>

#include "base/result.h"
#include "compute/op_compute.h"

namespace tessel {

const TensorFunc &ComputeContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return inputs[i];
}

const Tensor &ComputeContext::value(size_t i) const {
  if (i >= values.size() || values[i] == nullptr)
    fail("the value of input " + std::to_string(i) + " must be known to build a kernel");
  return *values[i];
}

std::vector<int64_t> ComputeContext::ints_value(size_t i, std::vector<int64_t> fallback) const {
  if (i >= values.size() || values[i] == nullptr) {
    if (i < inputs.size() && inputs[i].defined()) value(i);  // present but unknown: fail
    return fallback;
  }
  return values[i]->to_int64_vector();
}

void ComputeContext::fail(const std::string &message) const {
  throw TesselException("node '" + node.name + "' (" + node.op_type + "): " + message);
}

void ComputeRegistry::add(const std::string &op_type, ComputeFn fn) {
  rules_.emplace_back(op_type, std::move(fn));
}

const ComputeFn *ComputeRegistry::find(const std::string &op_type) const {
  for (const auto &[name, fn] : rules_)
    if (name == op_type) return &fn;
  return nullptr;
}

const ComputeFn *find_compute_rule(const std::string &op_type) {
  static const ComputeRegistry registry = [] {
    ComputeRegistry r;
    register_elementwise_compute(r);
    register_nn_compute(r);
    register_conv_compute(r);
    register_conv_nhwc_compute(r);
    register_pool_compute(r);
    register_normalization_compute(r);
    register_reduction_compute(r);
    register_shape_ops_compute(r);
    register_index_ops_compute(r);
    register_misc_compute(r);
    register_resize_compute(r);
    register_winograd_compute(r);
    return r;
  }();
  return registry.find(op_type);
}

}  // namespace tessel
