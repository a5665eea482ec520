#include <Halide.h>

#include "compute/node_pipeline.h"

#include "compute/default_schedule.h"
#include "compute/node_pipeline_internal.h"
#include "compute/op_compute.h"
#include "compute/pipeline_layout.h"

namespace tessel {

bool has_compute_rule(const std::string &op_type) { return find_compute_rule(op_type) != nullptr; }

Result<std::shared_ptr<NodePipeline>> build_node_pipeline(
    const Node &node, int64_t opset, const std::vector<TensorType> &input_types,
    const std::vector<const Tensor *> &input_values, const std::vector<TensorType> &output_types) {
  const ComputeFn *rule = find_compute_rule(node.op_type);
  if (!rule) return make_error(ErrorKind::Unsupported, "node '" + node.name + "': no kernel for op " + node.op_type);
  try {
    auto result = std::make_shared<NodePipeline>();
    ComputeContext ctx{node, opset, {}, input_values, output_types};
    for (size_t i = 0; i < input_types.size(); ++i) {
      TensorFunc in;
      Halide::ImageParam param;
      if (input_types[i].dtype != DType::Undefined) {
        param = make_dense_parameter(input_types[i], static_cast<int>(i));
        in.func = Halide::Func(param);
        in.dtype = input_types[i].dtype;
        in.shape = input_types[i].shape;
      }
      ctx.inputs.push_back(in);
      result->parameters.push_back(param);
    }
    ctx.values.resize(input_types.size(), nullptr);

    std::vector<TensorFunc> outputs = (*rule)(ctx);
    std::vector<Halide::Func> funcs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      // Halide cannot realize an empty buffer; an empty output needs no work anyway.
      if (!outputs[i].defined() || shape_numel(outputs[i].shape) == 0) continue;
      if (i < output_types.size() && outputs[i].shape != output_types[i].shape)
        return make_error(ErrorKind::Internal, "node '" + node.name + "' (" + node.op_type + "): kernel output " +
                                               std::to_string(i) + " has shape " + shape_to_string(outputs[i].shape) +
                                               " but inference says " + shape_to_string(output_types[i].shape));
      // A node alone: its result is the output its deferred tiles go into.
      if (outputs[i].tiles) {
        outputs[i].tiles->into(outputs[i].func);
        outputs[i].scheduled = true;
      }
      apply_default_schedule(outputs[i]);
      pin_dense_output_layout(outputs[i]);
      funcs.push_back(outputs[i].func);
      result->computed_outputs.push_back(static_cast<int>(i));
    }
    if (funcs.empty()) return make_error(ErrorKind::Internal, "node '" + node.name + "': kernel computes no output");
    result->pipeline = Halide::Pipeline(funcs);
    record_used_parameters(*result);
    result->output_types = output_types;
    return result;
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::Internal,
                      "node '" + node.name + "' (" + node.op_type + "): Halide rejected the kernel: " + e.what());
  } catch (const std::exception &e) {
    return make_error(e.what());
  }
}

void set_gpu_max_registers(NodePipeline &pipeline, int registers) { pipeline.gpu_max_registers = registers; }

}  // namespace tessel
