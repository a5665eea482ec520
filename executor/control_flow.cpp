// If and Loop in the executor: host/host_control_flow.h drives them, each body running
// through a GraphExecutor that sees the enclosing values by name.
#include "executor/graph_executor.h"
#include "executor/host_ops.h"
#include "host/host_control_flow.h"

namespace tessel {

namespace {

/// Bodies run through a GraphExecutor that sees the enclosing values by name.
BodyRunner executor_body_runner(const HostOpContext &ctx) {
  return [&ctx](const std::shared_ptr<const Graph> &body, const std::vector<Tensor> &inputs) {
    GraphExecutor executor(body, ctx.target);
    return executor.run(inputs, &ctx.scope);
  };
}

}  // namespace

Result<std::vector<Tensor>> run_if(const HostOpContext &ctx) {
  return run_if_node(ctx.node, ctx.inputs, executor_body_runner(ctx));
}

Result<std::vector<Tensor>> run_loop(const HostOpContext &ctx) {
  return run_loop_node(ctx.node, ctx.inputs, executor_body_runner(ctx));
}

}  // namespace tessel
