// Inference for elementwise and broadcasting ops: unary math, casts, binary arithmetic,
// comparisons and logic, variadic Sum/Mean/Min/Max, Where, Clip, PRelu.
#include "graph/ir/op_registry.h"

namespace tessel {

static std::vector<TensorType> same_as_input0(const InferenceContext &ctx) {
  return {ctx.input(0)};
}

static std::vector<TensorType> broadcast_all(const InferenceContext &ctx, DType out_dtype) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.input_types.size(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!ctx.input(i).rank_known) throw UnknownValue{};
    shapes.push_back(ctx.input(i).shape);
  }
  return {make_type(out_dtype, broadcast_shapes(ctx, shapes))};
}

/// Inputs of a binary op must share a dtype.
static void check_same_dtype(const InferenceContext &ctx, size_t a, size_t b) {
  if (ctx.input(a).dtype != ctx.input(b).dtype)
    ctx.fail("inputs have different types " + dtype_name(ctx.input(a).dtype) + " and " +
             dtype_name(ctx.input(b).dtype));
}

bool prelu_slope_is_per_channel(int64_t opset, const Shape &x, const Shape &slope) {
  return opset < 7 && slope.size() == 1 && x.size() >= 2 && slope[0] == x[1] && slope[0] != 1;
}

void register_elementwise_ops(OpRegistry &r) {
  const char *unary_same_type[] = {
      "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf",
      "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos",
      "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign",
      "ThresholdedRelu", "Shrink", "Not"};
  for (const char *op : unary_same_type) r.add({op, same_as_input0, {}, OpPattern::Elementwise});
  r.add({"IsInf", [](const InferenceContext &ctx) {
           return std::vector<TensorType>{make_type(DType::Bool, ctx.input(0).shape)};
         }, {}, OpPattern::Elementwise});
  r.add({"IsNaN", [](const InferenceContext &ctx) {
           return std::vector<TensorType>{make_type(DType::Bool, ctx.input(0).shape)};
         }, {}, OpPattern::Elementwise});
  r.add({"Cast", [](const InferenceContext &ctx) {
           DType to = dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("to")));
           if (!dtype_is_supported(to)) ctx.fail("unsupported target type " + dtype_name(to));
           TensorType t = ctx.input(0);
           t.dtype = to;
           return std::vector<TensorType>{t};
         }, {}, OpPattern::Elementwise});
  r.add({"CastLike", [](const InferenceContext &ctx) {
           TensorType t = ctx.input(0);
           t.dtype = ctx.input(1).dtype;
           return std::vector<TensorType>{t};
         }, {}, OpPattern::Elementwise});
  r.add({"Clip", same_as_input0, {}, OpPattern::Elementwise});

  const char *arithmetic[] = {"Add", "Sub", "Mul", "Div", "Mod", "BitShift", "And", "Or", "Xor"};
  for (const char *op : arithmetic)
    r.add({op, [](const InferenceContext &ctx) {
             check_same_dtype(ctx, 0, 1);
             return broadcast_all(ctx, ctx.input(0).dtype);
           }, {}, OpPattern::Broadcast});
  r.add({"Pow", [](const InferenceContext &ctx) { return broadcast_all(ctx, ctx.input(0).dtype); }, {},
         OpPattern::Broadcast});
  const char *comparisons[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  for (const char *op : comparisons)
    r.add(with_output_dtype({op, [](const InferenceContext &ctx) {
                               check_same_dtype(ctx, 0, 1);
                               return broadcast_all(ctx, DType::Bool);
                             }, {}, OpPattern::Broadcast},
                            always_dtype(DType::Bool)));
  const char *variadic[] = {"Sum", "Mean", "Min", "Max"};
  for (const char *op : variadic)
    r.add({op, [](const InferenceContext &ctx) {
             for (size_t i = 1; i < ctx.input_types.size(); ++i) check_same_dtype(ctx, 0, i);
             return broadcast_all(ctx, ctx.input(0).dtype);
           }, {}, OpPattern::Broadcast});
  // The condition comes first; the values are of X's type.
  r.add(with_output_dtype({"Where", [](const InferenceContext &ctx) {
                             check_same_dtype(ctx, 1, 2);
                             return broadcast_all(ctx, ctx.input(1).dtype);
                           }, {}, OpPattern::Broadcast},
                          [](const InferenceContext &ctx, size_t) { return ctx.input(1).dtype; }));
  r.add({"PRelu", [](const InferenceContext &ctx) {
           // Opset < 7: a 1-D slope is per channel (axis 1), not numpy-broadcast.
           if (prelu_slope_is_per_channel(ctx.opset, ctx.input(0).shape, ctx.input(1).shape))
             return std::vector<TensorType>{ctx.input(0)};
           // Unidirectional: the slope broadcasts to X.
           auto out = broadcast_all(ctx, ctx.input(0).dtype);
           if (out[0].shape != ctx.input(0).shape)
             ctx.fail("slope " + shape_to_string(ctx.input(1).shape) + " does not broadcast to X " +
                      shape_to_string(ctx.input(0).shape));
           return out;
         }, {}, OpPattern::Broadcast});
}

}  // namespace tessel
