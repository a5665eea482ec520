#include "graph/passes/pad_conv_channels.h"

#include <cstring>

#include "graph/ir/graph_rewriter.h"
#include "graph/passes/block_conv_weights.h"

namespace tessel {
namespace {

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

/// `value` [M, ...] with zero rows appended up to `rows` along the first axis.
Tensor padded_rows(const Tensor &value, int64_t rows) {
  Shape shape = value.shape();
  shape[0] = rows;
  Tensor out(value.dtype(), shape);
  std::memset(out.data(), 0, out.bytes());
  std::memcpy(out.data(), value.data(), value.bytes());  // the rows lead: [M, ...] row-major
  return out;
}

/// Node n's channels padded to, or 0 when the pass leaves it alone.
int64_t padding_target(const GraphRewriter &rw, int n) {
  const Graph &g = rw.graph();
  const Node &node = g.nodes[n];
  if (node.op_type != "Conv" || !node.domain.empty() || node.attributes.has(kConvWeightBlockAttr)) return 0;
  if (node.attributes.get_int("group", 1) != 1 || g.node_outputs[n].size() != 1) return 0;
  const std::vector<int> &ins = g.node_inputs[n];
  if (ins.size() < 2 || ins[0] == kNoTensor || ins[1] == kNoTensor) return 0;
  const int w = ins[1], y = g.node_outputs[n][0];
  if (!g.is_constant(w) || rw.is_pinned(w) || rw.sole_reader(w) != n || y == kNoTensor) return 0;
  const Tensor &weight = *g.tensors[w].constant;
  if (weight.dtype() != DType::Float32 || weight.rank() < 3) return 0;
  const TensorType &out = g.tensors[y].type;
  if (!out.rank_known || out.dtype != DType::Float32 || out.shape.size() != weight.shape().size()) return 0;
  for (int64_t d : out.shape)
    if (d == kUnknownDim) return 0;
  if (ins.size() > 2 && ins[2] != kNoTensor) {
    if (!g.is_constant(ins[2])) return 0;
    const Tensor &bias = *g.tensors[ins[2]].constant;
    if (bias.dtype() != DType::Float32 || bias.shape() != Shape{weight.shape()[0]}) return 0;
  }
  const int64_t channels = weight.shape()[0], padded = padded_conv_channels(channels);
  if (padded == channels) return 0;
  Shape padded_weight = weight.shape();
  padded_weight[0] = padded;
  TensorType padded_out = out;
  padded_out.shape[1] = padded;
  return blocked_layout_pays(padded_weight, padded_out) ? padded : 0;
}

}  // namespace

int64_t padded_conv_channels(int64_t channels) {
  if (channels <= kConvWeightBlock || channels % kConvWeightBlock == 0) return channels;
  const double most = static_cast<double>(channels) * (1 + kMaxChannelPadding);
  for (int64_t multiple : {2 * kConvWeightBlock, kConvWeightBlock})
    if (static_cast<double>(round_up(channels, multiple)) <= most) return round_up(channels, multiple);
  return channels;
}

Result<Graph> pad_conv_channels(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    for (int n : rw.order()) {
      if (rw.is_removed(n)) continue;
      const int64_t padded = padding_target(rw, n);
      if (padded == 0) continue;
      const std::vector<int> ins = rw.graph().node_inputs[n];
      const int original = rw.graph().node_outputs[n][0];
      const Tensor &weight = *rw.graph().tensors[ins[1]].constant;
      const int64_t channels = weight.shape()[0];
      const std::string base = rw.node(n).name.empty() ? std::string("conv") : rw.node(n).name;
      rw.set_input(n, 1, rw.add_constant(rw.graph().tensors[ins[1]].name + "_padded", padded_rows(weight, padded)));
      if (ins.size() > 2 && ins[2] != kNoTensor)
        rw.set_input(n, 2,
                     rw.add_constant(rw.graph().tensors[ins[2]].name + "_padded",
                                     padded_rows(*rw.graph().tensors[ins[2]].constant, padded)));
      TensorType wide = rw.graph().tensors[original].type;
      wide.shape[1] = padded;
      const int wide_out = rw.add_tensor(rw.graph().tensors[original].name + "_padded", wide);
      rw.set_output(n, 0, wide_out);
      // The first M channels keep the original tensor: its name, readers and graph output.
      auto ints = [&](const std::string &suffix, int64_t v) {
        return rw.add_constant(base + suffix, Tensor::from_int64s({v}, {1}));
      };
      Node slice;
      slice.op_type = "Slice";
      slice.name = base + "_unpad";
      rw.add_node(std::move(slice), {wide_out, ints("_unpad_starts", 0), ints("_unpad_ends", channels), ints("_unpad_axes", 1)},
                  {original});
    }
    return rw.finish();
  });
}

}  // namespace tessel
