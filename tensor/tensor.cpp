#include "tensor/tensor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "base/result.h"

namespace tessel {

int64_t shape_numel(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<int64_t> checked_tensor_bytes(DType dtype, const Shape &shape) {
  const int64_t element = static_cast<int64_t>(std::max<size_t>(dtype_size(dtype), 1));
  int64_t bytes = element;
  for (int64_t d : shape) {
    if (d < 0) return make_error(ErrorKind::InvalidInput, "shape " + shape_to_string(shape) + " has a negative dimension");
    if (d != 0 && bytes > std::numeric_limits<int64_t>::max() / d)
      return make_error(ErrorKind::InvalidInput,
                        "shape " + shape_to_string(shape) + " is too large: its size in bytes overflows 64 bits");
    bytes *= d;
  }
  return bytes;
}

std::string shape_to_string(const Shape &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) os << ",";
    if (shape[i] == kUnknownDim) os << "?"; else os << shape[i];
  }
  os << "]";
  return os.str();
}

std::vector<int64_t> shape_strides(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

bool TensorType::fully_known() const {
  if (!rank_known) return false;
  for (int64_t d : shape) if (d < 0) return false;
  return true;
}

std::string TensorType::to_string() const {
  return dtype_name(dtype) + (rank_known ? shape_to_string(shape) : std::string("[*]"));
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  const Result<int64_t> checked = checked_tensor_bytes(dtype_, shape_);
  if (!checked.ok()) throw TesselException("cannot allocate a tensor: " + checked.error().message);
  const size_t n = std::max<size_t>(static_cast<size_t>(checked.value()), 1);
  try {
    storage_ = std::shared_ptr<uint8_t[]>(new uint8_t[n + 64]());
  } catch (const std::bad_alloc &) {
    throw TesselException("cannot allocate " + std::to_string(n) + " bytes for a tensor of shape " +
                          shape_to_string(shape_) + ": out of memory");
  }
  // 64-byte alignment so vector loads never straddle cache lines at the start.
  uintptr_t p = reinterpret_cast<uintptr_t>(storage_.get());
  data_ = storage_.get() + ((64 - (p % 64)) % 64);
}

Tensor Tensor::wrap(DType dtype, Shape shape, void *data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = static_cast<uint8_t *>(data);
  return t;
}

Tensor Tensor::in_storage(std::shared_ptr<uint8_t[]> storage, uint8_t *data, DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = std::move(storage);
  t.data_ = data;
  return t;
}

Tensor Tensor::from_int64s(const std::vector<int64_t> &values, Shape shape) {
  if (shape.empty() && values.size() != 1) shape = {static_cast<int64_t>(values.size())};
  Tensor t(DType::Int64, shape);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel())
    throw TesselException("cannot view a tensor of shape " + shape_to_string(shape_) + " as " +
                          shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::permuted(const std::vector<int64_t> &perm) const {
  const int rank = static_cast<int>(perm.size());
  Shape shape;
  for (int64_t p : perm) shape.push_back(shape_[p]);
  Tensor out(dtype_, shape);
  const size_t element = dtype_size(dtype_);
  const auto *src = static_cast<const uint8_t *>(data_);
  auto *dst = static_cast<uint8_t *>(out.data());
  if (rank == 0) {
    std::memcpy(dst, src, bytes());
    return out;
  }
  const std::vector<int64_t> in_strides = shape_strides(shape_);
  std::vector<int64_t> step, index(perm.size(), 0);  // input elements per step along each output axis
  for (int64_t p : perm) step.push_back(in_strides[p]);
  int64_t from = 0;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    std::memcpy(dst + i * element, src + from * element, element);
    // Odometer over the output index, tracking the matching input offset.
    for (int d = rank - 1; d >= 0; --d) {
      from += step[d];
      if (++index[d] < shape[d]) break;
      from -= step[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (bytes()) std::memcpy(t.data_, data_, bytes());
  return t;
}

template <typename F>
static auto visit_element(DType dtype, const void *base, int64_t i, F &&f) {
  switch (dtype) {
    case DType::Float32: return f(static_cast<const float *>(base)[i]);
    case DType::Float64: return f(static_cast<const double *>(base)[i]);
    case DType::Float16: return f(half_to_float(static_cast<const uint16_t *>(base)[i]));
    case DType::BFloat16: return f(bfloat16_to_float(static_cast<const uint16_t *>(base)[i]));
    case DType::Int8: return f(static_cast<const int8_t *>(base)[i]);
    case DType::Int16: return f(static_cast<const int16_t *>(base)[i]);
    case DType::Int32: return f(static_cast<const int32_t *>(base)[i]);
    case DType::Int64: return f(static_cast<const int64_t *>(base)[i]);
    case DType::UInt8: return f(static_cast<const uint8_t *>(base)[i]);
    case DType::Bool: return f(static_cast<const uint8_t *>(base)[i] != 0);
    case DType::UInt16: return f(static_cast<const uint16_t *>(base)[i]);
    case DType::UInt32: return f(static_cast<const uint32_t *>(base)[i]);
    case DType::UInt64: return f(static_cast<const uint64_t *>(base)[i]);
    default: throw TesselException("unsupported element type " + dtype_name(dtype));
  }
}

double Tensor::element_as_double(int64_t i) const {
  return visit_element(dtype_, data_, i, [](auto v) { return static_cast<double>(v); });
}

int64_t Tensor::element_as_int64(int64_t i) const {
  return visit_element(dtype_, data_, i, [](auto v) { return static_cast<int64_t>(v); });
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(numel());
  for (int64_t i = 0; i < numel(); ++i) out[i] = element_as_int64(i);
  return out;
}

void Tensor::set_element_from_double(int64_t i, double v) {
  switch (dtype_) {
    case DType::Float32: data_as<float>()[i] = static_cast<float>(v); break;
    case DType::Float64: data_as<double>()[i] = v; break;
    case DType::Float16: data_as<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
    case DType::BFloat16: data_as<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v)); break;
    case DType::Int8: data_as<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::Int16: data_as<int16_t>()[i] = static_cast<int16_t>(v); break;
    case DType::Int32: data_as<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::Int64: data_as<int64_t>()[i] = static_cast<int64_t>(v); break;
    case DType::UInt8: data_as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::Bool: data_as<uint8_t>()[i] = v != 0; break;
    case DType::UInt16: data_as<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DType::UInt32: data_as<uint32_t>()[i] = static_cast<uint32_t>(v); break;
    case DType::UInt64: data_as<uint64_t>()[i] = static_cast<uint64_t>(v); break;
    default: throw TesselException("unsupported element type " + dtype_name(dtype_));
  }
}

std::string tensor_canonical_text(const Tensor &t) {
  std::ostringstream os;
  os << t.type().to_string() << "{";
  const int64_t n = t.numel();
  char buf[32];
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ",";
    if (dtype_is_float(t.dtype())) {
      std::snprintf(buf, sizeof(buf), "%a", t.element_as_double(i));
      os << buf;
    } else {
      os << t.element_as_int64(i);
    }
  }
  os << "}";
  return os.str();
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal half: renormalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) { mant <<= 1; --exp; }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  // NaN stays NaN (a quiet one): rounding could carry its payload into the exponent.
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  // Round to nearest, ties to even, on the 16 bits dropped.
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // round to nearest even
  return static_cast<uint16_t>(h);
}

}  // namespace tessel
