#pragma once
// Conversion between onnx::TensorProto and tessel tensors.
#include <string>

#include "base/result.h"
#include "tensor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace tessel {

/// Reads a TensorProto (raw_data, typed fields, or external data resolved against
/// base_dir). The error names the tensor.
Result<Tensor> tensor_from_proto(const onnx::TensorProto &proto, const std::string &base_dir);
/// Reads a serialized TensorProto file (the ONNX test-data .pb format).
Result<Tensor> read_tensor_pb_file(const std::string &path);

}  // namespace tessel
