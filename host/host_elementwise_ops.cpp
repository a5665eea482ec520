// Elementwise ops on host tensors: unary math, broadcasting binary arithmetic, comparisons
// and logic, variadic Sum/Mean/Max/Min, Where, Cast, Clip. Integer arithmetic stays in the
// integer type and wraps (shape arithmetic meets INT64_MAX); float32 math runs in float, as
// the executor's kernels do, so both give the same numbers.
#include <algorithm>
#include <cmath>

#include "host/host_op_families.h"
#include "host/host_op_util.h"

namespace tessel {
namespace {

using namespace host_util;

/// out[i] = f(a[ia], b[ib]) over out's index space, with a and b read through `a_strides`
/// and `b_strides` (walk_rows' terms). The common row shapes get loops the compiler can
/// vectorize.
template <typename A, typename B, typename R, typename F>
void binary_with_strides(const Tensor &a, const std::vector<int64_t> &a_strides, const Tensor &b,
                         const std::vector<int64_t> &b_strides, Tensor &out, F f) {
  require_element_size<A>(a, "input A");
  require_element_size<B>(b, "input B");
  require_element_size<R>(out, "the output");
  const A *pa = a.data_as<A>();
  const B *pb = b.data_as<B>();
  R *po = out.data_as<R>();
  walk_rows<3>(out.shape(), {shape_strides(out.shape()), a_strides, b_strides}, {0, 0, 0},
               [&](const std::array<int64_t, 3> &at, const std::array<int64_t, 3> &step, int64_t n) {
                 R *o = po + at[0];
                 const A *x = pa + at[1];
                 const B *y = pb + at[2];
                 if (step[1] == 1 && step[2] == 1) {
                   for (int64_t j = 0; j < n; ++j) o[j] = f(x[j], y[j]);
                 } else if (step[1] == 1 && step[2] == 0) {
                   const B v = *y;
                   for (int64_t j = 0; j < n; ++j) o[j] = f(x[j], v);
                 } else if (step[1] == 0 && step[2] == 1) {
                   const A v = *x;
                   for (int64_t j = 0; j < n; ++j) o[j] = f(v, y[j]);
                 } else {
                   for (int64_t j = 0; j < n; ++j) o[j] = f(x[j * step[1]], y[j * step[2]]);
                 }
               });
}

/// out = f(a, b) under numpy broadcasting (out has the broadcast shape).
template <typename A, typename B, typename R, typename F>
void broadcast_binary(const Tensor &a, const Tensor &b, Tensor &out, F f) {
  binary_with_strides<A, B, R>(a, broadcast_strides(a.shape(), out.shape()), b,
                               broadcast_strides(b.shape(), out.shape()), out, f);
}

template <typename T, typename R, typename F>
void map_elements(const Tensor &in, Tensor &out, F f) {
  require_element_size<T>(in, "the input");
  require_element_size<R>(out, "the output");
  if (out.numel() != in.numel()) fail("the output shape differs from the input's");
  const T *src = in.data_as<T>();
  R *dst = out.data_as<R>();
  for (int64_t i = 0, n = in.numel(); i < n; ++i) dst[i] = f(src[i]);
}


// ---- Unary ----

/// Attribute values a unary op reads once per call.
struct UnaryParams {
  float alpha = 0, beta = 0, gamma = 0;
};
using ParamReader = UnaryParams (*)(const Attributes &);
UnaryParams no_params(const Attributes &) { return {}; }

/// A float-only unary op: f(x, params) with x of the input's type (float or double), so
/// float32 computes in float.
template <typename F>
void add_float_unary(const std::string &op, F f, ParamReader read = no_params) {
  register_host_op(op, in_float32([f, read](const HostCall &call) {
    const Tensor &in = required_input(call, 0);
    Tensor out = new_output(call);
    const UnaryParams p = read(call.node.attributes);
    visit_float(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, T>(in, out, [&](T x) { return static_cast<T>(f(x, p)); });
    });
    return single(out);
  }));
}

/// A unary op on any numeric type (not bool), computed in that type.
template <typename F>
void add_numeric_unary(const std::string &op, F f) {
  register_host_op(op, in_float32([f](const HostCall &call) {
    const Tensor &in = required_input(call, 0);
    Tensor out = new_output(call);
    visit_numeric(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, T>(in, out, [&](T x) { return static_cast<T>(f(x)); });
    });
    return single(out);
  }));
}

template <typename T>
T clamp01(T v) {
  return std::min(std::max(v, T(0)), T(1));
}

void register_float_unary() {
  add_float_unary("Exp", [](auto x, const UnaryParams &) { return std::exp(x); });
  add_float_unary("Log", [](auto x, const UnaryParams &) { return std::log(x); });
  add_float_unary("Sqrt", [](auto x, const UnaryParams &) { return std::sqrt(x); });
  add_float_unary("Reciprocal", [](auto x, const UnaryParams &) { return decltype(x)(1) / x; });
  add_float_unary("Floor", [](auto x, const UnaryParams &) { return std::floor(x); });
  add_float_unary("Ceil", [](auto x, const UnaryParams &) { return std::ceil(x); });
  // nearbyint rounds halves to even under the default rounding mode, as ONNX Round does.
  add_float_unary("Round", [](auto x, const UnaryParams &) { return std::nearbyint(x); });
  add_float_unary("Sigmoid", [](auto x, const UnaryParams &) {
    using T = decltype(x);
    return T(1) / (T(1) + std::exp(-x));
  });
  add_float_unary("Tanh", [](auto x, const UnaryParams &) { return std::tanh(x); });
  add_float_unary("Erf", [](auto x, const UnaryParams &) { return std::erf(x); });
  add_float_unary("Sin", [](auto x, const UnaryParams &) { return std::sin(x); });
  add_float_unary("Cos", [](auto x, const UnaryParams &) { return std::cos(x); });
  add_float_unary("Tan", [](auto x, const UnaryParams &) { return std::tan(x); });
  add_float_unary("Asin", [](auto x, const UnaryParams &) { return std::asin(x); });
  add_float_unary("Acos", [](auto x, const UnaryParams &) { return std::acos(x); });
  add_float_unary("Atan", [](auto x, const UnaryParams &) { return std::atan(x); });
  add_float_unary("Sinh", [](auto x, const UnaryParams &) { return std::sinh(x); });
  add_float_unary("Cosh", [](auto x, const UnaryParams &) { return std::cosh(x); });
  add_float_unary("Asinh", [](auto x, const UnaryParams &) { return std::asinh(x); });
  add_float_unary("Acosh", [](auto x, const UnaryParams &) { return std::acosh(x); });
  add_float_unary("Atanh", [](auto x, const UnaryParams &) { return std::atanh(x); });
  // log(1 + exp(x)) overflows for large x, where it equals x.
  add_float_unary("Softplus", [](auto x, const UnaryParams &) {
    using T = decltype(x);
    return x > T(20) ? x : std::log(T(1) + std::exp(x));
  });
  add_float_unary("Softsign", [](auto x, const UnaryParams &) {
    using T = decltype(x);
    return x / (T(1) + std::abs(x));
  });
  add_float_unary("HardSwish", [](auto x, const UnaryParams &) {
    using T = decltype(x);
    return x * clamp01(x / T(6) + T(0.5));
  });

  add_float_unary(
      "LeakyRelu", [](auto x, const UnaryParams &p) { return x < 0 ? x * decltype(x)(p.alpha) : x; },
      [](const Attributes &a) { return UnaryParams{a.get_float("alpha", 0.01f)}; });
  add_float_unary(
      "HardSigmoid",
      [](auto x, const UnaryParams &p) {
        using T = decltype(x);
        return clamp01(T(p.alpha) * x + T(p.beta));
      },
      [](const Attributes &a) { return UnaryParams{a.get_float("alpha", 0.2f), a.get_float("beta", 0.5f)}; });
  add_float_unary(
      "Elu",
      [](auto x, const UnaryParams &p) {
        using T = decltype(x);
        return x < 0 ? T(p.alpha) * (std::exp(x) - T(1)) : x;
      },
      [](const Attributes &a) { return UnaryParams{a.get_float("alpha", 1.0f)}; });
  add_float_unary(
      "Selu",
      [](auto x, const UnaryParams &p) {
        using T = decltype(x);
        return T(p.gamma) * (x <= 0 ? T(p.alpha) * (std::exp(x) - T(1)) : x);
      },
      [](const Attributes &a) {
        return UnaryParams{a.get_float("alpha", 1.67326319217681884765625f), 0,
                           a.get_float("gamma", 1.05070102214813232421875f)};
      });
  add_float_unary(
      "Celu",
      [](auto x, const UnaryParams &p) {
        using T = decltype(x);
        const T alpha = T(p.alpha);
        return std::max(x, T(0)) + std::min(T(0), alpha * (std::exp(x / alpha) - T(1)));
      },
      [](const Attributes &a) { return UnaryParams{a.get_float("alpha", 1.0f)}; });
  add_float_unary(
      "ThresholdedRelu", [](auto x, const UnaryParams &p) { return x > decltype(x)(p.alpha) ? x : decltype(x)(0); },
      [](const Attributes &a) { return UnaryParams{a.get_float("alpha", 1.0f)}; });
  add_float_unary(
      "Shrink",
      [](auto x, const UnaryParams &p) {
        using T = decltype(x);
        const T lambd = T(p.alpha), bias = T(p.beta);
        return x < -lambd ? x + bias : (x > lambd ? x - bias : T(0));
      },
      [](const Attributes &a) { return UnaryParams{a.get_float("lambd", 0.5f), a.get_float("bias", 0.0f)}; });
}

void register_numeric_unary() {
  add_numeric_unary("Neg", [](auto x) { return wrapping_sub(decltype(x)(0), x); });
  add_numeric_unary("Abs", [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? wrapping_sub(T(0), x) : x;
  });
  add_numeric_unary("Sign", [](auto x) {
    using T = decltype(x);
    return x > T(0) ? T(1) : (x < T(0) ? static_cast<T>(-1) : T(0));
  });
  add_numeric_unary("Relu", [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });

  register_host_op("Not", [](const HostCall &call) {
    const Tensor &in = required_input(call, 0);
    if (in.dtype() != DType::Bool) fail("expects a bool input, got " + dtype_name(in.dtype()));
    Tensor out = new_output(call);
    map_elements<uint8_t, uint8_t>(in, out, [](uint8_t x) { return static_cast<uint8_t>(x == 0); });
    return single(out);
  });
  register_host_op("IsNaN", in_float32([](const HostCall &call) {
    const Tensor &in = required_input(call, 0);
    Tensor out = new_output(call);
    visit_float(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, uint8_t>(in, out, [](T x) { return static_cast<uint8_t>(std::isnan(x)); });
    });
    return single(out);
  }));
  register_host_op("IsInf", in_float32([](const HostCall &call) {
    const Tensor &in = required_input(call, 0);
    Tensor out = new_output(call);
    const bool negative = call.node.attributes.get_int("detect_negative", 1) != 0;
    const bool positive = call.node.attributes.get_int("detect_positive", 1) != 0;
    visit_float(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, uint8_t>(in, out, [&](T x) {
        return static_cast<uint8_t>(std::isinf(x) && ((x > 0 && positive) || (x < 0 && negative)));
      });
    });
    return single(out);
  }));
}

// ---- Casts, Identity, Clip ----

void register_casts_and_clip() {
  const HostOpFunction cast = [](const HostCall &call) {
    return single(cast_tensor(required_input(call, 0), call.output_types.at(0).dtype));
  };
  register_host_op("Cast", cast);
  register_host_op("CastLike", cast);
  // A copy, not a view, so whoever owns the output may write to it.
  register_host_op("Identity", [](const HostCall &call) { return single(required_input(call, 0).clone()); });

  register_host_op("Clip", in_float32([](const HostCall &call) {
    const Tensor &in = required_input(call, 0);
    Tensor out = new_output(call);
    visit_numeric(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      bool has_lo = false, has_hi = false;
      if (call.opset < 11) {
        // Before opset 11 the bounds are float attributes (default: unbounded).
        const float min = call.node.attributes.get_float("min", -INFINITY);
        const float max = call.node.attributes.get_float("max", INFINITY);
        if (!std::isinf(min)) lo = convert_value<T>(min), has_lo = true;
        if (!std::isinf(max)) hi = convert_value<T>(max), has_hi = true;
      } else {
        const Tensor *min = optional_input(call, 1), *max = optional_input(call, 2);
        if (min && min->numel() > 0) {
          if (min->dtype() != in.dtype()) fail("min has type " + dtype_name(min->dtype()) + ", not the input's");
          lo = min->data_as<T>()[0], has_lo = true;
        }
        if (max && max->numel() > 0) {
          if (max->dtype() != in.dtype()) fail("max has type " + dtype_name(max->dtype()) + ", not the input's");
          hi = max->data_as<T>()[0], has_hi = true;
        }
      }
      // max(x, lo) then min(., hi): with lo > hi every element becomes hi, as in numpy.
      map_elements<T, T>(in, out, [&](T x) {
        if (has_lo && x < lo) x = lo;
        if (has_hi && x > hi) x = hi;
        return x;
      });
    });
    return single(out);
  }));
}

// ---- Binary ----

/// C-style integer division (toward zero); x / 0 gives 0 rather than trapping.
template <typename T>
T divide(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return wrapping_sub(T(0), a);  // INT_MIN / -1 overflows
    }
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}

/// ONNX Mod: the sign of the divisor (Python's %) unless fmod, then the dividend's (C's).
template <typename T>
T modulo(T a, T b, bool fmod) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (!fmod && r != 0 && (r < 0) != (b < 0)) r += b;
    return r;
  } else {
    if (b == 0) return (fmod || std::is_unsigned_v<T>) ? a : T(0);
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;  // INT_MIN % -1 overflows
    }
    T r = static_cast<T>(a % b);
    if constexpr (std::is_signed_v<T>) {
      if (!fmod && r != 0 && (r < 0) != (b < 0)) r = static_cast<T>(r + b);
    }
    return r;
  }
}

/// max and min that let NaN through, as numpy's maximum and minimum do.
template <typename T>
T max_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename T>
T min_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return b < a ? b : a;
}

void check_same_dtype(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    fail("inputs have different types " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
}

/// A broadcasting op whose inputs and output share one numeric type: f(a, b, node).
template <typename F>
void add_arithmetic(const std::string &op, F f) {
  register_host_op(op, in_float32([f](const HostCall &call) {
    const Tensor &a = required_input(call, 0), &b = required_input(call, 1);
    check_same_dtype(a, b);
    Tensor out = new_output(call);
    const bool fmod = call.node.attributes.get_int("fmod", 0) != 0;
    visit_numeric(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, T>(a, b, out, [&](T x, T y) { return f(x, y, fmod); });
    });
    return single(out);
  }));
}

/// A broadcasting comparison: bool output, inputs of any one type.
template <typename F>
void add_comparison(const std::string &op, F f) {
  register_host_op(op, in_float32([f](const HostCall &call) {
    const Tensor &a = required_input(call, 0), &b = required_input(call, 1);
    check_same_dtype(a, b);
    Tensor out = new_output(call);
    visit_dtype(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, uint8_t>(a, b, out, [&](T x, T y) { return static_cast<uint8_t>(f(x, y)); });
    });
    return single(out);
  }));
}

template <typename F>
void add_logic(const std::string &op, F f) {
  register_host_op(op, [f](const HostCall &call) {
    const Tensor &a = required_input(call, 0), &b = required_input(call, 1);
    if (a.dtype() != DType::Bool || b.dtype() != DType::Bool)
      fail("expects bool inputs, got " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
    Tensor out = new_output(call);
    broadcast_binary<uint8_t, uint8_t, uint8_t>(
        a, b, out, [&](uint8_t x, uint8_t y) { return static_cast<uint8_t>(f(x != 0, y != 0)); });
    return single(out);
  });
}

std::vector<Tensor> power(const HostCall &call) {
  const Tensor &a = required_input(call, 0), &b = required_input(call, 1);
  Tensor out = new_output(call);
  if (dtype_is_float(out.dtype())) {
    // The exponent takes the base's type, so float32 powers compute in float.
    const Tensor exponent = b.dtype() == a.dtype() ? b : cast_tensor(b, a.dtype());
    visit_float(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, T>(a, exponent, out, [](T x, T y) { return static_cast<T>(std::pow(x, y)); });
    });
  } else {
    // Integer bases: in double, then truncated to the integer type.
    const Tensor base = cast_tensor(a, DType::Float64), exponent = cast_tensor(b, DType::Float64);
    visit_numeric(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<double, double, T>(base, exponent, out,
                                          [](double x, double y) { return convert_value<T>(std::pow(x, y)); });
    });
  }
  return single(out);
}

std::vector<Tensor> bit_shift(const HostCall &call) {
  const Tensor &a = required_input(call, 0), &b = required_input(call, 1);
  check_same_dtype(a, b);
  if (!dtype_is_unsigned_int(a.dtype())) fail("expects unsigned integer inputs, got " + dtype_name(a.dtype()));
  const std::string direction = call.node.attributes.get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") fail("direction must be LEFT or RIGHT, got '" + direction + "'");
  const bool left = direction == "LEFT";
  Tensor out = new_output(call);
  visit_numeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_unsigned_v<T>) {
      broadcast_binary<T, T, T>(a, b, out, [left](T x, T s) {
        // Shifting by the width or more is undefined in C++; every bit leaves.
        if (s >= sizeof(T) * 8) return T(0);
        return static_cast<T>(left ? static_cast<uint64_t>(x) << s : static_cast<uint64_t>(x) >> s);
      });
    }
  });
  return single(out);
}

/// PRelu: x < 0 ? x * slope : x; the slope broadcasts to x, or before opset 7 a 1-D slope
/// of x's channel count is per channel (axis 1).
std::vector<Tensor> prelu(const HostCall &call) {
  const Tensor &x = required_input(call, 0), &slope = required_input(call, 1);
  check_same_dtype(x, slope);
  Tensor out = new_output(call);
  const Shape &xs = x.shape(), &ss = slope.shape();
  std::vector<int64_t> slope_strides;
  if (call.opset < 7 && ss.size() == 1 && xs.size() >= 2 && ss[0] == xs[1] && ss[0] != 1) {
    slope_strides.assign(xs.size(), 0);
    slope_strides[1] = 1;
  } else {
    slope_strides = broadcast_strides(ss, out.shape());
  }
  visit_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_with_strides<T, T, T>(x, broadcast_strides(xs, out.shape()), slope, slope_strides, out,
                                 [](T v, T s) { return v < T(0) ? wrapping_mul(v, s) : v; });
  });
  return single(out);
}

/// Sum, Mean, Max, Min over any number of broadcast inputs, folded left to right.
std::vector<Tensor> variadic(const HostCall &call, const std::string &op) {
  std::vector<const Tensor *> inputs;
  for (const Tensor *t : call.inputs)
    if (t) inputs.push_back(t);
  if (inputs.empty()) fail("needs at least one input");
  Tensor out = new_output(call);
  for (const Tensor *t : inputs) check_same_dtype(*inputs[0], *t);
  strided_copy(*inputs[0], broadcast_strides(inputs[0]->shape(), out.shape()), 0, out);
  visit_numeric(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 1; k < inputs.size(); ++k) {
      // In place: each output element is read once, then written.
      if (op == "Sum" || op == "Mean") broadcast_binary<T, T, T>(out, *inputs[k], out, wrapping_add<T>);
      else if (op == "Max") broadcast_binary<T, T, T>(out, *inputs[k], out, max_of<T>);
      else broadcast_binary<T, T, T>(out, *inputs[k], out, min_of<T>);
    }
    if (op == "Mean") {
      const T n = static_cast<T>(inputs.size());
      T *p = out.data_as<T>();
      for (int64_t i = 0, size = out.numel(); i < size; ++i) {
        if constexpr (std::is_integral_v<T>) {
          // Rounds down, as the executor's integer division does.
          T q = static_cast<T>(p[i] / n);
          if (q * n != p[i] && p[i] < T(0)) q = static_cast<T>(q - 1);
          p[i] = q;
        } else {
          p[i] = p[i] / n;
        }
      }
    }
  });
  return single(out);
}

/// Where(cond, x, y): elements move as they are, whatever their type.
std::vector<Tensor> where(const HostCall &call) {
  const Tensor &cond = required_input(call, 0), &x = required_input(call, 1), &y = required_input(call, 2);
  if (cond.dtype() != DType::Bool) fail("condition must be bool, got " + dtype_name(cond.dtype()));
  check_same_dtype(x, y);
  Tensor out = new_output(call);
  require_dtype(out, x.dtype(), "the output");
  const Shape &shape = out.shape();
  visit_by_size(x.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const uint8_t *c = cond.data_as<uint8_t>();
    const U *px = x.data_as<U>(), *py = y.data_as<U>();
    U *po = out.data_as<U>();
    walk_rows<4>(shape,
                 {shape_strides(shape), broadcast_strides(cond.shape(), shape), broadcast_strides(x.shape(), shape),
                  broadcast_strides(y.shape(), shape)},
                 {0, 0, 0, 0}, [&](const std::array<int64_t, 4> &at, const std::array<int64_t, 4> &step, int64_t n) {
                   for (int64_t j = 0; j < n; ++j)
                     po[at[0] + j] = c[at[1] + j * step[1]] ? px[at[2] + j * step[2]] : py[at[3] + j * step[3]];
                 });
  });
  return single(out);
}

void register_binary() {
  add_arithmetic("Add", [](auto a, auto b, bool) { return wrapping_add(a, b); });
  add_arithmetic("Sub", [](auto a, auto b, bool) { return wrapping_sub(a, b); });
  add_arithmetic("Mul", [](auto a, auto b, bool) { return wrapping_mul(a, b); });
  add_arithmetic("Div", [](auto a, auto b, bool) { return divide(a, b); });
  add_arithmetic("Mod", [](auto a, auto b, bool fmod) { return modulo(a, b, fmod); });
  register_host_op("Pow", in_float32(power));
  register_host_op("BitShift", bit_shift);
  register_host_op("PRelu", in_float32(prelu));

  add_comparison("Equal", [](auto a, auto b) { return a == b; });
  add_comparison("Less", [](auto a, auto b) { return a < b; });
  add_comparison("LessOrEqual", [](auto a, auto b) { return a <= b; });
  add_comparison("Greater", [](auto a, auto b) { return a > b; });
  add_comparison("GreaterOrEqual", [](auto a, auto b) { return a >= b; });
  add_logic("And", [](bool a, bool b) { return a && b; });
  add_logic("Or", [](bool a, bool b) { return a || b; });
  add_logic("Xor", [](bool a, bool b) { return a != b; });

  for (const char *op : {"Sum", "Mean", "Max", "Min"}) {
    const std::string name = op;
    register_host_op(name, in_float32([name](const HostCall &call) { return variadic(call, name); }));
  }
  register_host_op("Where", where);
}

}  // namespace

void register_elementwise_host_ops() {
  register_float_unary();
  register_numeric_unary();
  register_casts_and_clip();
  register_binary();
}

}  // namespace tessel
