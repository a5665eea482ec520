#include <Halide.h>

#include <cctype>
#include <cmath>

#include "base/result.h"
#include "compute/op_compute.h"

namespace tessel {

using Halide::Expr;

Expr TensorFunc::at(const std::vector<Expr> &onnx_index) const {
  std::vector<Expr> halide_index(onnx_index.rbegin(), onnx_index.rend());
  return func(halide_index);
}

Halide::Type halide_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return Halide::Float(32);
    case DType::Float64: return Halide::Float(64);
    case DType::Float16: return Halide::Float(16);
    case DType::BFloat16: return Halide::BFloat(16);
    case DType::Int8: return Halide::Int(8);
    case DType::Int16: return Halide::Int(16);
    case DType::Int32: return Halide::Int(32);
    case DType::Int64: return Halide::Int(64);
    case DType::UInt8: return Halide::UInt(8);
    case DType::UInt16: return Halide::UInt(16);
    case DType::UInt32: return Halide::UInt(32);
    case DType::UInt64: return Halide::UInt(64);
    case DType::Bool: return Halide::Bool();
    default: throw TesselException("no Halide type for " + dtype_name(dtype));
  }
}

std::string halide_name(const std::string &name) {
  std::string s = name.empty() ? "f" : name;
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

std::vector<Halide::Var> make_vars(size_t rank, const std::string &prefix) {
  std::vector<Halide::Var> vars;
  for (size_t i = 0; i < rank; ++i) vars.emplace_back(prefix + std::to_string(i));
  return vars;
}

std::vector<Expr> to_exprs(const std::vector<Halide::Var> &vars) {
  return std::vector<Expr>(vars.begin(), vars.end());
}

TensorFunc define_tensor(const std::string &name, DType dtype, const Shape &shape,
                         const std::function<Expr(const std::vector<Expr> &)> &body) {
  TensorFunc out;
  out.func = Halide::Func(halide_name(name));
  out.dtype = dtype;
  out.shape = shape;
  std::vector<Halide::Var> vars = make_vars(shape.size());
  std::vector<Halide::Var> halide_order(vars.rbegin(), vars.rend());
  Expr value = body(to_exprs(vars));
  const Halide::Type want = halide_type(dtype);
  if (value.type() != want) value = Halide::cast(want, value);
  out.func(halide_order) = value;
  return out;
}

Expr broadcast_read(const TensorFunc &in, const std::vector<Expr> &out_index) {
  const size_t out_rank = out_index.size(), rank = in.shape.size();
  std::vector<Expr> index(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Expr &o = out_index[out_rank - rank + i];
    index[i] = in.shape[i] == 1 ? Expr(0) : o;
  }
  return in.at(index);
}

Expr cast_to(DType dtype, Expr e) {
  if (dtype == DType::Bool) return e.type().is_bool() ? e : (e != Halide::Internal::make_zero(e.type()));
  const Halide::Type t = halide_type(dtype);
  if (e.type() == t) return e;
  if (e.type().is_float() && !t.is_float()) {
    // Truncate toward zero, as C and ONNX do; go through 64-bit so large values survive.
    Expr truncated = Halide::trunc(Halide::cast(Halide::Float(64), e));
    if (t.is_uint() && t.bits() == 64) return Halide::cast(t, truncated);
    return Halide::cast(t, Halide::cast(Halide::Int(64), truncated));
  }
  return Halide::cast(t, e);
}

Halide::Type math_type(DType dtype) {
  return dtype == DType::Float64 ? Halide::Float(64) : Halide::Float(32);
}

Expr lowest_value(DType dtype) {
  const Halide::Type t = halide_type(dtype);
  if (t.is_float()) return Halide::cast(t, Expr(-INFINITY));
  return t.min();
}

Expr highest_value(DType dtype) {
  const Halide::Type t = halide_type(dtype);
  if (t.is_float()) return Halide::cast(t, Expr(INFINITY));
  return t.max();
}

void schedule_independent_fold(Halide::Stage update, const std::vector<Halide::Var> &onnx_vars, const Shape &shape,
                               const Halide::RDom &r, bool vectorize_inner, int64_t reduction_count) {
  constexpr int64_t kParallelWork = 1 << 15;  // below this, thread start-up costs more than it saves
  bool vectorized = false;
  if (vectorize_inner && !onnx_vars.empty() && shape.back() >= 8) {
    std::vector<Halide::VarOrRVar> order{onnx_vars.back()};
    for (int k = 0; k < r.dimensions(); ++k) order.emplace_back(r[k]);
    update.reorder(order);
    update.vectorize(onnx_vars.back(), 8, Halide::TailStrategy::GuardWithIf);
    vectorized = true;
  }
  const int64_t out_count = shape_numel(shape);
  if (out_count > 1 && out_count * reduction_count >= kParallelWork) {
    for (size_t k = 0; k < onnx_vars.size(); ++k) {
      if (shape[k] <= 1) continue;
      if (k + 1 < onnx_vars.size() || !vectorized) update.parallel(onnx_vars[k]);
      break;
    }
  }
}

Expr clamp_index(Expr i, int64_t extent) {
  return Halide::clamp(i, 0, static_cast<int>(std::max<int64_t>(extent, 1) - 1));
}

}  // namespace tessel
