#pragma once
// One ONNX node as a Halide pipeline with its default schedule (light header: no Halide).
#include <memory>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Opaque: the Halide pipeline, its input parameters and output types. Defined in
/// compute/node_pipeline_internal.h for schedule/ and codegen/.
struct NodePipeline;

/// Builds the pipeline computing `node` for inputs of these exact types. input_values
/// holds the values of inputs that are known (required for the op's value inputs); they
/// are baked into the pipeline. Errors (bad attributes, shapes the op rejects) are values.
Result<std::shared_ptr<NodePipeline>> build_node_pipeline(
    const Node &node, int64_t opset, const std::vector<TensorType> &input_types,
    const std::vector<const Tensor *> &input_values, const std::vector<TensorType> &output_types);

/// GPU pipelines: registers per thread their kernels may use (0: Halide's cap of 64; see
/// base/cuda_jit_registers.h).
void set_gpu_max_registers(NodePipeline &pipeline, int registers);

/// Whether a compute rule exists for this op (host-executed ops have none).
bool has_compute_rule(const std::string &op_type);

}  // namespace tessel
