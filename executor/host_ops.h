#pragma once
// Ops the runtime executes on the host without a kernel: metadata views (Reshape and
// friends share their input's bytes), shape queries, constants, sorting (TopK) and
// control flow (If, Loop), whose bodies the runtime drives (seed 003).
#include <string>
#include <vector>

#include "base/result.h"
#include "codegen/target.h"
#include "graph/ir/graph.h"

namespace tessel {

struct Scope;

/// What a host op sees.
struct HostOpContext {
  const Node &node;
  int64_t opset;
  const std::vector<const Tensor *> &inputs;  // nullptr for omitted inputs
  const Scope &scope;                          // for bodies that read outer values
  const Target &target;
};

bool is_host_op(const std::string &op_type);
/// Runs a host op; output types come from inference where the op has static rules.
Result<std::vector<Tensor>> run_host_op(const HostOpContext &ctx, const std::vector<TensorType> &output_types);

/// Control flow (control_flow.cpp).
Result<std::vector<Tensor>> run_if(const HostOpContext &ctx);
Result<std::vector<Tensor>> run_loop(const HostOpContext &ctx);
/// Scan (scan.cpp).
Result<std::vector<Tensor>> run_scan(const HostOpContext &ctx);

}  // namespace tessel
