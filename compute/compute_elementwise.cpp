// Compute rules for elementwise and broadcasting ops. Float math on float16 runs in
// float32 and rounds once at the end; integer division and modulo follow ONNX (C-style
// truncation for Div, the divisor's sign for Mod unless fmod=1).
#include <Halide.h>

#include <cmath>

#include "compute/op_compute.h"
#include "compute/vector_math.h"
#include "graph/ir/op_registry.h"

namespace tessel {
namespace {

using Halide::Expr;
using Halide::select;

using UnaryBody = std::function<Expr(Expr x, const ComputeContext &ctx)>;

/// Registers an op whose output element is f(input element), computed in math_type for
/// floats (so float16 rounds once) and in the input's own type otherwise.
void add_unary(ComputeRegistry &r, const std::string &op, UnaryBody f, bool float_math = true) {
  r.add(op, [f, float_math](const ComputeContext &ctx) {
    const TensorFunc &in = ctx.input(0);
    const TensorType &out = ctx.output_type(0);
    return std::vector<TensorFunc>{define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      Expr x = in.at(i);
      if (float_math && dtype_is_float(in.dtype)) x = Halide::cast(math_type(in.dtype), x);
      return f(x, ctx);
    })};
  });
}

Expr float_const(const Expr &like, double v) { return Halide::cast(like.type(), Expr(v)); }

/// erf: in float32 on the CPU a rational approximation that vectorizes (vector_math.h);
/// float64 through the C library, on a GPU libdevice's.
Expr erf_expr(Expr x, bool gpu) {
  const bool is_double = x.type().bits() == 64;
  if (!gpu && !is_double) return vector_erf(x);
  const std::string name = std::string(gpu ? "__nv_" : "") + (is_double ? "erf" : "erff");
  return Halide::Internal::Call::make(x.type(), name, {x}, Halide::Internal::Call::PureExtern);
}

/// Integer division truncating toward zero (Halide's own is Euclidean).
Expr trunc_div(Expr a, Expr b) {
  if (a.type().is_float()) return a / b;
  if (a.type().is_uint()) return select(b == 0, Halide::Internal::make_zero(a.type()), a / b);
  Halide::Type u = a.type().with_code(Halide::Type::UInt);
  Expr q = Halide::cast(a.type(), Halide::cast(u, Halide::abs(a)) / Halide::cast(u, Halide::abs(b)));
  return select(b == 0, Halide::Internal::make_zero(a.type()), select((a < 0) != (b < 0), -q, q));
}

Expr onnx_mod(Expr a, Expr b, bool fmod) {
  if (a.type().is_float()) {
    if (fmod) return a - b * Halide::trunc(a / b);
    Expr r = a - b * Halide::floor(a / b);
    return r;
  }
  if (fmod || a.type().is_uint()) return a - b * trunc_div(a, b);
  Expr r = a % b;  // Euclidean: in [0, |b|)
  return select(b == 0, Halide::Internal::make_zero(a.type()), select(r != 0 && b < 0, r + b, r));
}

Expr onnx_pow(Expr a, Expr b, DType out) {
  if (dtype_is_float(out)) {
    Halide::Type t = math_type(out);
    return Halide::pow(Halide::cast(t, a), Halide::cast(t, b));
  }
  // Integer base: compute in double (exact for the magnitudes ONNX tests use).
  return Halide::pow(Halide::cast(Halide::Float(64), a), Halide::cast(Halide::Float(64), b));
}

/// A binary broadcasting op: element = f(a, b) with inputs read through broadcasting.
void add_binary(ComputeRegistry &r, const std::string &op,
                std::function<Expr(Expr, Expr, const ComputeContext &)> f) {
  r.add(op, [f](const ComputeContext &ctx) {
    const TensorFunc &a = ctx.input(0), &b = ctx.input(1);
    const TensorType &out = ctx.output_type(0);
    return std::vector<TensorFunc>{define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      return f(broadcast_read(a, i), broadcast_read(b, i), ctx);
    })};
  });
}

/// Sum/Mean/Min/Max over any number of broadcast inputs.
void add_variadic(ComputeRegistry &r, const std::string &op) {
  r.add(op, [op](const ComputeContext &ctx) {
    const TensorType &out = ctx.output_type(0);
    return std::vector<TensorFunc>{define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      const bool widen = out.dtype == DType::Float16 || out.dtype == DType::BFloat16;
      auto read = [&](size_t k) {
        Expr e = broadcast_read(ctx.input(k), i);
        return widen ? Halide::cast(Halide::Float(32), e) : e;
      };
      Expr acc = read(0);
      for (size_t k = 1; k < ctx.inputs.size(); ++k) {
        if (!ctx.has_input(k)) continue;
        Expr v = read(k);
        if (op == "Sum" || op == "Mean") acc = acc + v;
        else if (op == "Min") acc = Halide::min(acc, v);
        else acc = Halide::max(acc, v);
      }
      if (op == "Mean") acc = acc / Halide::cast(acc.type(), static_cast<int>(ctx.inputs.size()));
      return acc;
    })};
  });
}

}  // namespace

void register_elementwise_compute(ComputeRegistry &r) {
  add_unary(r, "Relu", [](Expr x, auto &) { return Halide::max(x, Halide::Internal::make_zero(x.type())); }, false);
  add_unary(r, "LeakyRelu", [](Expr x, const ComputeContext &c) {
    return select(x < 0, x * float_const(x, c.attrs().get_float("alpha", 0.01f)), x);
  });
  add_unary(r, "Elu", [](Expr x, const ComputeContext &c) {
    return select(x < 0, float_const(x, c.attrs().get_float("alpha", 1.0f)) * (Halide::exp(x) - 1), x);
  });
  add_unary(r, "Selu", [](Expr x, const ComputeContext &c) {
    Expr alpha = float_const(x, c.attrs().get_float("alpha", 1.67326319217681884765625f));
    Expr gamma = float_const(x, c.attrs().get_float("gamma", 1.05070102214813232421875f));
    return gamma * select(x <= 0, alpha * (Halide::exp(x) - 1), x);
  });
  add_unary(r, "Celu", [](Expr x, const ComputeContext &c) {
    Expr alpha = float_const(x, c.attrs().get_float("alpha", 1.0f));
    return Halide::max(x, 0) + Halide::min(0, alpha * (Halide::exp(x / alpha) - 1));
  });
  add_unary(r, "Sigmoid", [](Expr x, auto &) { return 1 / (1 + Halide::exp(-x)); });
  add_unary(r, "HardSigmoid", [](Expr x, const ComputeContext &c) {
    Expr alpha = float_const(x, c.attrs().get_float("alpha", 0.2f)), beta = float_const(x, c.attrs().get_float("beta", 0.5f));
    return Halide::clamp(alpha * x + beta, 0, 1);
  });
  add_unary(r, "HardSwish", [](Expr x, auto &) { return x * Halide::clamp(x / 6 + float_const(x, 0.5), 0, 1); });
  add_unary(r, "Tanh", [](Expr x, const ComputeContext &ctx) {
    return !ctx.gpu && x.type() == Halide::Float(32) ? vector_tanh(x) : Halide::tanh(x);
  });
  add_unary(r, "Erf", [](Expr x, const ComputeContext &ctx) { return erf_expr(x, ctx.gpu); });
  add_unary(r, "Exp", [](Expr x, auto &) { return Halide::exp(x); });
  add_unary(r, "Log", [](Expr x, auto &) { return Halide::log(x); });
  add_unary(r, "Sqrt", [](Expr x, auto &) { return Halide::sqrt(x); });
  add_unary(r, "Reciprocal", [](Expr x, auto &) { return 1 / x; });
  add_unary(r, "Neg", [](Expr x, auto &) { return -x; }, false);
  add_unary(r, "Abs", [](Expr x, auto &) { return x.type().is_uint() ? x : Halide::cast(x.type(), Halide::abs(x)); }, false);
  add_unary(r, "Floor", [](Expr x, auto &) { return Halide::floor(x); });
  add_unary(r, "Ceil", [](Expr x, auto &) { return Halide::ceil(x); });
  add_unary(r, "Round", [](Expr x, auto &) { return Halide::round(x); });  // half to even
  add_unary(r, "Sign", [](Expr x, auto &) {
    Halide::Type t = x.type();
    return select(x > 0, Halide::Internal::make_one(t), select(x < 0, Halide::cast(t, -1), Halide::Internal::make_zero(t)));
  }, false);
  add_unary(r, "Sin", [](Expr x, auto &) { return Halide::sin(x); });
  add_unary(r, "Cos", [](Expr x, auto &) { return Halide::cos(x); });
  add_unary(r, "Tan", [](Expr x, auto &) { return Halide::tan(x); });
  add_unary(r, "Asin", [](Expr x, auto &) { return Halide::asin(x); });
  add_unary(r, "Acos", [](Expr x, auto &) { return Halide::acos(x); });
  add_unary(r, "Atan", [](Expr x, auto &) { return Halide::atan(x); });
  add_unary(r, "Sinh", [](Expr x, auto &) { return Halide::sinh(x); });
  add_unary(r, "Cosh", [](Expr x, auto &) { return Halide::cosh(x); });
  add_unary(r, "Asinh", [](Expr x, auto &) { return Halide::asinh(x); });
  add_unary(r, "Acosh", [](Expr x, auto &) { return Halide::acosh(x); });
  add_unary(r, "Atanh", [](Expr x, auto &) { return Halide::atanh(x); });
  add_unary(r, "Softplus", [](Expr x, auto &) {
    // log(1+exp(x)) without overflow for large x.
    return select(x > 20, x, Halide::log(1 + Halide::exp(x)));
  });
  add_unary(r, "Softsign", [](Expr x, auto &) { return x / (1 + Halide::abs(x)); });
  add_unary(r, "ThresholdedRelu", [](Expr x, const ComputeContext &c) {
    return select(x > float_const(x, c.attrs().get_float("alpha", 1.0f)), x, Halide::Internal::make_zero(x.type()));
  });
  add_unary(r, "Shrink", [](Expr x, const ComputeContext &c) {
    Expr lambd = Halide::cast(x.type(), c.attrs().get_float("lambd", 0.5f));
    Expr bias = Halide::cast(x.type(), c.attrs().get_float("bias", 0.0f));
    return select(x < -lambd, x + bias, select(x > lambd, x - bias, Halide::Internal::make_zero(x.type())));
  });
  add_unary(r, "Not", [](Expr x, auto &) { return !x; }, false);
  add_unary(r, "IsNaN", [](Expr x, auto &) { return Halide::is_nan(x); });
  add_unary(r, "IsInf", [](Expr x, const ComputeContext &c) {
    const bool neg = c.attrs().get_int("detect_negative", 1) != 0, pos = c.attrs().get_int("detect_positive", 1) != 0;
    Expr inf = Halide::is_inf(x);
    return inf && ((x > 0 && pos) || (x < 0 && neg));
  });
  add_unary(r, "Cast", [](Expr x, const ComputeContext &c) { return cast_to(c.output_type(0).dtype, x); }, false);
  add_unary(r, "CastLike", [](Expr x, const ComputeContext &c) { return cast_to(c.output_type(0).dtype, x); }, false);

  r.add("Clip", [](const ComputeContext &ctx) {
    const TensorFunc &in = ctx.input(0);
    const TensorType &out = ctx.output_type(0);
    return std::vector<TensorFunc>{define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      Expr x = in.at(i);
      if (ctx.opset < 11) {
        Halide::Type t = x.type();
        x = Halide::clamp(x, Halide::cast(t, ctx.attrs().get_float("min", -INFINITY)),
                          Halide::cast(t, ctx.attrs().get_float("max", INFINITY)));
        return x;
      }
      if (ctx.has_input(1)) x = Halide::max(x, ctx.input(1).at({}));
      if (ctx.has_input(2)) x = Halide::min(x, ctx.input(2).at({}));
      return x;
    })};
  });

  add_binary(r, "Add", [](Expr a, Expr b, auto &) { return a + b; });
  add_binary(r, "Sub", [](Expr a, Expr b, auto &) { return a - b; });
  add_binary(r, "Mul", [](Expr a, Expr b, auto &) { return a * b; });
  add_binary(r, "Div", [](Expr a, Expr b, auto &) { return trunc_div(a, b); });
  add_binary(r, "Mod", [](Expr a, Expr b, const ComputeContext &c) { return onnx_mod(a, b, c.attrs().get_int("fmod", 0) != 0); });
  add_binary(r, "Pow", [](Expr a, Expr b, const ComputeContext &c) { return onnx_pow(a, b, c.output_type(0).dtype); });
  add_binary(r, "BitShift", [](Expr a, Expr b, const ComputeContext &c) {
    const bool left = c.attrs().get_string("direction", "") == "LEFT";
    Expr shift = Halide::cast(a.type(), b);
    Expr in_range = shift < static_cast<int>(a.type().bits());
    return select(in_range, left ? (a << shift) : (a >> shift), Halide::Internal::make_zero(a.type()));
  });
  add_binary(r, "And", [](Expr a, Expr b, auto &) { return a && b; });
  add_binary(r, "Or", [](Expr a, Expr b, auto &) { return a || b; });
  add_binary(r, "Xor", [](Expr a, Expr b, auto &) { return a != b; });
  add_binary(r, "Equal", [](Expr a, Expr b, auto &) { return a == b; });
  add_binary(r, "Less", [](Expr a, Expr b, auto &) { return a < b; });
  add_binary(r, "Greater", [](Expr a, Expr b, auto &) { return a > b; });
  add_binary(r, "LessOrEqual", [](Expr a, Expr b, auto &) { return a <= b; });
  add_binary(r, "GreaterOrEqual", [](Expr a, Expr b, auto &) { return a >= b; });
  r.add("PRelu", [](const ComputeContext &ctx) {
    const TensorFunc &x = ctx.input(0), &slope = ctx.input(1);
    const TensorType &out = ctx.output_type(0);
    const bool per_channel = prelu_slope_is_per_channel(ctx.opset, x.shape, slope.shape);
    return std::vector<TensorFunc>{define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      Expr v = x.at(i);
      Expr s = per_channel ? slope.at({i[1]}) : broadcast_read(slope, i);
      return select(v < 0, v * s, v);
    })};
  });
  for (const char *op : {"Sum", "Mean", "Min", "Max"}) add_variadic(r, op);

  r.add("Where", [](const ComputeContext &ctx) {
    const TensorType &out = ctx.output_type(0);
    return std::vector<TensorFunc>{define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &i) {
      return select(broadcast_read(ctx.input(0), i), broadcast_read(ctx.input(1), i), broadcast_read(ctx.input(2), i));
    })};
  });
}

}  // namespace tessel
