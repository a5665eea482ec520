#pragma once
// Ops computed by plain C++ on host tensors, with no kernel compiler: what the deploy runtime
// runs where an artifact's shapes are known only at run time (downstream of NonZero, TopK
// with a computed k, If), and the sorting and data-dependent ops the executor runs on the
// host too. Output types come from graph/infer with the actual inputs, so each op here only
// computes values. Slow next to a compiled kernel, exact to the ONNX spec.
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// One op application on host tensors.
struct HostCall {
  const Node &node;
  int64_t opset;
  const std::vector<const Tensor *> &inputs;    // nullptr for omitted optional inputs
  /// Inferred from these inputs and their values: fully known, except where the output's
  /// length depends on the values (NonZero, Compress, NonMaxSuppression, Unique).
  const std::vector<TensorType> &output_types;
};

/// The computing function of one op type: output values in output order (an output nobody
/// reads may be left undefined). Throws TesselException on input the spec refuses.
using HostOpFunction = std::function<std::vector<Tensor>(const HostCall &)>;

/// Whether evaluate_host_op can compute this op type (default ONNX domain).
bool has_host_implementation(const std::string &op_type);

/// Computes one node. Errors name the node and op.
Result<std::vector<Tensor>> evaluate_host_op(const HostCall &call);

/// Registration, called once by each family's register function (host_op_families.h).
void register_host_op(const std::string &op_type, HostOpFunction function);

}  // namespace tessel
