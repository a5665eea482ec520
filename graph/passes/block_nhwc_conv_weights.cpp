#include "graph/passes/block_nhwc_conv_weights.h"

#include <limits>

#include "graph/ir/graph_rewriter.h"
#include "graph/passes/block_conv_weights.h"
#include "graph/passes/channels_last_conv.h"
#include "graph/passes/panel_matmul_weights.h"

namespace tessel {
namespace {

/// [KH, KW, C/g, M] -> [M / block, KH, KW, C/g, block]: the weight as a matrix
/// [KH * KW * C/g, M] in panels of `block` output channels.
Tensor blocked_hwio(const Tensor &w, int64_t block) {
  const Shape &s = w.shape();
  const int64_t m = s[3], per_channel = s[0] * s[1] * s[2];
  Tensor out(w.dtype(), Shape{m / block, s[0], s[1], s[2], block});
  copy_into_panels(static_cast<const float *>(w.data()), per_channel, m, block, static_cast<float *>(out.data()));
  return out;
}

bool blockable(const GraphRewriter &rw, int n) {
  const Graph &g = rw.graph();
  const Node &node = g.nodes[n];
  if (node.op_type != kConvNhwcOp || !node.domain.empty() || node.attributes.has(kConvWeightBlockAttr)) return false;
  if (node.attributes.get_int("group", 1) != 1) return false;
  const std::vector<int> &ins = g.node_inputs[n];
  if (ins.size() < 2 || ins[1] == kNoTensor) return false;
  const int w = ins[1];
  if (!g.is_constant(w) || rw.is_pinned(w) || rw.sole_reader(w) != n) return false;
  const Tensor &value = *g.tensors[w].constant;
  if (value.dtype() != DType::Float32 || value.rank() != 4) return false;
  const int64_t m = value.shape()[3];
  return m > kConvWeightBlock && m % kConvWeightBlock == 0;
}

}  // namespace

std::optional<NhwcConvWeightDims> nhwc_conv_weight_dims(const Shape &w, int64_t block) {
  if (block <= 1) {
    if (w.size() != 4) return std::nullopt;
    return NhwcConvWeightDims{w[0], w[1], w[2], w[3]};
  }
  if (w.size() != 5 || w[4] != block || w[0] < 0 || w[0] > std::numeric_limits<int64_t>::max() / block)
    return std::nullopt;
  return NhwcConvWeightDims{w[1], w[2], w[3], w[0] * block};
}

Result<Graph> block_nhwc_conv_weights(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    for (int n : rw.order()) {
      if (rw.is_removed(n) || !blockable(rw, n)) continue;
      const int w = rw.graph().node_inputs[n][1];
      const Tensor &value = *rw.graph().tensors[w].constant;
      const int packed =
          rw.add_constant(rw.graph().tensors[w].name + "_blocked", blocked_hwio(value, kConvWeightBlock));
      rw.set_input(n, 1, packed);
      rw.node(n).attributes.set(kConvWeightBlockAttr, kConvWeightBlock);
    }
    return rw.finish();
  });
}

}  // namespace tessel
