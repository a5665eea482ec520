// If and Loop: the runtime drives their bodies from the host (seed 003); each body runs
// through a GraphExecutor that sees the enclosing values by name.
#include <cstring>

#include "executor/graph_executor.h"
#include "executor/host_ops.h"

namespace tessel {

static Result<bool> scalar_condition(const Tensor *t, const Node &node, const char *what) {
  if (!t || t->numel() != 1)
    return make_error(ErrorKind::InvalidInput,
                      "node '" + node.name + "' (" + node.op_type + "): " + what + " must be a single value");
  return t->element_as_double(0) != 0;
}

Result<std::vector<Tensor>> run_if(const HostOpContext &ctx) {
  auto cond = scalar_condition(ctx.inputs.empty() ? nullptr : ctx.inputs[0], ctx.node, "the condition");
  if (!cond.ok()) return cond.error();
  auto body = ctx.node.attributes.get_graph(cond.value() ? "then_branch" : "else_branch");
  GraphExecutor branch(body, ctx.target);
  auto outputs = branch.run({}, &ctx.scope);
  if (!outputs.ok())
    return make_error(outputs.error().kind, "node '" + ctx.node.name + "' (If) branch: " + outputs.error().message);
  return outputs;
}

/// Stacks same-shaped tensors along a new leading axis.
static Result<Tensor> stack(const std::vector<Tensor> &parts, const TensorType &fallback) {
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
    std::memcpy(static_cast<uint8_t *>(out.data()) + offset, p.data(), p.bytes());
    offset += p.bytes();
  }
  return out;
}

Result<std::vector<Tensor>> run_loop(const HostOpContext &ctx) {
  const Node &node = ctx.node;
  auto body = ctx.node.attributes.get_graph("body");
  const auto fail = [&](const std::string &m) { return make_error("node '" + node.name + "' (Loop): " + m); };
  const Tensor *max_trips = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor *initial_cond = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  int64_t trip_limit = max_trips ? max_trips->element_as_int64(0) : INT64_MAX;
  bool cond = true;
  if (initial_cond) {
    auto c = scalar_condition(initial_cond, node, "the initial condition");
    if (!c.ok()) return c.error();
    cond = c.value();
  }
  std::vector<Tensor> carried;
  for (size_t i = 2; i < ctx.inputs.size(); ++i) {
    if (!ctx.inputs[i]) return fail("loop-carried input " + std::to_string(i) + " is missing");
    carried.push_back(*ctx.inputs[i]);
  }
  const size_t num_carried = carried.size();
  if (body->inputs.size() != num_carried + 2)
    return fail("the body takes " + std::to_string(body->inputs.size()) + " inputs, expected " +
                std::to_string(num_carried + 2));
  const size_t num_scan = body->outputs.size() - 1 - num_carried;
  std::vector<std::vector<Tensor>> scans(num_scan);
  GraphExecutor executor(body, ctx.target);
  // Body inputs may be declared with another dtype for cond/iter (rare); use the declared ones.
  const DType iter_type = body->tensors[body->inputs[0]].type.dtype == DType::Undefined
                              ? DType::Int64 : body->tensors[body->inputs[0]].type.dtype;
  for (int64_t iter = 0; iter < trip_limit && cond; ++iter) {
    std::vector<Tensor> inputs;
    inputs.push_back(Tensor::scalar(iter_type, iter));
    inputs.push_back(Tensor::scalar(DType::Bool, cond ? 1 : 0));
    for (const Tensor &t : carried) inputs.push_back(t);
    auto outputs = executor.run(inputs, &ctx.scope);
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
