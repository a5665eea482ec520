// Reductions on host tensors: Reduce* (axes read as graph/infer/reduce_axes.h reads them),
// Softmax, LogSoftmax, Hardmax, ArgMax, ArgMin, CumSum. Each output element folds its
// inputs in row-major order, float32 in float, as the executor's kernels fold them, so both
// give the same sums.
#include <algorithm>

#include "graph/infer/reduce_axes.h"
#include "host/host_op_families.h"
#include "host/host_op_util.h"

namespace tessel {
namespace {

using namespace host_util;



/// max and min that let NaN win, as numpy's reductions do.
template <typename T>
T nan_max(T acc, T v) {
  if constexpr (std::is_floating_point_v<T>) return (acc > v || std::isnan(acc)) ? acc : v;
  else return acc > v ? acc : v;
}
template <typename T>
T nan_min(T acc, T v) {
  if constexpr (std::is_floating_point_v<T>) return (acc < v || std::isnan(acc)) ? acc : v;
  else return acc < v ? acc : v;
}

template <typename T>
T lowest() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}
template <typename T>
T highest() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::max();
}

/// acc[k] = step(acc[k], x) for every input element x, where k is the element's position
/// among the kept axes (`acc_strides`: 0 on reduced axes). Rows that fold into one value
/// keep it in a local, so the loop does not store on every step.
template <typename T, typename Acc, typename Step>
void fold(const Tensor &in, const std::vector<int64_t> &acc_strides, std::vector<Acc> &acc, Step step) {
  const T *src = in.data_as<T>();
  walk_rows<2>(in.shape(), {shape_strides(in.shape()), acc_strides}, {0, 0},
               [&](const std::array<int64_t, 2> &at, const std::array<int64_t, 2> &stride, int64_t n) {
                 const T *x = src + at[0];
                 Acc *a = acc.data() + at[1];
                 if (stride[1] == 0) {
                   Acc value = *a;
                   for (int64_t j = 0; j < n; ++j) value = step(value, x[j], at[1]);
                   *a = value;
                 } else {
                   for (int64_t j = 0; j < n; ++j)
                     a[j * stride[1]] = step(a[j * stride[1]], x[j], at[1] + j * stride[1]);
                 }
               });
}

/// The accumulator of a reduction over T: T itself for floats and for integer results that
/// stay integers (wrapping); double where integers go through real math.
template <typename T>
constexpr bool needs_real_math(ReduceKind kind) {
  return std::is_integral_v<T> && (kind == ReduceKind::Mean || kind == ReduceKind::L2 || kind == ReduceKind::LogSum ||
                                   kind == ReduceKind::LogSumExp);
}

template <typename T, typename Acc>
void reduce_typed(ReduceKind kind, const Tensor &in, const std::vector<int64_t> &acc_strides, int64_t count,
                  Tensor &out) {
  const int64_t kept = out.numel();
  Acc init = Acc(0);
  if (kind == ReduceKind::Prod) init = Acc(1);
  if (kind == ReduceKind::Max) init = lowest<Acc>();
  if (kind == ReduceKind::Min) init = highest<Acc>();
  std::vector<Acc> acc(static_cast<size_t>(kept), init);

  // LogSumExp subtracts each row's maximum first so exp cannot overflow; an infinite (or
  // empty) maximum would give NaN, so those rows shift by 0.
  std::vector<Acc> shift;
  if (kind == ReduceKind::LogSumExp) {
    shift.assign(static_cast<size_t>(kept), lowest<Acc>());
    fold<T, Acc>(in, acc_strides, shift, [](Acc a, T x, int64_t) { return nan_max(a, static_cast<Acc>(x)); });
    for (Acc &s : shift)
      if (!std::isfinite(static_cast<double>(s))) s = Acc(0);
  }

  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
    case ReduceKind::LogSum:
      fold<T, Acc>(in, acc_strides, acc, [](Acc a, T x, int64_t) { return wrapping_add(a, static_cast<Acc>(x)); });
      break;
    case ReduceKind::Max:
      fold<T, Acc>(in, acc_strides, acc, [](Acc a, T x, int64_t) { return nan_max(a, static_cast<Acc>(x)); });
      break;
    case ReduceKind::Min:
      fold<T, Acc>(in, acc_strides, acc, [](Acc a, T x, int64_t) { return nan_min(a, static_cast<Acc>(x)); });
      break;
    case ReduceKind::Prod:
      fold<T, Acc>(in, acc_strides, acc, [](Acc a, T x, int64_t) { return wrapping_mul(a, static_cast<Acc>(x)); });
      break;
    case ReduceKind::L1:
      fold<T, Acc>(in, acc_strides, acc, [](Acc a, T x, int64_t) {
        Acc v = static_cast<Acc>(x);
        if constexpr (std::is_signed_v<Acc>) v = v < Acc(0) ? wrapping_sub(Acc(0), v) : v;
        return wrapping_add(a, v);
      });
      break;
    case ReduceKind::L2:
    case ReduceKind::SumSquare:
      fold<T, Acc>(in, acc_strides, acc, [](Acc a, T x, int64_t) {
        const Acc v = static_cast<Acc>(x);
        return wrapping_add(a, wrapping_mul(v, v));
      });
      break;
    case ReduceKind::LogSumExp:
      if constexpr (std::is_floating_point_v<Acc>) {  // integers accumulate in double here
        fold<T, Acc>(in, acc_strides, acc,
                     [&shift](Acc a, T x, int64_t k) { return a + std::exp(static_cast<Acc>(x) - shift[k]); });
      }
      break;
  }

  T *dst = out.data_as<T>();
  for (int64_t k = 0; k < kept; ++k) {
    Acc v = acc[k];
    if constexpr (std::is_floating_point_v<Acc>) {
      switch (kind) {
        case ReduceKind::Mean:
          // The empty mean is 0/0: NaN for floats; integers have no NaN and give 0.
          v = count == 0 ? (std::is_floating_point_v<T> ? std::numeric_limits<Acc>::quiet_NaN() : Acc(0))
                         : v / static_cast<Acc>(count);
          break;
        case ReduceKind::L2: v = std::sqrt(v); break;
        case ReduceKind::LogSum: v = std::log(v); break;
        case ReduceKind::LogSumExp: v = shift[k] + std::log(v); break;
        default: break;
      }
    }
    dst[k] = convert_value<T>(v);
  }
}

std::vector<Tensor> reduce(const HostCall &call, ReduceKind kind) {
  const Tensor &in = required_input(call, 0);
  const Attributes &attrs = call.node.attributes;
  // Axes are the attribute where the node has one, else input 1 (opset 13 / 18 on).
  const std::vector<int64_t> input_axes = attrs.has("axes") ? std::vector<int64_t>{} : ints_input(call, 1);
  Result<std::vector<bool>> mask = reduced_axis_mask(attrs, input_axes, in.rank());
  if (!mask) fail(mask.error().message);
  Tensor out = new_output(call);
  const Shape kept_shape = reduced_shape(in.shape(), mask.value(), false);
  if (shape_numel(kept_shape) != out.numel() || out.dtype() != in.dtype())
    fail("the output type " + out.type().to_string() + " does not match the reduction of " + in.type().to_string());
  // The accumulator holds the kept axes row-major: its strides on the input's axes.
  const std::vector<int64_t> kept_strides = shape_strides(kept_shape);
  std::vector<int64_t> acc_strides;
  int64_t count = 1;
  for (int64_t d = 0, k = 0; d < in.rank(); ++d) {
    if (mask.value()[d]) {
      acc_strides.push_back(0);
      count *= in.shape()[d];
    } else {
      acc_strides.push_back(kept_strides[k++]);
    }
  }

  if (in.dtype() == DType::Bool) {
    // Only max (any) and min (all) are defined on bool.
    if (kind != ReduceKind::Max && kind != ReduceKind::Min)
      fail("bool input is only supported by ReduceMax and ReduceMin");
    std::vector<uint8_t> acc(static_cast<size_t>(out.numel()), kind == ReduceKind::Max ? 0 : 1);
    fold<uint8_t, uint8_t>(in, acc_strides, acc, [kind](uint8_t a, uint8_t x, int64_t) {
      return static_cast<uint8_t>(kind == ReduceKind::Max ? (a || x) : (a && x));
    });
    std::copy(acc.begin(), acc.end(), out.data_as<uint8_t>());
    return single(out);
  }
  visit_numeric(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (needs_real_math<T>(kind)) reduce_typed<T, double>(kind, in, acc_strides, count, out);
    else reduce_typed<T, T>(kind, in, acc_strides, count, out);
  });
  return single(out);
}

/// A tensor seen as [outer, n, inner] around the reduced axis (or block of axes).
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView view_around(const Shape &shape, int64_t axis, bool block_to_end) {
  AxisView v;
  v.outer = dims_product(shape, 0, static_cast<size_t>(axis));
  if (block_to_end) {
    v.n = dims_product(shape, static_cast<size_t>(axis), shape.size());
  } else {
    v.n = shape[axis];
    v.inner = dims_product(shape, static_cast<size_t>(axis) + 1, shape.size());
  }
  return v;
}

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

/// Opset 13 works along one axis (default -1); older opsets flatten [axis, rank) into one
/// row (default axis 1).
std::vector<Tensor> softmax(const HostCall &call, SoftmaxKind kind) {
  const Tensor &in = required_input(call, 0);
  const int64_t axis = normalize_axis(call.node.attributes.get_int("axis", call.opset >= 13 ? -1 : 1), in.rank());
  const AxisView v = view_around(in.shape(), axis, call.opset < 13);
  Tensor out = new_output(call);
  if (!(out.type() == in.type())) fail("the output type must be the input's");
  visit_float(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = in.data_as<T>();
    T *y = out.data_as<T>();
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t base = o * v.n * v.inner + i, step = v.inner;
        if (kind == SoftmaxKind::Hardmax) {
          int64_t best = 0;  // the first maximum
          for (int64_t k = 1; k < v.n; ++k)
            if (x[base + k * step] > x[base + best * step]) best = k;
          for (int64_t k = 0; k < v.n; ++k) y[base + k * step] = k == best ? T(1) : T(0);
          continue;
        }
        T max = lowest<T>();
        for (int64_t k = 0; k < v.n; ++k) max = std::max(max, x[base + k * step]);
        T sum = 0;
        for (int64_t k = 0; k < v.n; ++k) {
          const T e = std::exp(x[base + k * step] - max);
          if (kind == SoftmaxKind::Softmax) y[base + k * step] = e;
          sum += e;
        }
        if (kind == SoftmaxKind::Softmax) {
          for (int64_t k = 0; k < v.n; ++k) y[base + k * step] /= sum;
        } else {
          const T norm = max + std::log(sum);
          for (int64_t k = 0; k < v.n; ++k) y[base + k * step] = x[base + k * step] - norm;
        }
      }
    }
  });
  return single(out);
}

/// ArgMax / ArgMin: the first (or with select_last_index the last) extreme; NaN counts as
/// the extreme, as numpy's argmax treats it.
std::vector<Tensor> arg_reduce(const HostCall &call, bool is_max) {
  const Tensor &in = required_input(call, 0);
  if (in.rank() == 0) fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(call.node.attributes.get_int("axis", 0), in.rank());
  const bool select_last = call.node.attributes.get_int("select_last_index", 0) != 0;
  const AxisView v = view_around(in.shape(), axis, false);
  if (v.n == 0) fail("axis " + std::to_string(axis) + " has size 0; there is no extreme element");
  Tensor out = new_output(call);
  require_dtype(out, DType::Int64, "the output");
  if (out.numel() != v.outer * v.inner) fail("the output shape does not match the input");
  int64_t *dst = out.data_as<int64_t>();
  visit_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = in.data_as<T>();
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const T *row = x + o * v.n * v.inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < v.n; ++k) {
          const T value = row[k * v.inner], current = row[best * v.inner];
          bool better = is_max ? (select_last ? value >= current : value > current)
                               : (select_last ? value <= current : value < current);
          if constexpr (std::is_floating_point_v<T>) {
            const bool value_nan = std::isnan(value), current_nan = std::isnan(current);
            better = select_last ? (value_nan || (!current_nan && better)) : (!current_nan && (value_nan || better));
          }
          if (better) best = k;
        }
        dst[o * v.inner + i] = best;
      }
    }
  });
  return single(out);
}

/// CumSum along the axis given by input 1, in the element type (float32 in float);
/// exclusive sums the elements before each one, reverse runs from the end.
std::vector<Tensor> cumulative_sum(const HostCall &call) {
  const Tensor &in = required_input(call, 0);
  const std::vector<int64_t> axis_value = ints_input(call, 1);
  if (axis_value.size() != 1) fail("axis must hold one value");
  if (in.rank() == 0) fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(axis_value[0], in.rank());
  const bool exclusive = call.node.attributes.get_int("exclusive", 0) != 0;
  const bool reverse = call.node.attributes.get_int("reverse", 0) != 0;
  const AxisView v = view_around(in.shape(), axis, false);
  Tensor out = new_output(call);
  if (!(out.type() == in.type())) fail("the output type must be the input's");
  visit_numeric(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = in.data_as<T>();
    T *y = out.data_as<T>();
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) {
        T sum = 0;
        for (int64_t t = 0; t < v.n; ++t) {
          const int64_t at = o * v.n * v.inner + (reverse ? v.n - 1 - t : t) * v.inner + i;
          if (exclusive) {
            y[at] = sum;
            sum = wrapping_add(sum, x[at]);
          } else {
            sum = wrapping_add(sum, x[at]);
            y[at] = sum;
          }
        }
      }
    }
  });
  return single(out);
}

}  // namespace

void register_reduce_host_ops() {
  for (const auto &[op, kind] : reduce_op_kinds()) {
    const ReduceKind k = kind;
    register_host_op(op, in_float32([k](const HostCall &call) { return reduce(call, k); }));
  }
  for (SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax, SoftmaxKind::Hardmax}) {
    const char *op = kind == SoftmaxKind::Softmax      ? "Softmax"
                     : kind == SoftmaxKind::LogSoftmax ? "LogSoftmax"
                                                       : "Hardmax";
    register_host_op(op, in_float32([kind](const HostCall &call) { return softmax(call, kind); }));
  }
  register_host_op("ArgMax", in_float32([](const HostCall &call) { return arg_reduce(call, true); }));
  register_host_op("ArgMin", in_float32([](const HostCall &call) { return arg_reduce(call, false); }));
  register_host_op("CumSum", in_float32(cumulative_sum));
}

}  // namespace tessel
