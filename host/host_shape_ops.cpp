// Shape and data-movement ops on host tensors: Shape, Size, the views (Reshape, Flatten,
// Squeeze, Unsqueeze, Dropout), Concat, Split, Slice, Transpose, Expand, Tile, Pad, ConstantOfShape,
// Range, Constant. Elements move as bytes, so every element type works; the output shapes
// come from inference and are not derived again here.
#include <algorithm>
#include <optional>

#include "graph/infer/pad_geometry.h"
#include "graph/infer/shape_inference.h"
#include "graph/infer/slice_geometry.h"
#include "host/host_op_families.h"
#include "host/host_op_util.h"

namespace tessel {
namespace {

using namespace host_util;


/// The input's elements under the inferred output shape. A copy, not a view, so whoever
/// owns the output may write to it.
std::vector<Tensor> same_elements(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  const Shape &shape = call.output_types.at(0).shape;
  if (shape_numel(shape) != in.numel())
    fail("the output shape " + shape_to_string(shape) + " does not hold the " + std::to_string(in.numel()) +
         " elements of the input " + shape_to_string(in.shape()));
  return single(in.clone().reshaped(shape));
}

/// Copies `in` into `out` along `axis` from position `offset`: the pieces of Concat.
/// Both are row-major, so each of the outer rows is one contiguous run of bytes.
void copy_along_axis(const Tensor &from, int64_t from_offset, Tensor &to, int64_t to_offset, int64_t axis,
                     int64_t length) {
  const size_t element = dtype_size(from.dtype());
  const int64_t outer = dims_product(from.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = dims_product(from.shape(), static_cast<size_t>(axis) + 1, from.shape().size());
  const int64_t from_row = from.shape()[axis] * inner, to_row = to.shape()[axis] * inner;
  const auto *src = static_cast<const uint8_t *>(from.data());
  auto *dst = static_cast<uint8_t *>(to.data());
  const size_t run = static_cast<size_t>(length * inner) * element;
  if (run == 0) return;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + (o * to_row + to_offset * inner) * element, src + (o * from_row + from_offset * inner) * element,
                run);
}

std::vector<Tensor> concat(const HostCall &call) {
  Tensor out = new_output(call);
  const int64_t rank = out.rank();
  if (rank == 0) fail("cannot concatenate scalars");
  const int64_t axis = normalize_axis(call.node.attributes.get_int("axis", call.opset < 4 ? 1 : 0), rank);
  int64_t offset = 0;
  for (const Tensor *in : call.inputs) {
    if (!in) continue;
    if (in->dtype() != out.dtype() || in->rank() != rank)
      fail("input " + in->type().to_string() + " does not match the output " + out.type().to_string());
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && in->shape()[d] != out.shape()[d])
        fail("input " + shape_to_string(in->shape()) + " differs from the output " + shape_to_string(out.shape()) +
             " outside axis " + std::to_string(axis));
    if (offset + in->shape()[axis] > out.shape()[axis]) fail("the inputs are longer than the output along the axis");
    copy_along_axis(*in, 0, out, offset, axis, in->shape()[axis]);
    offset += in->shape()[axis];
  }
  if (offset != out.shape()[axis]) fail("the inputs do not fill the output along the axis");
  return single(out);
}

/// Split: the pieces' lengths are the inferred outputs' (from `split`, num_outputs or an
/// even split).
std::vector<Tensor> split(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  const int64_t axis = normalize_axis(call.node.attributes.get_int("axis", 0), in.rank());
  std::vector<Tensor> outputs;
  int64_t offset = 0;
  for (size_t k = 0; k < call.output_types.size(); ++k) {
    Tensor out = new_output(call, k);
    require_dtype(out, in.dtype(), "an output");
    for (int64_t d = 0; d < in.rank(); ++d)
      if (d != axis && (out.rank() != in.rank() || out.shape()[d] != in.shape()[d]))
        fail("output " + std::to_string(k) + " " + shape_to_string(out.shape()) + " does not fit the input " +
             shape_to_string(in.shape()));
    const int64_t length = out.shape()[axis];
    if (offset + length > in.shape()[axis]) fail("the outputs are longer than the input along the axis");
    copy_along_axis(in, offset, out, 0, axis, length);
    offset += length;
    outputs.push_back(out);
  }
  return outputs;
}

std::vector<Tensor> slice(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  const SliceLists lists = call.opset < 10 ? slice_lists_from_attributes(call.node.attributes)
                                           : SliceLists{ints_input(call, 1), ints_input(call, 2), ints_input(call, 3),
                                                        ints_input(call, 4)};
  Result<SliceGeometry> g = slice_geometry(in.shape(), lists);
  if (!g) fail(g.error().message);
  Tensor out = new_output(call);
  if (out.shape() != g->out)
    fail("the slice gives " + shape_to_string(g->out) + ", inference " + shape_to_string(out.shape()));
  const std::vector<int64_t> in_strides = shape_strides(in.shape());
  std::vector<int64_t> strides(in_strides.size());
  int64_t base = 0;
  for (size_t d = 0; d < in_strides.size(); ++d) {
    base += g->start[d] * in_strides[d];
    strides[d] = g->step[d] * in_strides[d];
  }
  strided_copy(in, strides, base, out);
  return single(out);
}

std::vector<Tensor> transpose(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  std::vector<int64_t> perm = call.node.attributes.get_ints("perm");
  if (perm.empty())
    for (int64_t d = in.rank() - 1; d >= 0; --d) perm.push_back(d);
  std::vector<bool> seen(static_cast<size_t>(in.rank()), false);
  if (static_cast<int64_t>(perm.size()) != in.rank())
    fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(in.rank()));
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[p]) fail("perm is not a permutation of the input's axes");
    seen[p] = true;
  }
  // Read the input through permuted strides: out[i] = in[i permuted back].
  const std::vector<int64_t> in_strides = shape_strides(in.shape());
  std::vector<int64_t> strides;
  for (int64_t p : perm) strides.push_back(in_strides[p]);
  Tensor out = new_output(call);
  for (size_t d = 0; d < perm.size(); ++d)
    if (out.rank() != in.rank() || out.shape()[d] != in.shape()[perm[d]]) fail("the output shape does not match perm");
  strided_copy(in, strides, 0, out);
  return single(out);
}

std::vector<Tensor> expand(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  Tensor out = new_output(call);
  strided_copy(in, broadcast_strides(in.shape(), out.shape()), 0, out);
  return single(out);
}

/// Tile: output axis d of length reps * dim is read as [reps, dim] with the repeat axis
/// at stride 0, so the output is one strided copy over [r0, d0, r1, d1, ...].
std::vector<Tensor> tile(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  const std::vector<int64_t> repeats = ints_input(call, 1);
  if (static_cast<int64_t>(repeats.size()) != in.rank()) fail("repeats must have one entry per input axis");
  Tensor out = new_output(call);
  const std::vector<int64_t> in_strides = shape_strides(in.shape());
  Shape split_shape;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0 || out.shape()[d] != repeats[d] * in.shape()[d]) fail("repeats do not match the output shape");
    split_shape.insert(split_shape.end(), {repeats[d], in.shape()[d]});
    strides.insert(strides.end(), {0, in_strides[d]});
  }
  Tensor view = out.reshaped(split_shape);  // shares out's bytes
  strided_copy(in, strides, 0, view);
  return single(out);
}

/// The fill value of a constant Pad: input 2 from opset 11, attribute `value` before.
Tensor pad_fill(const HostCall &call, DType dtype) {
  Tensor fill(dtype, {});
  if (call.opset >= 11) {
    const Tensor *value = optional_input(call, 2);
    if (value && value->numel() > 0) {
      if (value->dtype() != dtype)
        fail("constant_value has type " + dtype_name(value->dtype()) + ", data " + dtype_name(dtype));
      std::memcpy(fill.data(), value->data(), dtype_size(dtype));
    }
  } else {
    fill.set_element_from_double(0, call.node.attributes.get_float("value", 0.0f));
  }
  return fill;
}

/// Pad in every mode: per axis, a table of the input position each output position reads
/// (-1 for the constant border).
std::vector<Tensor> pad(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  const int64_t rank = in.rank();
  const std::string mode = call.node.attributes.get_string("mode", "constant");
  const std::vector<int64_t> pads = call.opset >= 11 ? ints_input(call, 1) : pads_from_attributes(call.node.attributes);
  std::optional<std::vector<int64_t>> axes;
  if (call.opset >= 18 && optional_input(call, 3)) axes = ints_input(call, 3);
  Result<std::vector<int64_t>> full = full_pads(pads, axes, rank);
  if (!full) fail(full.error().message);
  Tensor out = new_output(call);
  require_dtype(out, in.dtype(), "the output");
  if (out.rank() != rank) fail("the output has the wrong rank");

  std::vector<std::vector<int64_t>> source(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t extent = in.shape()[d], begin = full.value()[d];
    for (int64_t o = 0; o < out.shape()[d]; ++o) {
      const int64_t x = o - begin;
      int64_t s = x;
      if (x < 0 || x >= extent) {
        if (mode == "constant") {
          s = -1;
        } else if (extent == 0) {
          fail(mode + " padding of an empty axis");
        } else if (mode == "edge") {
          s = std::clamp<int64_t>(x, 0, extent - 1);
        } else if (mode == "wrap") {
          s = ((x % extent) + extent) % extent;
        } else if (mode == "reflect") {
          // Mirrored at the borders without repeating the edge, periodically beyond.
          if (extent == 1) {
            s = 0;
          } else {
            const int64_t period = 2 * (extent - 1);
            const int64_t m = ((x % period) + period) % period;
            s = m >= extent ? period - m : m;
          }
        } else {
          fail("unknown mode '" + mode + "'");
        }
      }
      source[d].push_back(s);
    }
  }
  const Tensor fill = pad_fill(call, in.dtype());
  const std::vector<int64_t> in_strides = shape_strides(in.shape());
  visit_by_size(in.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U *src = in.data_as<U>();
    const U border = fill.data_as<U>()[0];
    U *dst = out.data_as<U>();
    const int64_t n = out.numel();
    if (n == 0) return;
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t from = 0;
      bool inside = true;
      for (int64_t d = 0; d < rank && inside; ++d) {
        const int64_t s = source[d][index[d]];
        inside = s >= 0;
        from += s * in_strides[d];
      }
      dst[i] = inside ? src[from] : border;
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < out.shape()[d]) break;
        index[d] = 0;
      }
    }
  });
  return single(out);
}

std::vector<Tensor> constant_of_shape(const HostCall &call) {
  Tensor out = new_output(call);
  if (!call.node.attributes.has("value")) return single(out);  // zeros
  const Tensor &value = call.node.attributes.get_tensor("value");
  if (value.numel() != 1 || value.dtype() != out.dtype()) fail("value must be one element of the output's type");
  visit_by_size(out.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U *dst = out.data_as<U>();
    std::fill(dst, dst + out.numel(), value.data_as<U>()[0]);
  });
  return single(out);
}

/// Range: start + i * delta; floats in double so float32 rounds once, integers in int64.
std::vector<Tensor> range(const HostCall &call) {
  const Tensor &start = required_input(call, 0), &delta = required_input(call, 2);
  if (start.numel() != 1 || delta.numel() != 1) fail("start and delta must be scalars");
  Tensor out = new_output(call);
  visit_numeric(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *dst = out.data_as<T>();
    const int64_t n = out.numel();
    if constexpr (std::is_floating_point_v<T>) {
      const double s = start.element_as_double(0), d = delta.element_as_double(0);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(s + static_cast<double>(i) * d);
    } else {
      const int64_t s = start.element_as_int64(0), d = delta.element_as_int64(0);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(wrapping_add(s, wrapping_mul(i, d)));
    }
  });
  return single(out);
}

}  // namespace

void register_shape_host_ops() {
  register_host_op("Shape", [](const HostCall &call) {
    return single(shape_node_value(call.node, required_input(call, 0).shape()));
  });
  register_host_op("Size", [](const HostCall &call) {
    return single(Tensor::from_int64s({required_input(call, 0).numel()}));
  });
  for (const char *op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) register_host_op(op, same_elements);
  // Inference only (graph/infer refuses training with a nonzero ratio): the input, and a
  // mask that keeps everything.
  register_host_op("Dropout", [](const HostCall &call) {
    std::vector<Tensor> outputs = single(required_input(call, 0).clone());
    if (call.output_types.size() > 1) {
      Tensor mask = new_output(call, 1);
      std::fill(mask.data_as<uint8_t>(), mask.data_as<uint8_t>() + mask.numel(), uint8_t{1});
      outputs.push_back(mask);
    }
    return outputs;
  });
  register_host_op("Constant", [](const HostCall &call) {
    Result<Tensor> value = constant_node_value(call.node);
    if (!value) fail(value.error().message);
    return single(value.value().clone());
  });
  register_host_op("Concat", concat);
  register_host_op("Split", split);
  register_host_op("Slice", slice);
  register_host_op("Transpose", transpose);
  register_host_op("Expand", expand);
  register_host_op("Tile", tile);
  register_host_op("Pad", pad);
  register_host_op("ConstantOfShape", constant_of_shape);
  register_host_op("Range", in_float32(range));
}

}  // namespace tessel
