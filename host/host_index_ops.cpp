// Indexing ops on host tensors: Gather, GatherElements, GatherND, ScatterElements (and the
// old Scatter), ScatterND, OneHot. Negative indices count from the end; an index outside
// its axis is an error naming it (the compiled kernels clamp instead, which ONNX leaves
// undefined), never a read or write out of bounds.
#include <algorithm>

#include "host/host_op_families.h"
#include "host/host_op_util.h"

namespace tessel {
namespace {

using namespace host_util;


/// An index read from data, made non-negative and checked against an axis of `extent`.
int64_t checked_index(int64_t index, int64_t extent, const char *what) {
  const int64_t i = index < 0 ? index + extent : index;
  if (i < 0 || i >= extent)
    fail(std::string(what) + " " + std::to_string(index) + " is out of range for an axis of size " +
         std::to_string(extent));
  return i;
}

std::vector<int64_t> index_values(const Tensor &indices) {
  if (indices.dtype() != DType::Int32 && indices.dtype() != DType::Int64)
    fail("indices must be int32 or int64, got " + dtype_name(indices.dtype()));
  return indices.to_int64_vector();
}

std::vector<Tensor> gather(const HostCall &call) {
  const Tensor &data = required_input(call, 0), &indices = required_input(call, 1);
  if (data.rank() == 0) fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(call.node.attributes.get_int("axis", 0), data.rank());
  const std::vector<int64_t> index = index_values(indices);
  Tensor out = new_output(call);
  require_dtype(out, data.dtype(), "the output");
  // data viewed as [outer, extent, inner]; out as [outer, count, inner].
  const int64_t outer = dims_product(data.shape(), 0, static_cast<size_t>(axis));
  const int64_t extent = data.shape()[axis];
  const int64_t inner = dims_product(data.shape(), static_cast<size_t>(axis) + 1, data.shape().size());
  const int64_t count = static_cast<int64_t>(index.size());
  if (out.numel() != outer * count * inner) fail("the output shape does not match data and indices");
  std::vector<int64_t> rows(index.size());
  for (size_t k = 0; k < index.size(); ++k) rows[k] = checked_index(index[k], extent, "index");
  const size_t element = dtype_size(data.dtype());
  const size_t run = static_cast<size_t>(inner) * element;
  const auto *src = static_cast<const uint8_t *>(data.data());
  auto *dst = static_cast<uint8_t *>(out.data());
  if (run == 0) return single(out);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < count; ++k)
      std::memcpy(dst + static_cast<size_t>(o * count + k) * run, src + static_cast<size_t>(o * extent + rows[k]) * run,
                  run);
  return single(out);
}

std::vector<Tensor> gather_elements(const HostCall &call) {
  const Tensor &data = required_input(call, 0), &indices = required_input(call, 1);
  if (data.rank() == 0 || data.rank() != indices.rank()) fail("data and indices must have the same rank >= 1");
  const int64_t axis = normalize_axis(call.node.attributes.get_int("axis", 0), data.rank());
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.shape()[d] > data.shape()[d])
      fail("indices " + shape_to_string(indices.shape()) + " exceed data " + shape_to_string(data.shape()) +
           " on axis " + std::to_string(d));
  const std::vector<int64_t> index = index_values(indices);
  Tensor out = new_output(call);
  require_dtype(out, data.dtype(), "the output");
  if (out.shape() != indices.shape()) fail("the output shape must be the indices' shape");
  const std::vector<int64_t> data_strides = shape_strides(data.shape());
  std::vector<int64_t> along = data_strides;  // the axis itself is addressed by the index
  along[axis] = 0;
  const int64_t extent = data.shape()[axis], axis_stride = data_strides[axis];
  visit_by_size(data.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U *src = data.data_as<U>();
    U *dst = out.data_as<U>();
    walk_rows<2>(indices.shape(), {shape_strides(indices.shape()), along}, {0, 0},
                 [&](const std::array<int64_t, 2> &at, const std::array<int64_t, 2> &step, int64_t n) {
                   for (int64_t j = 0; j < n; ++j) {
                     const int64_t i = checked_index(index[at[0] + j], extent, "index");
                     dst[at[0] + j] = src[at[1] + j * step[1] + i * axis_stride];
                   }
                 });
  });
  return single(out);
}

std::vector<Tensor> gather_nd(const HostCall &call) {
  const Tensor &data = required_input(call, 0), &indices = required_input(call, 1);
  const int64_t r = data.rank(), q = indices.rank();
  const int64_t batch_dims = call.node.attributes.get_int("batch_dims", 0);
  if (r < 1 || q < 1) fail("data and indices must have rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(r, q)) fail("batch_dims must be in [0, min(rank(data), rank(indices)))");
  for (int64_t d = 0; d < batch_dims; ++d)
    if (data.shape()[d] != indices.shape()[d]) fail("batch dimension " + std::to_string(d) + " differs");
  const int64_t m = indices.shape().back();
  if (m < 1 || m > r - batch_dims) fail("the last dimension of indices must be in [1, rank(data) - batch_dims]");
  const std::vector<int64_t> index = index_values(indices);
  Tensor out = new_output(call);
  require_dtype(out, data.dtype(), "the output");
  const int64_t batches = dims_product(data.shape(), 0, static_cast<size_t>(batch_dims));
  const int64_t batch_block = dims_product(data.shape(), static_cast<size_t>(batch_dims), data.shape().size());
  const int64_t tuples = dims_product(indices.shape(), static_cast<size_t>(batch_dims), indices.shape().size() - 1);
  const int64_t slice = dims_product(data.shape(), static_cast<size_t>(batch_dims + m), data.shape().size());
  if (out.numel() != batches * tuples * slice) fail("the output shape does not match data and indices");
  const std::vector<int64_t> data_strides = shape_strides(data.shape());
  const size_t element = dtype_size(data.dtype());
  const auto *src = static_cast<const uint8_t *>(data.data());
  auto *dst = static_cast<uint8_t *>(out.data());
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t *tuple = index.data() + (b * tuples + t) * m;
      int64_t from = b * batch_block;
      for (int64_t j = 0; j < m; ++j)
        from += checked_index(tuple[j], data.shape()[batch_dims + j], "index") * data_strides[batch_dims + j];
      const size_t to = static_cast<size_t>((b * tuples + t) * slice) * element;
      std::memcpy(dst + to, src + static_cast<size_t>(from) * element, static_cast<size_t>(slice) * element);
    }
  }
  return single(out);
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction read_reduction(const HostCall &call) {
  const std::string r = call.node.attributes.get_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  fail("unsupported reduction '" + r + "'");
}

/// How an update meets the value already there; on bool, add and max are or, mul and min and.
template <typename T>
T combine(Reduction reduction, T current, T update, bool is_bool) {
  switch (reduction) {
    case Reduction::None: return update;
    case Reduction::Add: return is_bool ? T(current || update) : wrapping_add(current, update);
    case Reduction::Mul: return is_bool ? T(current && update) : wrapping_mul(current, update);
    case Reduction::Max: return is_bool ? T(current || update) : std::max(current, update);
    case Reduction::Min: return is_bool ? T(current && update) : std::min(current, update);
  }
  return update;
}

/// Output = data, then every update applied in row-major order (duplicates in turn). The
/// element type matters only with a reduction.
std::vector<Tensor> scatter_elements(const HostCall &call) {
  const Tensor &data = required_input(call, 0), &indices = required_input(call, 1), &updates = required_input(call, 2);
  if (data.rank() == 0 || indices.rank() != data.rank() || updates.shape() != indices.shape())
    fail("indices and updates must share a shape of data's rank");
  if (updates.dtype() != data.dtype()) fail("updates and data have different types");
  const int64_t axis = normalize_axis(call.node.attributes.get_int("axis", 0), data.rank());
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.shape()[d] > data.shape()[d])
      fail("indices " + shape_to_string(indices.shape()) + " exceed data " + shape_to_string(data.shape()) +
           " on axis " + std::to_string(d));
  const Reduction reduction = read_reduction(call);
  const std::vector<int64_t> index = index_values(indices);
  Tensor out = data.clone();
  if (!(out.type() == call.output_types.at(0))) fail("the output type must be data's");
  const std::vector<int64_t> data_strides = shape_strides(data.shape());
  std::vector<int64_t> along = data_strides;
  along[axis] = 0;
  const int64_t extent = data.shape()[axis], axis_stride = data_strides[axis];
  const bool is_bool = data.dtype() == DType::Bool;
  visit_dtype(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *src = updates.data_as<T>();
    T *dst = out.data_as<T>();
    walk_rows<2>(indices.shape(), {shape_strides(indices.shape()), along}, {0, 0},
                 [&](const std::array<int64_t, 2> &at, const std::array<int64_t, 2> &step, int64_t n) {
                   for (int64_t j = 0; j < n; ++j) {
                     const int64_t i = checked_index(index[at[0] + j], extent, "index");
                     T &target = dst[at[1] + j * step[1] + i * axis_stride];
                     target = combine(reduction, target, src[at[0] + j], is_bool);
                   }
                 });
  });
  return single(out);
}

std::vector<Tensor> scatter_nd(const HostCall &call) {
  const Tensor &data = required_input(call, 0), &indices = required_input(call, 1), &updates = required_input(call, 2);
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) fail("data and indices must have rank >= 1");
  if (updates.dtype() != data.dtype()) fail("updates and data have different types");
  const int64_t k = indices.shape().back();
  if (k < 1 || k > r) fail("the last dimension of indices must be in [1, rank(data)]");
  Shape expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != expected)
    fail("updates " + shape_to_string(updates.shape()) + " must have shape " + shape_to_string(expected));
  const Reduction reduction = read_reduction(call);
  const std::vector<int64_t> index = index_values(indices);
  Tensor out = data.clone();
  if (!(out.type() == call.output_types.at(0))) fail("the output type must be data's");
  const int64_t tuples = dims_product(indices.shape(), 0, indices.shape().size() - 1);
  const int64_t slice = dims_product(data.shape(), static_cast<size_t>(k), data.shape().size());
  const std::vector<int64_t> data_strides = shape_strides(data.shape());
  const bool is_bool = data.dtype() == DType::Bool;
  visit_dtype(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *src = updates.data_as<T>();
    T *dst = out.data_as<T>();
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t to = 0;
      for (int64_t j = 0; j < k; ++j) to += checked_index(index[t * k + j], data.shape()[j], "index") * data_strides[j];
      for (int64_t s = 0; s < slice; ++s) dst[to + s] = combine(reduction, dst[to + s], src[t * slice + s], is_bool);
    }
  });
  return single(out);
}

/// OneHot(indices, depth, values): `on` where the (truncated, wrapped) index equals the
/// position along the new axis, `off` elsewhere; an index outside [-depth, depth) is all off.
std::vector<Tensor> one_hot(const HostCall &call) {
  const Tensor &indices = required_input(call, 0), &depth_value = required_input(call, 1),
               &values = required_input(call, 2);
  if (depth_value.numel() != 1) fail("depth must hold one value");
  if (values.numel() != 2) fail("values must hold [off, on]");
  Tensor out = new_output(call);
  const int64_t rank = indices.rank();
  int64_t axis = call.node.attributes.get_int("axis", -1);
  if (axis < -(rank + 1) || axis > rank) fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank + 1;
  require_dtype(out, values.dtype(), "the output");
  if (out.rank() != rank + 1) fail("the output must have one axis more than the indices");
  const int64_t depth = out.shape()[axis];
  if (out.numel() != indices.numel() * depth) fail("the output shape does not match the indices");
  const int64_t outer = dims_product(indices.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = dims_product(indices.shape(), static_cast<size_t>(axis), indices.shape().size());
  visit_by_size(out.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U off = values.data_as<U>()[0], on = values.data_as<U>()[1];
    U *dst = out.data_as<U>();
    std::fill(dst, dst + out.numel(), off);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t p = o * inner + i;
        int64_t index = dtype_is_float(indices.dtype()) ? convert_value<int64_t>(indices.element_as_double(p))
                                                         : indices.element_as_int64(p);
        if (index < 0) index += depth;
        if (index >= 0 && index < depth) dst[(o * depth + index) * inner + i] = on;
      }
    }
  });
  return single(out);
}

/// A scatter whose reduction on float16 combines in float32, as the executor's kernels do;
/// without one, elements only move.
HostOpFunction reducing_in_float32(HostOpFunction scatter) {
  const HostOpFunction widened = in_float32(scatter);
  return [scatter, widened](const HostCall &call) {
    return call.node.attributes.get_string("reduction", "none") == "none" ? scatter(call) : widened(call);
  };
}

}  // namespace

void register_index_host_ops() {
  register_host_op("Gather", gather);
  register_host_op("GatherElements", gather_elements);
  register_host_op("GatherND", gather_nd);
  register_host_op("Scatter", scatter_elements);
  register_host_op("ScatterElements", reducing_in_float32(scatter_elements));
  register_host_op("ScatterND", reducing_in_float32(scatter_nd));
  register_host_op("OneHot", one_hot);
}

}  // namespace tessel
