#pragma once
// Element types tessel understands, with their ONNX codes.
#include <cstdint>
#include <string>

namespace tessel {

/// An element type. Values match onnx::TensorProto_DataType so they convert by cast.
enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

/// Bytes per element (bool takes one byte, as in ONNX and Halide buffers); 0 if not numeric.
size_t dtype_size(DType type);
/// Lower-case ONNX-style name: "float32", "int64", "bool" ...
std::string dtype_name(DType type);
/// Whether tessel can store and compute with this type.
bool dtype_is_supported(DType type);
bool dtype_is_float(DType type);
bool dtype_is_signed_int(DType type);
bool dtype_is_unsigned_int(DType type);
inline bool dtype_is_integer(DType t) { return dtype_is_signed_int(t) || dtype_is_unsigned_int(t); }
/// Converts an ONNX TensorProto data type code; Undefined when unknown.
DType dtype_from_onnx(int32_t code);

}  // namespace tessel
