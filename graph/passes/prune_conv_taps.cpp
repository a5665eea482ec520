#include "graph/passes/prune_conv_taps.h"

#include <cstring>
#include <optional>

#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

/// Whether some output position o in [0, out) reads input position o*s + t*dil - pad
/// inside [0, in) at tap t.
bool tap_reads_input(int64_t t, int64_t in, int64_t out, int64_t stride, int64_t dilation, int64_t pad) {
  const int64_t offset = t * dilation - pad;  // input position of output 0
  // The first output whose position is >= 0.
  const int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  return first < out && first * stride + offset < in;
}

/// The taps [begin, end) of each axis to keep.
struct KeptTaps {
  std::vector<int64_t> begin, end;
};

std::optional<KeptTaps> kept_taps(const Shape &x, const Shape &y, const std::vector<int64_t> &kernel,
                                  const std::vector<int64_t> &strides, const std::vector<int64_t> &dilations,
                                  const std::vector<int64_t> &pads) {
  const size_t spatial = kernel.size();
  KeptTaps kept;
  bool cut = false;
  for (size_t d = 0; d < spatial; ++d) {
    int64_t begin = 0, end = kernel[d];
    auto live = [&](int64_t t) { return tap_reads_input(t, x[2 + d], y[2 + d], strides[d], dilations[d], pads[d]); };
    while (begin < end && !live(begin)) ++begin;
    while (end > begin && !live(end - 1)) --end;
    if (begin == end) return std::nullopt;  // no tap reads anything: left as it is (rare)
    for (int64_t t = begin; t < end; ++t)
      if (!live(t)) return std::nullopt;  // a hole in the middle: not a slice
    cut |= begin > 0 || end < kernel[d];
    kept.begin.push_back(begin);
    kept.end.push_back(end);
  }
  if (!cut) return std::nullopt;
  return kept;
}

/// w [M, C, k...] with each spatial axis cut to [begin, end).
Tensor cut_weight(const Tensor &w, const KeptTaps &kept) {
  const Shape &s = w.shape();
  const size_t spatial = s.size() - 2;
  Shape shape = {s[0], s[1]};
  for (size_t d = 0; d < spatial; ++d) shape.push_back(kept.end[d] - kept.begin[d]);
  Tensor out(w.dtype(), shape);
  const size_t element = dtype_size(w.dtype());
  const auto *src = static_cast<const uint8_t *>(w.data());
  auto *dst = static_cast<uint8_t *>(out.data());
  const int64_t count = out.numel();
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = 0;
    for (size_t a = 0; a < shape.size(); ++a) from = from * s[a] + index[a] + (a >= 2 ? kept.begin[a - 2] : 0);
    std::memcpy(dst + i * element, src + from * element, element);
    for (size_t a = shape.size(); a-- > 0;) {
      if (++index[a] < shape[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

/// The rewritten attributes, or nullopt where a pad would go negative or the output shape
/// would change.
std::optional<Attributes> pruned_attributes(const Attributes &a, const Shape &x, const Shape &y,
                                            const std::vector<int64_t> &kernel, const KeptTaps &kept) {
  const size_t spatial = kernel.size();
  std::vector<int64_t> strides = a.get_ints("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations = a.get_ints("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = a.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  std::vector<int64_t> new_kernel(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    pads[d] -= kept.begin[d] * dilations[d];
    pads[spatial + d] -= (kernel[d] - kept.end[d]) * dilations[d];
    if (pads[d] < 0 || pads[spatial + d] < 0) return std::nullopt;
    new_kernel[d] = kept.end[d] - kept.begin[d];
    const int64_t reach = (new_kernel[d] - 1) * dilations[d] + 1;
    if ((x[2 + d] + pads[d] + pads[spatial + d] - reach) / strides[d] + 1 != y[2 + d]) return std::nullopt;
    if (new_kernel[d] == 1) dilations[d] = 1;  // one tap: its dilation means nothing
  }
  Attributes out = a;
  out.set("kernel_shape", new_kernel);
  out.set("pads", pads);
  out.set("dilations", dilations);
  return out;
}

}  // namespace

Result<Graph> prune_conv_taps(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    for (int n : rw.order()) {
      if (rw.is_removed(n)) continue;
      const Graph &g = rw.graph();
      const Node &node = g.nodes[n];
      if (node.op_type != "Conv" || !node.domain.empty() || g.node_outputs[n].size() != 1) continue;
      const std::vector<int> &ins = g.node_inputs[n];
      const int out = g.node_outputs[n][0];
      if (ins.size() < 2 || ins[0] == kNoTensor || ins[1] == kNoTensor || out == kNoTensor) continue;
      if (!g.is_constant(ins[1]) || node.attributes.get_string("auto_pad", "NOTSET") != "NOTSET") continue;
      const TensorType &x = g.tensors[ins[0]].type, &y = g.tensors[out].type;
      const Tensor &w = *g.tensors[ins[1]].constant;
      if (!x.rank_known || !x.fully_known() || !y.rank_known || !y.fully_known() || w.rank() < 3 ||
          x.shape.size() != w.shape().size() || y.shape.size() != w.shape().size())
        continue;
      const size_t spatial = w.shape().size() - 2;
      const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
      const Attributes &a = node.attributes;
      const std::vector<int64_t> strides = a.get_ints("strides", std::vector<int64_t>(spatial, 1));
      const std::vector<int64_t> dilations = a.get_ints("dilations", std::vector<int64_t>(spatial, 1));
      const std::vector<int64_t> pads = a.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
      if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) continue;
      std::optional<KeptTaps> kept = kept_taps(x.shape, y.shape, kernel, strides, dilations, pads);
      if (!kept) continue;
      std::optional<Attributes> attributes = pruned_attributes(a, x.shape, y.shape, kernel, *kept);
      if (!attributes) continue;
      const int cut = rw.add_constant(g.tensors[ins[1]].name + "_taps", cut_weight(w, *kept));
      rw.set_input(n, 1, cut);
      rw.node(n).attributes = *attributes;
    }
    return rw.finish();
  });
}

}  // namespace tessel
