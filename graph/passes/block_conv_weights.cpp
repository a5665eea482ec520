#include "graph/passes/block_conv_weights.h"

#include <cstring>

#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

/// [M, C, K...] -> [M / block, C, K..., block].
Tensor blocked(const Tensor &w, int64_t block) {
  const Shape &s = w.shape();
  const int64_t m = s[0], per_channel = w.numel() / m;
  Shape shape = {m / block};
  shape.insert(shape.end(), s.begin() + 1, s.end());
  shape.push_back(block);
  Tensor out(w.dtype(), shape);
  const size_t element = dtype_size(w.dtype());
  const auto *src = static_cast<const uint8_t *>(w.data());
  auto *dst = static_cast<uint8_t *>(out.data());
  for (int64_t o = 0; o < m; ++o)
    for (int64_t k = 0; k < per_channel; ++k) {
      std::memcpy(dst + blocked_weight_offset(o, k, per_channel, block) * element, src + (o * per_channel + k) * element,
                  element);
    }
  return out;
}

/// The output-channel block node n's weight gets, or 0 when it stays as it is.
int64_t block_for(const GraphRewriter &rw, int n) {
  const Graph &g = rw.graph();
  const Node &node = g.nodes[n];
  if (node.op_type != "Conv" || !node.domain.empty() || node.attributes.has(kConvWeightBlockAttr)) return 0;
  const std::vector<int> &ins = g.node_inputs[n];
  if (ins.size() < 2 || ins[0] == kNoTensor || ins[1] == kNoTensor || g.node_outputs[n].size() != 1) return 0;
  const int w = ins[1];
  if (!g.is_constant(w) || rw.is_pinned(w) || rw.sole_reader(w) != n) return 0;
  const Tensor &value = *g.tensors[w].constant;
  if (value.dtype() != DType::Float32) return 0;
  const Shape &s = value.shape();
  const int64_t group = node.attributes.get_int("group", 1);
  if (group < 1 || s.empty() || s[0] % group != 0) return 0;
  const TensorType &y = g.tensors[g.node_outputs[n][0]].type;
  const int64_t per_group = s[0] / group;  // blocks lie inside groups
  if (per_group % kConvWeightBlock == 0) return blocked_layout_pays(s, y) ? kConvWeightBlock : 0;
  // Groups of 8 output channels (8 input channels each in RegNet-Y): 72 products per output,
  // under kMinBlockedReduction, yet blocked by 8 RegNet-Y-400MF's stride-2 one (104 channels
  // on 24x24) ran 0.179 -> 0.160 ms and another 0.119 -> 0.059 ms in the model.
  if (group > 1 && per_group % kGroupedConvWeightBlock == 0 && s.size() == 4 && s[2] * s[3] > 1)
    return kGroupedConvWeightBlock;
  return 0;
}

}  // namespace

bool blocked_layout_pays(const Shape &w, const TensorType &y) {
  if (w.size() != 4 && w.size() != 5) return false;
  int64_t taps = 1;
  for (size_t d = 2; d < w.size(); ++d) taps *= w[d];
  if (taps == 1) {  // a matrix product: blocked only over a map too small to fill vectors along it
    if (!y.rank_known || y.shape.size() < 3) return false;
    int64_t positions = 1;
    for (size_t d = 2; d < y.shape.size(); ++d) positions *= y.shape[d];
    if (positions <= 0 || positions > kMaxBlockedPointwisePositions) return false;
  }
  return w[1] * taps >= kMinBlockedReduction;
}

int64_t conv_weight_block(const Node &conv) { return conv.attributes.get_int(kConvWeightBlockAttr, 1); }

std::vector<float> unblocked_conv_weight(const float *data, const Shape &blocked_shape) {
  const int64_t block = blocked_shape.back();
  const int64_t m = blocked_shape.front() * block;
  int64_t per_channel = 1;
  for (size_t d = 1; d + 1 < blocked_shape.size(); ++d) per_channel *= blocked_shape[d];
  std::vector<float> plain(static_cast<size_t>(m * per_channel));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t k = 0; k < per_channel; ++k) plain[o * per_channel + k] = data[blocked_weight_offset(o, k, per_channel, block)];
  return plain;
}

Result<Graph> block_conv_weights(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    for (int n : rw.order()) {
      if (rw.is_removed(n)) continue;
      const int64_t block = block_for(rw, n);
      if (block == 0) continue;
      const int w = rw.graph().node_inputs[n][1];
      const Tensor &value = *rw.graph().tensors[w].constant;
      const std::vector<int64_t> kernel(value.shape().begin() + 2, value.shape().end());
      const int packed = rw.add_constant(rw.graph().tensors[w].name + "_blocked", blocked(value, block));
      rw.set_input(n, 1, packed);
      rw.node(n).attributes.set("kernel_shape", kernel);
      rw.node(n).attributes.set(kConvWeightBlockAttr, block);
    }
    return rw.finish();
  });
}

}  // namespace tessel
