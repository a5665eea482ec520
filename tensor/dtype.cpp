#include "tensor/dtype.h"

namespace tessel {

size_t dtype_size(DType type) {
  switch (type) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8: return 1;
    case DType::UInt16:
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::UInt32:
    case DType::Int32:
    case DType::Float32: return 4;
    case DType::UInt64:
    case DType::Int64:
    case DType::Float64: return 8;
    default: return 0;
  }
}

std::string dtype_name(DType type) {
  switch (type) {
    case DType::Float32: return "float32";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::BFloat16: return "bfloat16";
    default: return "undefined";
  }
}

bool dtype_is_supported(DType type) {
  return type != DType::Undefined && type != DType::String &&
         dtype_size(type) != 0;
}

bool dtype_is_float(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::Float64 || t == DType::BFloat16;
}
bool dtype_is_signed_int(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}
bool dtype_is_unsigned_int(DType t) {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

DType dtype_from_onnx(int32_t code) {
  switch (code) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10:
    case 11: case 12: case 13: case 16:
      return static_cast<DType>(code);
    default: return DType::Undefined;
  }
}

}  // namespace tessel
