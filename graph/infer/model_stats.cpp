#include "graph/infer/model_stats.h"

#include "graph/passes/block_conv_weights.h"
#include "graph/passes/block_nhwc_conv_weights.h"
#include "graph/passes/channels_last_conv.h"

namespace tessel {

int64_t node_flops(const Graph &g, int n) {
  const Node &node = g.nodes[n];
  auto type_of = [&](int t) -> const TensorType * {
    return t == kNoTensor ? nullptr : &g.tensors[t].type;
  };
  const TensorType *out = g.node_outputs[n].empty() ? nullptr : type_of(g.node_outputs[n][0]);
  if (!out || !out->fully_known()) return 0;
  const int64_t out_elems = shape_numel(out->shape);
  const TensorType *a = g.node_inputs[n].size() > 0 ? type_of(g.node_inputs[n][0]) : nullptr;
  const TensorType *b = g.node_inputs[n].size() > 1 ? type_of(g.node_inputs[n][1]) : nullptr;
  if ((node.op_type == "Conv" || node.op_type == "ConvTranspose") && b && b->fully_known() && a && a->fully_known()) {
    // Each output element of Conv reads C/group * kernel elements; ConvTranspose spreads
    // each input element over the kernel instead.
    int64_t kernel = 1;
    for (size_t d = 1; d < b->shape.size(); ++d) kernel *= b->shape[d];
    kernel /= conv_weight_block(node);  // a blocked W's last dim is output channels
    if (node.op_type == "Conv") return 2 * out_elems * kernel;
    return 2 * shape_numel(a->shape) * kernel;
  }
  if (node.op_type == kConvNhwcOp && b && b->fully_known())
    if (const auto w = nhwc_conv_weight_dims(b->shape, conv_weight_block(node)))
      return 2 * out_elems * w->kernel_h * w->kernel_w * w->in_per_group;
  if ((node.op_type == "MatMul" || node.op_type == "Gemm") && a && a->fully_known() && !a->shape.empty()) {
    const int64_t k = node.op_type == "Gemm" && node.attributes.get_int("transA", 0) ? a->shape[0] : a->shape.back();
    return 2 * out_elems * k;
  }
  return out_elems;  // elementwise-like: one op per output element
}

ModelStats compute_model_stats(const Graph &graph) {
  ModelStats stats;
  for (const Node &node : graph.nodes) ++stats.op_histogram[node.op_type];
  for (const TensorInfo &t : graph.tensors)
    if (t.constant && t.constant->numel() > 1) {
      stats.parameter_count += t.constant->numel();
      stats.parameter_bytes += static_cast<int64_t>(t.constant->bytes());
    }
  for (size_t n = 0; n < graph.nodes.size(); ++n) stats.flops += node_flops(graph, static_cast<int>(n));
  return stats;
}

}  // namespace tessel
