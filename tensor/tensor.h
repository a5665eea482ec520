#pragma once
// Tensor types (what inference knows) and tensors (concrete host data).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

#include "tensor/dtype.h"

namespace tessel {

/// Dimensions in ONNX order (outermost first).
using Shape = std::vector<int64_t>;
/// A dimension that inference could not determine.
constexpr int64_t kUnknownDim = -1;

int64_t shape_numel(const Shape &shape);
/// The bytes a tensor of `shape` and `dtype` takes, or why it cannot exist: a negative
/// dimension, or an element or byte count that overflows 64 bits (which used to wrap to a
/// small buffer that was then written past its end).
Result<int64_t> checked_tensor_bytes(DType dtype, const Shape &shape);
std::string shape_to_string(const Shape &shape);
/// Row-major strides in elements.
std::vector<int64_t> shape_strides(const Shape &shape);

/// What is known statically about a tensor: element type and (possibly partial) shape.
struct TensorType {
  DType dtype = DType::Undefined;
  Shape shape;
  bool rank_known = true;

  bool fully_known() const;
  std::string to_string() const;
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && shape == o.shape && rank_known == o.rank_known;
  }
};

/// A dense row-major tensor in host memory. Copies share storage (cheap, like a handle);
/// reshaped() is a zero-copy view. clone() makes an independent copy.
class Tensor {
 public:
  Tensor() = default;
  /// Allocates zero-filled storage.
  Tensor(DType dtype, Shape shape);
  /// Wraps memory owned elsewhere; the caller keeps it alive.
  static Tensor wrap(DType dtype, Shape shape, void *data);
  /// A tensor at `data` inside `storage`, sharing its ownership (an arena slot).
  static Tensor in_storage(std::shared_ptr<uint8_t[]> storage, uint8_t *data, DType dtype, Shape shape);
  /// A one-element tensor of rank 0.
  template <typename T>
  static Tensor scalar(DType dtype, T value);
  static Tensor from_int64s(const std::vector<int64_t> &values, Shape shape = {});

  bool defined() const { return data_ != nullptr || dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  TensorType type() const { return TensorType{dtype_, shape_, true}; }

  void *data() { return data_; }
  const void *data() const { return data_; }
  template <typename T>
  T *data_as() { return reinterpret_cast<T *>(data_); }
  template <typename T>
  const T *data_as() const { return reinterpret_cast<const T *>(data_); }

  /// The allocation this tensor lives in (null for wrapped memory).
  const std::shared_ptr<uint8_t[]> &storage() const { return storage_; }

  /// Same bytes, another shape with the same element count.
  Tensor reshaped(Shape shape) const;
  /// A copy with the axes permuted: out.shape[d] = shape[perm[d]] (ONNX Transpose).
  Tensor permuted(const std::vector<int64_t> &perm) const;
  Tensor clone() const;
  /// Element i converted to double / int64 (any numeric dtype).
  double element_as_double(int64_t i) const;
  int64_t element_as_int64(int64_t i) const;
  /// All elements as int64 (for shape-like inputs of any integer type).
  std::vector<int64_t> to_int64_vector() const;
  /// Writes v (converted) into element i.
  void set_element_from_double(int64_t i, double v);

 private:
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::shared_ptr<uint8_t[]> storage_;
  uint8_t *data_ = nullptr;
};

template <typename T>
Tensor Tensor::scalar(DType dtype, T value) {
  Tensor t(dtype, {});
  t.set_element_from_double(0, static_cast<double>(value));
  return t;
}

/// Canonical text of a tensor's type and every value (floats exact, as hex), for keys.
std::string tensor_canonical_text(const Tensor &t);

/// float16 <-> float32 conversion (IEEE half), used for I/O and host ops.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
/// bfloat16 is float32's upper half; the narrowing rounds to nearest even.
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

}  // namespace tessel
