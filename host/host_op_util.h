#pragma once
// Internal to host/: what the op family files share. Element-type dispatch, reading inputs
// and axes, a row walker that steps several strided operands at once (broadcasting, slices,
// reductions), casts, and float16 handled by widening to float32.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "host/host_op.h"

namespace tessel::host_util {

[[noreturn]] inline void fail(const std::string &message) { throw TesselException(message); }

/// Input i, or nullptr where the node omits it (absent or empty name).
/// One output as an op function returns it.
inline std::vector<Tensor> single(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

inline const Tensor *optional_input(const HostCall &call, size_t i) {
  return i < call.inputs.size() ? call.inputs[i] : nullptr;
}

inline const Tensor &required_input(const HostCall &call, size_t i) {
  const Tensor *t = optional_input(call, i);
  if (!t) fail("input " + std::to_string(i) + " is required but missing");
  return *t;
}

/// A zero-filled tensor of output i's inferred type.
inline Tensor new_output(const HostCall &call, size_t i = 0) {
  if (i >= call.output_types.size()) fail("output " + std::to_string(i) + " has no inferred type");
  return Tensor(call.output_types[i].dtype, call.output_types[i].shape);
}

/// Checks that a computed tensor has the type the op writes into it: inference decides the
/// output types, and a mismatch must fail rather than write past a buffer.
inline void require_dtype(const Tensor &t, DType dtype, const char *what) {
  if (t.dtype() != dtype)
    fail(std::string(what) + " has type " + dtype_name(t.dtype()) + ", expected " + dtype_name(dtype));
}

/// Checks that tensor t stores elements of C++ type T (bool as uint8_t).
template <typename T>
void require_element_size(const Tensor &t, const char *what) {
  if (dtype_size(t.dtype()) != sizeof(T)) fail(std::string(what) + " has an unexpected type " + dtype_name(t.dtype()));
}

/// The values of an integer (or any numeric) input as int64; empty where it is omitted.
inline std::vector<int64_t> ints_input(const HostCall &call, size_t i) {
  const Tensor *t = optional_input(call, i);
  return t ? t->to_int64_vector() : std::vector<int64_t>{};
}

/// `axis` in [0, rank), counting negatives from the back; throws naming it when outside.
inline int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// Product of shape[begin, end).
inline int64_t dims_product(const Shape &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end && d < shape.size(); ++d) p *= shape[d];
  return p;
}

template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) with T the C++ type stored for `dtype`. Bool is stored as uint8_t
/// (0 or 1), so callers whose meaning differs for bool check the dtype themselves. Float16
/// and bfloat16 are not listed: ops that compute widen them to float32 first (in_float32).
template <typename F>
decltype(auto) visit_dtype(DType dtype, F &&f) {
  switch (dtype) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Int8: return f(TypeTag<int8_t>{});
    case DType::Int16: return f(TypeTag<int16_t>{});
    case DType::Int32: return f(TypeTag<int32_t>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::UInt8: return f(TypeTag<uint8_t>{});
    case DType::UInt16: return f(TypeTag<uint16_t>{});
    case DType::UInt32: return f(TypeTag<uint32_t>{});
    case DType::UInt64: return f(TypeTag<uint64_t>{});
    case DType::Bool: return f(TypeTag<uint8_t>{});
    default: fail("element type " + dtype_name(dtype) + " is not supported here");
  }
}

/// visit_dtype for arithmetic: refuses bool, whose + and * ONNX does not define.
template <typename F>
decltype(auto) visit_numeric(DType dtype, F &&f) {
  if (dtype == DType::Bool) fail("bool is not a numeric type for this op");
  return visit_dtype(dtype, std::forward<F>(f));
}

/// visit_dtype for float math (exp, log ...): float32 and float64 only.
template <typename F>
decltype(auto) visit_float(DType dtype, F &&f) {
  if (dtype == DType::Float32) return f(TypeTag<float>{});
  if (dtype == DType::Float64) return f(TypeTag<double>{});
  fail("expects a floating-point input, got " + dtype_name(dtype));
}

/// Calls f(TypeTag<U>{}) with an unsigned type as wide as one element: for ops that only
/// move elements, whatever their type.
template <typename F>
decltype(auto) visit_by_size(DType dtype, F &&f) {
  switch (dtype_size(dtype)) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: fail("element type " + dtype_name(dtype) + " is not supported here");
  }
}

/// Integer + - * wrap around (two's complement) instead of overflowing, which C++ leaves
/// undefined: shape arithmetic meets INT64_MAX.
template <typename T>
T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <typename T>
T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else return a - b;
}
template <typename T>
T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}

/// A value converted as ONNX Cast does: floats to integers truncate toward zero (through
/// int64, so narrower targets wrap); NaN and values beyond 64 bits saturate rather than
/// being undefined. Bool targets are handled by the caller (v != 0).
template <typename To, typename From>
To convert_value(From v) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    const double t = std::trunc(static_cast<double>(v));
    if (std::isnan(t)) return To(0);
    if constexpr (std::is_same_v<To, uint64_t>) {
      if (t >= 0) return t < 18446744073709551616.0 ? static_cast<uint64_t>(t) : std::numeric_limits<uint64_t>::max();
    }
    int64_t i;
    if (t <= -9223372036854775808.0) i = std::numeric_limits<int64_t>::min();
    else if (t >= 9223372036854775808.0) i = std::numeric_limits<int64_t>::max();
    else i = static_cast<int64_t>(t);
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);
  }
}

inline bool is_half_type(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

/// A float16 or bfloat16 tensor as float32 (exact); other tensors unchanged.
inline Tensor widen_half(const Tensor &in) {
  if (!is_half_type(in.dtype())) return in;
  Tensor out(DType::Float32, in.shape());
  const uint16_t *src = in.data_as<uint16_t>();
  float *dst = out.data_as<float>();
  const bool half = in.dtype() == DType::Float16;
  for (int64_t i = 0, n = in.numel(); i < n; ++i) dst[i] = half ? half_to_float(src[i]) : bfloat16_to_float(src[i]);
  return out;
}

/// A float32 tensor rounded to float16 or bfloat16 (nearest even).
inline Tensor narrow_to_half(const Tensor &in, DType to) {
  Tensor out(to, in.shape());
  const float *src = in.data_as<float>();
  uint16_t *dst = out.data_as<uint16_t>();
  const bool half = to == DType::Float16;
  for (int64_t i = 0, n = in.numel(); i < n; ++i) dst[i] = half ? float_to_half(src[i]) : float_to_bfloat16(src[i]);
  return out;
}

/// `in` converted to `to` as ONNX Cast converts (see convert_value; to bool is v != 0).
inline Tensor cast_tensor(const Tensor &in, DType to) {
  if (is_half_type(in.dtype())) return cast_tensor(widen_half(in), to);
  if (is_half_type(to)) return narrow_to_half(cast_tensor(in, DType::Float32), to);
  if (in.dtype() == to) return in.clone();
  Tensor out(to, in.shape());
  const int64_t n = in.numel();
  visit_dtype(in.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    const From *src = in.data_as<From>();
    if (to == DType::Bool) {
      uint8_t *dst = out.data_as<uint8_t>();
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != From(0);
      return;
    }
    visit_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      To *dst = out.data_as<To>();
      for (int64_t i = 0; i < n; ++i) dst[i] = convert_value<To>(src[i]);
    });
  });
  return out;
}

/// Wraps an op so float16 and bfloat16 compute in float32 and round once at the end, as
/// the executor's kernels do: half inputs are widened, half outputs computed as float32.
inline HostOpFunction in_float32(HostOpFunction f) {
  return [f](const HostCall &call) -> std::vector<Tensor> {
    bool any_half = false;
    for (const Tensor *t : call.inputs) any_half |= t && is_half_type(t->dtype());
    for (const TensorType &t : call.output_types) any_half |= is_half_type(t.dtype);
    if (!any_half) return f(call);
    std::vector<Tensor> widened(call.inputs.size());
    std::vector<const Tensor *> inputs(call.inputs.size(), nullptr);
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      if (!call.inputs[i]) continue;
      widened[i] = widen_half(*call.inputs[i]);
      inputs[i] = &widened[i];
    }
    std::vector<TensorType> types = call.output_types;
    for (TensorType &t : types)
      if (is_half_type(t.dtype)) t.dtype = DType::Float32;
    std::vector<Tensor> outputs = f(HostCall{call.node, call.opset, inputs, types});
    for (size_t i = 0; i < outputs.size() && i < call.output_types.size(); ++i)
      if (outputs[i].defined() && is_half_type(call.output_types[i].dtype))
        outputs[i] = narrow_to_half(outputs[i], call.output_types[i].dtype);
    return outputs;
  };
}

/// Strides (in elements) for reading `in` at an index of shape `out` under numpy
/// broadcasting: aligned at the back, 0 where `in` has size 1 or lacks the axis.
inline std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out) {
  if (in.size() > out.size())
    fail("shape " + shape_to_string(in) + " does not broadcast to " + shape_to_string(out));
  std::vector<int64_t> strides(out.size(), 0);
  const std::vector<int64_t> own = shape_strides(in);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == out[lead + d]) strides[lead + d] = in[d] == 1 ? 0 : own[d];
    else if (in[d] != 1) fail("shape " + shape_to_string(in) + " does not broadcast to " + shape_to_string(out));
  }
  return strides;
}

/// Steps through the index space `shape` one row (innermost run) at a time for N operands
/// at once: operand k sits at base[k] + sum(index[d] * strides[k][d]) (strides in elements;
/// 0 broadcasts, negative reads backwards). Calls row(offsets, steps, count) for each row:
/// operand k's elements there are offsets[k] + j * steps[k] for j < count. Unit axes are
/// dropped and axes contiguous for every operand merged first, so rows are as long as can
/// be; order stays row-major. Nothing is called for an empty shape.
template <size_t N, typename Row>
void walk_rows(const Shape &shape, const std::array<std::vector<int64_t>, N> &strides,
               const std::array<int64_t, N> &base, Row &&row) {
  for (int64_t d : shape)
    if (d == 0) return;
  Shape dims;
  std::array<std::vector<int64_t>, N> merged;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool contiguous = !dims.empty();
    for (size_t k = 0; k < N && contiguous; ++k) contiguous = merged[k].back() == strides[k][d] * shape[d];
    if (contiguous) {
      dims.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) merged[k].back() = strides[k][d];
      continue;
    }
    dims.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k) merged[k].push_back(strides[k][d]);
  }
  std::array<int64_t, N> steps{};
  if (dims.empty()) {
    row(base, steps, int64_t{1});
    return;
  }
  for (size_t k = 0; k < N; ++k) steps[k] = merged[k].back();
  const int64_t count = dims.back();
  const int outer = static_cast<int>(dims.size()) - 1;
  std::vector<int64_t> index(static_cast<size_t>(outer), 0);
  std::array<int64_t, N> offsets = base;
  while (true) {
    row(static_cast<const std::array<int64_t, N> &>(offsets), static_cast<const std::array<int64_t, N> &>(steps),
        count);
    int d = outer - 1;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) offsets[k] += merged[k][d];
      if (++index[d] < dims[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= merged[k][d] * dims[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

/// Copies the elements of `in` read with `strides` from `base` (walk_rows' terms) into the
/// contiguous tensor `out`, whose shape is the index space. Slice, Expand, Tile use it.
inline void strided_copy(const Tensor &in, const std::vector<int64_t> &strides, int64_t base, Tensor &out) {
  require_dtype(out, in.dtype(), "the output");
  if (strides.size() != out.shape().size()) fail("strides do not match the output's rank");
  visit_by_size(in.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U *src = in.data_as<U>();
    U *dst = out.data_as<U>();
    walk_rows<2>(out.shape(), {shape_strides(out.shape()), strides}, {0, base},
                 [&](const std::array<int64_t, 2> &at, const std::array<int64_t, 2> &step, int64_t n) {
                   U *o = dst + at[0];
                   const U *i = src + at[1];
                   if (step[1] == 1) std::memcpy(o, i, static_cast<size_t>(n) * sizeof(U));
                   else if (step[1] == 0) std::fill(o, o + n, *i);
                   else for (int64_t j = 0; j < n; ++j) o[j] = i[j * step[1]];
                 });
  });
}

}  // namespace tessel::host_util
