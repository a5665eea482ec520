#include "graph/onnx/expand_quantization.h"

#include <limits>

#include "graph/onnx/node_emitter.h"

namespace tessel {
namespace {

int input_or_none(const Graph &g, int n, size_t i) {
  return i < g.node_inputs[n].size() ? g.node_inputs[n][i] : kNoTensor;
}

/// The node's inputs and output with their inferred types, and an emitter of float64 scalars.
struct QuantizedNode {
  const Graph &typed;
  std::vector<int> inputs;
  int output;
  const TensorType &type(int t) const { return typed.tensors[t].type; }
  int input(size_t i) const { return i < inputs.size() ? inputs[i] : kNoTensor; }
};

/// A per-axis parameter (a 1-D scale or zero point of more than one entry) reshaped to
/// broadcast along `axis` of a rank-`rank` tensor; a per-tensor one as it is.
int along_axis(NodeEmitter &e, const QuantizedNode &q, int param, int64_t axis, size_t rank) {
  const TensorType &t = q.type(param);
  if (t.shape.size() != 1 || t.shape[0] == 1) return param;
  std::vector<int64_t> dims(rank, 1);
  dims[axis] = t.shape[0];
  return e.reshape(param, dims);
}

/// (x - zero_point) * scale in float64.
int dequantize(NodeEmitter &e, const QuantizedNode &q, int x, int scale, int zero_point, int64_t axis) {
  const size_t rank = q.type(x).shape.size();
  int value = e.cast(x, DType::Float64);
  if (zero_point != kNoTensor) value = e.sub(value, e.cast(along_axis(e, q, zero_point, axis, rank), DType::Float64));
  return e.mul(value, e.cast(along_axis(e, q, scale, axis, rank), DType::Float64));
}

/// saturate(round(value / scale) + zero_point), computed in `value`'s float type
/// `compute` (the division must round as the spec's float32 one does), cast to `to` and
/// written to `out`.
void quantize(NodeEmitter &e, const QuantizedNode &q, int value, DType compute, int scale, int zero_point, int64_t axis,
              size_t rank, DType to, int out) {
  int scaled = e.op("Round", {e.div(value, e.cast(along_axis(e, q, scale, axis, rank), compute))});
  if (zero_point != kNoTensor) scaled = e.add(scaled, e.cast(along_axis(e, q, zero_point, axis, rank), compute));
  const double lo = to == DType::Int8 ? -128 : to == DType::UInt8 ? 0 : std::numeric_limits<int32_t>::min();
  const double hi = to == DType::Int8 ? 127 : to == DType::UInt8 ? 255 : std::numeric_limits<int32_t>::max();
  e.cast(e.clamp(scaled, e.scalar(compute, lo), e.scalar(compute, hi)), to, out);
}

/// The attributes of a Conv taken from a ConvInteger or QLinearConv node.
Attributes conv_attributes(const Node &node) {
  Attributes a;
  for (const char *name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (node.attributes.has(name)) a.set(name, node.attributes.all().at(name));
  return a;
}

Result<void> expand_quantized(GraphRewriter &rewriter, const Graph &typed, int n) {
  const Node node = rewriter.graph().nodes[n];
  QuantizedNode q{typed, rewriter.graph().node_inputs[n], rewriter.graph().node_outputs[n].at(0)};
  const DType out_type = typed.tensors[q.output].type.dtype;
  const size_t out_rank = typed.tensors[q.output].type.shape.size();
  for (int t : q.inputs)
    if (t != kNoTensor && !q.type(t).rank_known)
      return make_error(ErrorKind::Unsupported, "the rank of input '" + typed.tensors[t].name + "' is not known");
  rewriter.remove_node(n);
  NodeEmitter e(rewriter, node.name, DType::Float64);
  const std::string &op = node.op_type;
  if (op == "QuantizeLinear") {
    const int64_t rank = static_cast<int64_t>(q.type(q.input(0)).shape.size());
    int64_t axis = node.attributes.get_int("axis", 1);
    if (axis < 0) axis += rank;
    const DType x_type = q.type(q.input(0)).dtype;
    const DType compute = dtype_is_float(x_type) ? x_type : DType::Float32;
    const int x = x_type == compute ? q.input(0) : e.cast(q.input(0), compute);
    quantize(e, q, x, compute, q.input(1), q.input(2), axis, rank, out_type, q.output);
  } else if (op == "DequantizeLinear") {
    const int64_t rank = static_cast<int64_t>(q.type(q.input(0)).shape.size());
    int64_t axis = node.attributes.get_int("axis", 1);
    if (axis < 0) axis += rank;
    e.cast(dequantize(e, q, q.input(0), q.input(1), q.input(2), axis), out_type, q.output);
  } else if (op == "MatMulInteger" || op == "ConvInteger") {
    const bool conv = op == "ConvInteger";
    int a = e.cast(q.input(0), DType::Float64), b = e.cast(q.input(1), DType::Float64);
    // A's zero point may be per row (MatMul) ; B's per column, or per output channel (Conv).
    if (q.input(2) != kNoTensor) {
      const size_t rank = q.type(q.input(0)).shape.size();
      a = e.sub(a, e.cast(conv ? q.input(2) : along_axis(e, q, q.input(2), static_cast<int64_t>(rank) - 2, rank), DType::Float64));
    }
    if (q.input(3) != kNoTensor) {
      const size_t rank = q.type(q.input(1)).shape.size();
      b = e.sub(b, e.cast(along_axis(e, q, q.input(3), conv ? 0 : static_cast<int64_t>(rank) - 1, rank), DType::Float64));
    }
    e.cast(conv ? e.op("Conv", {a, b}, conv_attributes(node)) : e.matmul(a, b), DType::Int32, q.output);
  } else {  // QLinearMatMul, QLinearConv
    const bool conv = op == "QLinearConv";
    const size_t w_rank = q.type(q.input(3)).shape.size();
    const int a = dequantize(e, q, q.input(0), q.input(1), q.input(2), 1);
    const int b = dequantize(e, q, q.input(3), q.input(4), q.input(5), conv ? 0 : static_cast<int64_t>(w_rank) - 1);
    int product;
    if (conv) {
      std::vector<int> inputs = {a, b};
      // The int32 bias is quantized with scale x_scale * w_scale and zero point 0.
      if (q.input(8) != kNoTensor)
        inputs.push_back(e.mul(e.mul(e.cast(q.input(8), DType::Float64), e.cast(q.input(1), DType::Float64)),
                               e.cast(q.input(4), DType::Float64)));
      product = e.op("Conv", inputs, conv_attributes(node));
    } else {
      product = e.matmul(a, b);
    }
    quantize(e, q, product, DType::Float64, q.input(6), q.input(7), conv ? 1 : static_cast<int64_t>(out_rank) - 1, out_rank, out_type,
             q.output);
  }
  return {};
}

}  // namespace

bool is_quantized_op(const std::string &op_type) {
  return op_type == "QuantizeLinear" || op_type == "DequantizeLinear" || op_type == "MatMulInteger" ||
         op_type == "ConvInteger" || op_type == "QLinearMatMul" || op_type == "QLinearConv";
}

Result<Graph> expand_quantized_ops(Graph graph) { return expand_nodes(std::move(graph), default_domain(is_quantized_op), expand_quantized); }

}  // namespace tessel
