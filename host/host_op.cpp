#include "host/host_op.h"

#include <map>
#include <mutex>

#include "host/host_op_families.h"

namespace tessel {

namespace {

std::map<std::string, HostOpFunction> &table() {
  static std::map<std::string, HostOpFunction> functions;
  return functions;
}

const std::map<std::string, HostOpFunction> &registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_elementwise_host_ops();
    register_shape_host_ops();
    register_index_host_ops();
    register_reduce_host_ops();
    register_linear_host_ops();
    register_detection_host_ops();
  });
  return table();
}

}  // namespace

void register_host_op(const std::string &op_type, HostOpFunction function) { table()[op_type] = std::move(function); }

bool has_host_implementation(const std::string &op_type) { return registered().count(op_type) != 0; }

Result<std::vector<Tensor>> evaluate_host_op(const HostCall &call) {
  const std::string where = "node '" + call.node.name + "' (" + call.node.op_type + ")";
  auto it = registered().find(call.node.op_type);
  if (!call.node.domain.empty() || it == registered().end())
    return make_error(ErrorKind::Unsupported, where + ": no host implementation of this op");
  try {
    std::vector<Tensor> outputs = it->second(call);
    // Ops whose output length depends on the values (NonZero) leave it unknown to inference.
    for (size_t i = 0; i < outputs.size() && i < call.output_types.size(); ++i)
      if (outputs[i].defined() && call.output_types[i].fully_known() && !(outputs[i].type() == call.output_types[i]))
        return make_error(ErrorKind::Internal, where + ": computed output " + std::to_string(i) + " as " +
                                                   outputs[i].type().to_string() + ", inference says " +
                                                   call.output_types[i].to_string());
    return outputs;
  } catch (const std::exception &e) {
    return make_error(where + ": " + e.what());
  }
}

}  // namespace tessel
