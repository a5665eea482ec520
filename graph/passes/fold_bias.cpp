#include "graph/passes/fold_bias.h"

#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

/// The per-channel value c contributes to output channel m of a rank-`rank` conv output,
/// or false when c is not a per-channel constant (any non-channel dim above 1, or a rank
/// that would broadcast the output wider).
bool per_channel_bias(const Tensor &c, int64_t rank, int64_t channels, std::vector<double> &bias) {
  if (c.rank() > rank) return false;
  const int64_t channel_axis = 1 - (rank - c.rank());  // axis 1 of the output, in c's axes
  int64_t channel_extent = 1;
  for (int64_t d = 0; d < c.rank(); ++d) {
    const int64_t extent = c.shape()[d];
    if (d == channel_axis) {
      if (extent != 1 && extent != channels) return false;
      channel_extent = extent;
    } else if (extent != 1) {
      return false;
    }
  }
  bias.assign(channels, 0.0);
  for (int64_t m = 0; m < channels; ++m) bias[m] = c.element_as_double(channel_extent == 1 ? 0 : m);
  return true;
}

bool fold_into_conv(GraphRewriter &rw, int add, int conv, int conv_out, const Tensor &c) {
  const Graph &g = rw.graph();
  const std::vector<int> &conv_in = g.node_inputs[conv];
  const Tensor *weights = conv_in.size() > 1 ? constant_value(g, conv_in[1]) : nullptr;
  const TensorType &out = g.tensors[conv_out].type;
  if (!weights || weights->rank() < 1 || !out.rank_known || out.shape.size() < 2) return false;
  const DType dtype = weights->dtype();
  if (c.dtype() != dtype || out.dtype != dtype || !dtype_is_float(dtype)) return false;
  const int64_t channels = weights->shape()[0];
  std::vector<double> added;
  if (!per_channel_bias(c, static_cast<int64_t>(out.shape.size()), channels, added)) return false;
  const bool has_bias = conv_in.size() > 2 && conv_in[2] != kNoTensor;
  const Tensor *bias = has_bias ? constant_value(g, conv_in[2]) : nullptr;
  if (has_bias && (!bias || bias->dtype() != dtype || bias->shape() != Shape{channels})) return false;
  Tensor new_bias(dtype, {channels});
  for (int64_t m = 0; m < channels; ++m)
    new_bias.set_element_from_double(m, (bias ? bias->element_as_double(m) : 0.0) + added[m]);
  const int y = g.node_outputs[add][0];
  const std::string base = g.nodes[conv].name.empty() ? g.tensors[conv_out].name : g.nodes[conv].name;
  rw.set_input(conv, 2, rw.add_constant(base + "_folded_bias", std::move(new_bias)));
  rw.remove_node(add);
  rw.set_output(conv, 0, y);  // the conv writes the Add's output, so its name survives
  return true;
}

bool fold_into_gemm(GraphRewriter &rw, int add, int matmul, int c_id, const Tensor &c) {
  const Graph &g = rw.graph();
  const std::vector<int> &mm_in = g.node_inputs[matmul];
  if (g.opset < 7 || mm_in.size() != 2 || mm_in[0] == kNoTensor) return false;
  const TensorType &a = g.tensors[mm_in[0]].type;
  const Tensor *weights = constant_value(g, mm_in[1]);
  // Gemm is strictly 2-D; a batched MatMul stays as it is.
  if (!a.rank_known || a.shape.size() != 2 || !weights || weights->rank() != 2) return false;
  const DType dtype = weights->dtype();
  if (a.dtype != dtype || c.dtype() != dtype || !dtype_is_float(dtype)) return false;
  if (c.shape() != Shape{weights->shape()[1]}) return false;
  const int y = g.node_outputs[add][0];
  rw.node(matmul).op_type = "Gemm";  // alpha = beta = 1, no transposes: A * W + c
  rw.set_input(matmul, 2, c_id);
  rw.remove_node(add);
  rw.set_output(matmul, 0, y);
  return true;
}

}  // namespace

Result<Graph> fold_bias(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    const Graph &g = rw.graph();
    for (int add : rw.order()) {
      if (g.nodes[add].op_type != "Add" || !g.nodes[add].domain.empty() || g.node_inputs[add].size() != 2 ||
          g.node_outputs[add].empty() || g.node_outputs[add][0] == kNoTensor)
        continue;
      for (int side = 0; side < 2; ++side) {
        const int t = g.node_inputs[add][side], c_id = g.node_inputs[add][1 - side];
        const Tensor *c = constant_value(g, c_id);
        const int producer = t == kNoTensor ? -1 : rw.producer(t);
        if (!c || producer < 0 || rw.is_removed(producer) || !g.nodes[producer].domain.empty()) continue;
        // Another reader of the producer's output would need it without the bias.
        if (rw.sole_reader(t) != add || g.node_outputs[producer].size() != 1) continue;
        const Tensor c_value = *c;  // adding tensors may move the constant it points into
        const std::string &op = g.nodes[producer].op_type;
        if (op == "Conv" && fold_into_conv(rw, add, producer, t, c_value)) break;
        if (op == "MatMul" && fold_into_gemm(rw, add, producer, c_id, c_value)) break;
      }
    }
    return rw.finish();
  });
}

}  // namespace tessel
