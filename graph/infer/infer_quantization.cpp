// Inference for the quantization ops (QuantizeLinear, DequantizeLinear, MatMulInteger,
// ConvInteger, QLinearMatMul, QLinearConv). Import expands them into float ops
// (graph/onnx/expand_quantization.h); these rules type them before that.
#include "graph/ir/op_registry.h"

namespace tessel {
namespace {

/// The output of `op` (MatMul or Conv) on the given inputs of this node, taken as float32
/// (their integer types may differ, which the float ops' rules refuse), with dtype `out`.
std::vector<TensorType> infer_as(const char *op, const InferenceContext &ctx, std::vector<size_t> inputs, DType out) {
  std::vector<TensorType> types;
  std::vector<const Tensor *> values;
  for (size_t i : inputs) {
    TensorType t = ctx.input(i);
    t.dtype = DType::Float32;
    types.push_back(t);
    values.push_back(nullptr);
  }
  InferenceContext inner{ctx.node, ctx.opset, types, values, 1};
  std::vector<TensorType> result = find_op_schema(op)->infer(inner);
  result[0].dtype = out;
  return result;
}

/// The quantized type: the zero point's, uint8 without one.
DType quantized_type(const InferenceContext &ctx, size_t zero_point) {
  return ctx.has_input(zero_point) ? ctx.input(zero_point).dtype : DType::UInt8;
}

}  // namespace

void register_quantization_ops(OpRegistry &r) {
  r.add(with_output_dtype({"QuantizeLinear", [](const InferenceContext &ctx) {
                             TensorType t = ctx.input(0);
                             t.dtype = quantized_type(ctx, 2);
                             return std::vector<TensorType>{t};
                           }, {}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t) { return quantized_type(ctx, 2); }));
  r.add(with_output_dtype({"DequantizeLinear", [](const InferenceContext &ctx) {
                             TensorType t = ctx.input(0);
                             t.dtype = ctx.input(1).dtype;
                             return std::vector<TensorType>{t};
                           }, {}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t) { return ctx.input(1).dtype; }));
  r.add(with_output_dtype({"MatMulInteger", [](const InferenceContext &ctx) { return infer_as("MatMul", ctx, {0, 1}, DType::Int32); },
                           {}, OpPattern::Opaque},
                          always_dtype(DType::Int32)));
  r.add(with_output_dtype({"ConvInteger", [](const InferenceContext &ctx) { return infer_as("Conv", ctx, {0, 1}, DType::Int32); },
                           {}, OpPattern::Opaque},
                          always_dtype(DType::Int32)));
  r.add(with_output_dtype({"QLinearMatMul", [](const InferenceContext &ctx) {
                             return infer_as("MatMul", ctx, {0, 3}, ctx.input(7).dtype);
                           }, {}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t) { return ctx.input(7).dtype; }));
  r.add(with_output_dtype({"QLinearConv", [](const InferenceContext &ctx) {
                             return infer_as("Conv", ctx, {0, 3}, ctx.input(7).dtype);
                           }, {}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t) { return ctx.input(7).dtype; }));
}

}  // namespace tessel
