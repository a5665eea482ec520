#include "host/host_control_flow.h"

#include <cstring>

namespace tessel {

namespace {

Result<bool> scalar_condition(const Tensor *t, const Node &node, const char *what) {
  if (!t || t->numel() != 1)
    return make_error(ErrorKind::InvalidInput,
                      "node '" + node.name + "' (" + node.op_type + "): " + what + " must be a single value");
  return t->element_as_double(0) != 0;
}

/// Stacks same-shaped tensors along a new leading axis.
Result<Tensor> stack(const std::vector<Tensor> &parts, const TensorType &fallback) {
  if (parts.empty()) {
    Shape shape = {0};
    if (fallback.rank_known)
      for (int64_t d : fallback.shape) shape.push_back(d < 0 ? 0 : d);
    return Tensor(fallback.dtype == DType::Undefined ? DType::Float32 : fallback.dtype, shape);
  }
  Shape shape = parts[0].shape();
  shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
  Tensor out(parts[0].dtype(), shape);
  size_t offset = 0;
  for (const Tensor &p : parts) {
    if (p.shape() != parts[0].shape())
      return make_error(ErrorKind::InvalidInput,
                        "scan output shapes differ between iterations: " + shape_to_string(parts[0].shape()) +
                        " vs " + shape_to_string(p.shape()));
    if (p.bytes()) std::memcpy(static_cast<uint8_t *>(out.data()) + offset, p.data(), p.bytes());
    offset += p.bytes();
  }
  return out;
}

}  // namespace

Result<std::vector<Tensor>> run_if_node(const Node &node, const std::vector<const Tensor *> &inputs,
                                        const BodyRunner &run_body) {
  auto cond = scalar_condition(inputs.empty() ? nullptr : inputs[0], node, "the condition");
  if (!cond.ok()) return cond.error();
  auto outputs = run_body(node.attributes.get_graph(cond.value() ? "then_branch" : "else_branch"), {});
  if (!outputs.ok())
    return make_error(outputs.error().kind, "node '" + node.name + "' (If) branch: " + outputs.error().message);
  return outputs;
}

Result<std::vector<Tensor>> run_loop_node(const Node &node, const std::vector<const Tensor *> &inputs,
                                          const BodyRunner &run_body) {
  auto body = node.attributes.get_graph("body");
  const auto fail = [&](const std::string &m) { return make_error("node '" + node.name + "' (Loop): " + m); };
  const Tensor *max_trips = inputs.size() > 0 ? inputs[0] : nullptr;
  const Tensor *initial_cond = inputs.size() > 1 ? inputs[1] : nullptr;
  int64_t trip_limit = max_trips ? max_trips->element_as_int64(0) : INT64_MAX;
  bool cond = true;
  if (initial_cond) {
    auto c = scalar_condition(initial_cond, node, "the initial condition");
    if (!c.ok()) return c.error();
    cond = c.value();
  }
  std::vector<Tensor> carried;
  for (size_t i = 2; i < inputs.size(); ++i) {
    if (!inputs[i]) return fail("loop-carried input " + std::to_string(i) + " is missing");
    carried.push_back(*inputs[i]);
  }
  const size_t num_carried = carried.size();
  if (body->inputs.size() != num_carried + 2)
    return fail("the body takes " + std::to_string(body->inputs.size()) + " inputs, expected " +
                std::to_string(num_carried + 2));
  if (body->outputs.size() < 1 + num_carried)
    return fail("the body has " + std::to_string(body->outputs.size()) + " outputs, fewer than 1 + " +
                std::to_string(num_carried) + " loop-carried values");
  const size_t num_scan = body->outputs.size() - 1 - num_carried;
  std::vector<std::vector<Tensor>> scans(num_scan);
  // Body inputs may be declared with another dtype for cond/iter (rare); use the declared ones.
  const DType iter_type = body->tensors[body->inputs[0]].type.dtype == DType::Undefined
                              ? DType::Int64 : body->tensors[body->inputs[0]].type.dtype;
  for (int64_t iter = 0; iter < trip_limit && cond; ++iter) {
    std::vector<Tensor> body_inputs;
    body_inputs.push_back(Tensor::scalar(iter_type, iter));
    body_inputs.push_back(Tensor::scalar(DType::Bool, cond ? 1 : 0));
    for (const Tensor &t : carried) body_inputs.push_back(t);
    auto outputs = run_body(body, body_inputs);
    if (!outputs.ok()) return fail("iteration " + std::to_string(iter) + ": " + outputs.error().message);
    auto c = scalar_condition(&(*outputs)[0], node, "the body's condition output");
    if (!c.ok()) return c.error();
    cond = c.value();
    for (size_t i = 0; i < num_carried; ++i) carried[i] = (*outputs)[1 + i];
    for (size_t i = 0; i < num_scan; ++i) scans[i].push_back((*outputs)[1 + num_carried + i]);
    if (iter > 100000000) return fail("more than 1e8 iterations; giving up");
  }
  std::vector<Tensor> results = carried;
  for (size_t i = 0; i < num_scan; ++i) {
    auto stacked = stack(scans[i], body->tensors[body->outputs[1 + num_carried + i]].type);
    if (!stacked.ok()) return fail(stacked.error().message);
    results.push_back(stacked.value());
  }
  return results;
}

}  // namespace tessel
