#pragma once
// Quantized ops at import: QuantizeLinear, DequantizeLinear, MatMulInteger, ConvInteger,
// QLinearMatMul and QLinearConv become casts, float arithmetic and the float MatMul or
// Conv, so they fuse and tune like any other op. Integer products are computed in float64,
// which holds every uint8/int8 product sum exactly; requantization rounds half to even and
// saturates to the output type, as the ONNX spec says.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

bool is_quantized_op(const std::string &op_type);

/// The graph with every top-level quantized node replaced; output names are kept.
Result<Graph> expand_quantized_ops(Graph graph);

}  // namespace tessel
