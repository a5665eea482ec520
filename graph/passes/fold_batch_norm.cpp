#include "graph/passes/fold_batch_norm.h"

#include <cmath>

#include "graph/ir/graph_rewriter.h"

namespace tessel {

/// Whether the BN computes Y from its stored statistics (not the batch's): training_mode
/// off, and no statistics outputs, which before opset 14 alone meant training mode.
static bool is_inference_batch_norm(const Graph &g, int bn) {
  if (g.opset >= 14 && g.nodes[bn].attributes.get_int("training_mode", 0) != 0) return false;
  for (size_t i = 1; i < g.node_outputs[bn].size(); ++i)
    if (g.node_outputs[bn][i] != kNoTensor) return false;
  return true;
}

/// A constant 1-D tensor of `length` elements of type `dtype`, or nullptr.
static const Tensor *channel_vector(const Graph &g, int tensor, int64_t length, DType dtype) {
  const Tensor *value = constant_value(g, tensor);
  if (!value || value->dtype() != dtype || value->shape() != Shape{length}) return nullptr;
  return value;
}

Result<Graph> fold_batch_norm(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    const Graph &g = rw.graph();
    for (int bn : rw.order()) {
      const Node &bn_node = g.nodes[bn];
      if (bn_node.op_type != "BatchNormalization" || !bn_node.domain.empty()) continue;
      const std::vector<int> &bn_in = g.node_inputs[bn];
      if (bn_in.size() < 5 || g.node_outputs[bn].empty() || g.node_outputs[bn][0] == kNoTensor) continue;
      if (!is_inference_batch_norm(g, bn)) continue;
      const int conv_out = bn_in[0];
      const int conv = conv_out == kNoTensor ? -1 : rw.producer(conv_out);
      if (conv < 0 || rw.is_removed(conv) || g.nodes[conv].op_type != "Conv" || !g.nodes[conv].domain.empty()) continue;
      // Another reader of the conv's output would need the unnormalized values.
      if (rw.sole_reader(conv_out) != bn || g.node_outputs[conv][0] != conv_out) continue;
      const std::vector<int> &conv_in = g.node_inputs[conv];
      const Tensor *weights = conv_in.size() > 1 ? constant_value(g, conv_in[1]) : nullptr;
      if (!weights || weights->rank() < 1 || !dtype_is_float(weights->dtype())) continue;
      const DType dtype = weights->dtype();
      const int64_t channels = weights->shape()[0];
      const bool has_bias = conv_in.size() > 2 && conv_in[2] != kNoTensor;
      const Tensor *bias = has_bias ? channel_vector(g, conv_in[2], channels, dtype) : nullptr;
      const Tensor *scale = channel_vector(g, bn_in[1], channels, dtype);
      const Tensor *shift = channel_vector(g, bn_in[2], channels, dtype);
      const Tensor *mean = channel_vector(g, bn_in[3], channels, dtype);
      const Tensor *var = channel_vector(g, bn_in[4], channels, dtype);
      if ((has_bias && !bias) || !scale || !shift || !mean || !var) continue;

      const double epsilon = bn_node.attributes.get_float("epsilon", 1e-5f);
      Tensor new_weights(dtype, weights->shape()), new_bias(dtype, {channels});
      const int64_t per_channel = channels > 0 ? weights->numel() / channels : 0;
      for (int64_t m = 0; m < channels; ++m) {
        const double s = scale->element_as_double(m) / std::sqrt(var->element_as_double(m) + epsilon);
        for (int64_t i = m * per_channel; i < (m + 1) * per_channel; ++i)
          new_weights.set_element_from_double(i, weights->element_as_double(i) * s);
        const double b = bias ? bias->element_as_double(m) : 0.0;
        new_bias.set_element_from_double(m, (b - mean->element_as_double(m)) * s + shift->element_as_double(m));
      }
      const std::string base = g.nodes[conv].name.empty() ? g.tensors[conv_out].name : g.nodes[conv].name;
      const int weights_id = rw.add_constant(base + "_bn_weight", std::move(new_weights));
      const int bias_id = rw.add_constant(base + "_bn_bias", std::move(new_bias));
      const int y = g.node_outputs[bn][0];
      rw.set_input(conv, 1, weights_id);
      rw.set_input(conv, 2, bias_id);
      rw.remove_node(bn);
      rw.set_output(conv, 0, y);  // the conv writes the BN's output, so its name survives
    }
    return rw.finish();
  });
}

}  // namespace tessel
