#include "graph/passes/channels_last_conv.h"

#include <algorithm>
#include <map>

#include "graph/fusion/fuse.h"
#include "graph/ir/op_registry.h"
#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};
/// Inputs this narrow (an RGB image) are read in NCHW by the first conv: transposing them
/// would be a kernel of its own for a conv that reads each element a few times.
constexpr int64_t kMaxNchwInputChannels = 4;

bool known_f32_4d(const TensorType &t) {
  return t.rank_known && t.shape.size() == 4 && t.fully_known() && t.dtype == DType::Float32;
}

Shape permuted(const Shape &s, const std::vector<int64_t> &perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(s[static_cast<size_t>(p)]);
  return out;
}

/// Whether node n is a Conv this pass rewrites: 2-D, f32, known shapes, constant weight.
bool is_convertible_conv(const Graph &g, int n) {
  const Node &node = g.nodes[n];
  if (node.op_type != "Conv" || !node.domain.empty() || g.node_outputs[n].size() != 1) return false;
  const std::vector<int> &ins = g.node_inputs[n];
  if (ins.size() < 2 || ins[0] == kNoTensor || ins[1] == kNoTensor) return false;
  const int y = g.node_outputs[n][0];
  if (y == kNoTensor || !known_f32_4d(g.tensors[ins[0]].type) || !known_f32_4d(g.tensors[ins[1]].type) ||
      !known_f32_4d(g.tensors[y].type) || !g.tensors[ins[1]].constant)
    return false;
  if (ins.size() > 2 && ins[2] != kNoTensor) {
    const TensorType &b = g.tensors[ins[2]].type;
    if (!b.rank_known || b.dtype != DType::Float32 || b.shape != Shape{g.tensors[y].type.shape[1]}) return false;
  }
  const int64_t group = node.attributes.get_int("group", 1);
  const int64_t c = g.tensors[ins[0]].type.shape[1], m = g.tensors[y].type.shape[1];
  return group >= 1 && c % group == 0 && m % group == 0 && g.tensors[ins[1]].type.shape[1] == c / group;
}

bool is_depthwise(const Graph &g, int n) {
  const int64_t group = g.nodes[n].attributes.get_int("group", 1);
  return group > 1 && group == g.tensors[g.node_inputs[n][0]].type.shape[1];
}

/// Pads [h_begin, w_begin, h_end, w_end] of a 2-D Conv, auto_pad resolved (ONNX's rule: the
/// odd element goes to the end for SAME_UPPER, to the beginning for SAME_LOWER).
std::vector<int64_t> resolved_pads(const Node &node, const Shape &x, const Shape &y, const std::vector<int64_t> &kernel,
                                   const std::vector<int64_t> &strides, const std::vector<int64_t> &dilations) {
  const std::string auto_pad = node.attributes.get_string("auto_pad", "NOTSET");
  const std::vector<int64_t> pads = node.attributes.get_ints("pads", {0, 0, 0, 0});
  std::vector<int64_t> out(4, 0);
  for (size_t d = 0; d < 2; ++d) {
    const int64_t extent = (kernel[d] - 1) * dilations[d] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = std::max<int64_t>(0, (y[2 + d] - 1) * strides[d] + extent - x[2 + d]);
      const int64_t half = total / 2;
      out[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      out[2 + d] = total - out[d];
    } else if (auto_pad != "VALID") {
      out[d] = pads.size() == 4 ? pads[d] : 0;
      out[2 + d] = pads.size() == 4 ? pads[2 + d] : 0;
    }
  }
  return out;
}

class ChannelsLast {
 public:
  explicit ChannelsLast(GraphRewriter &rw) : rw_(rw) {}

  void convert_conv(int conv) {
    const Graph &g = rw_.graph();
    const Node node = g.nodes[conv];
    const std::vector<int> ins = g.node_inputs[conv];
    const int x = ins[0], y = g.node_outputs[conv][0];
    const Shape xs = g.tensors[x].type.shape, ys = g.tensors[y].type.shape;
    const Tensor w = *g.tensors[ins[1]].constant;
    const std::string weight_name = g.tensors[ins[1]].name;
    const std::vector<int64_t> kernel = node.attributes.get_ints("kernel_shape", {w.shape()[2], w.shape()[3]});
    const std::vector<int64_t> strides = node.attributes.get_ints("strides", {1, 1});
    const std::vector<int64_t> dilations = node.attributes.get_ints("dilations", {1, 1});
    const std::string base = node.name.empty() ? "conv" : node.name;

    Node nhwc;
    nhwc.op_type = kConvNhwcOp;
    nhwc.name = base + "_nhwc";
    nhwc.attributes.set("strides", strides);
    nhwc.attributes.set("dilations", dilations);
    nhwc.attributes.set("pads", resolved_pads(node, xs, ys, kernel, strides, dilations));
    nhwc.attributes.set("group", node.attributes.get_int("group", 1));
    int input = channels_last(x);
    const bool read_nchw = input == kNoTensor;
    nhwc.attributes.set("input_layout", std::string(read_nchw ? "NCHW" : "NHWC"));
    if (read_nchw) input = x;
    rw_.remove_node(conv);

    // W [M, C/g, KH, KW] -> [KH, KW, C/g, M]: each tap's weights for all output channels
    // are one contiguous row, the vector the NHWC kernel loads.
    std::vector<int> inputs = {input, rw_.add_constant(weight_name + "_hwio", w.permuted({2, 3, 1, 0}))};
    if (ins.size() > 2 && ins[2] != kNoTensor) inputs.push_back(ins[2]);
    const int yt = tensor(g.tensors[y].name + "_nhwc", permuted(ys, kToNhwc));
    rw_.add_node(std::move(nhwc), inputs, {yt});
    back_to_nchw(yt, y, base);
  }

  /// An elementwise node whose 4-D operands are all channels-last values (the others
  /// scalars) runs on them instead; its output becomes channels-last too.
  bool sink(int n) {
    const Graph &g = rw_.graph();
    const OpPattern pattern = node_pattern(g.nodes[n]);
    if (pattern != OpPattern::Elementwise && pattern != OpPattern::Broadcast) return false;
    if (g.node_outputs[n].size() != 1 || g.node_outputs[n][0] == kNoTensor) return false;
    const int out = g.node_outputs[n][0];
    const TensorType &out_type = g.tensors[out].type;
    if (!out_type.rank_known || out_type.shape.size() != 4 || !out_type.fully_known()) return false;
    std::vector<int> inputs = g.node_inputs[n];
    bool any = false;
    for (int &t : inputs) {
      if (t == kNoTensor) continue;
      auto it = nhwc_of_.find(t);
      if (it != nhwc_of_.end() && g.tensors[t].type.shape == out_type.shape) {
        t = it->second;
        any = true;
        continue;
      }
      const TensorType &type = g.tensors[t].type;
      if (!type.rank_known || !type.fully_known() || shape_numel(type.shape) != 1) return false;
    }
    if (!any) return false;
    Node moved = g.nodes[n];
    moved.name = (moved.name.empty() ? moved.op_type : moved.name) + "_nhwc";
    const std::string out_name = g.tensors[out].name;
    TensorType type = out_type;
    type.shape = permuted(out_type.shape, kToNhwc);
    rw_.remove_node(n);
    const int moved_out = rw_.add_tensor(out_name + "_nhwc", type);
    rw_.add_node(std::move(moved), inputs, {moved_out});
    back_to_nchw(moved_out, out, out_name);
    return true;
  }

  /// GlobalAveragePool of a channels-last value: ReduceMean over H and W, then a view back
  /// to [N, C, 1, 1] (the same elements in the same order).
  bool pool(int n) {
    const Graph &g = rw_.graph();
    if (g.nodes[n].op_type != "GlobalAveragePool" || g.node_outputs[n].size() != 1) return false;
    const int x = g.node_inputs[n][0], out = g.node_outputs[n][0];
    auto it = nhwc_of_.find(x);
    if (it == nhwc_of_.end() || out == kNoTensor || !known_f32_4d(g.tensors[out].type)) return false;
    const Shape out_shape = g.tensors[out].type.shape;
    const std::string base = g.nodes[n].name.empty() ? "pool" : g.nodes[n].name;
    const int source = it->second;
    rw_.remove_node(n);
    Node mean;
    mean.op_type = "ReduceMean";
    mean.name = base + "_nhwc";
    mean.attributes.set("axes", std::vector<int64_t>{1, 2});
    mean.attributes.set("keepdims", int64_t{1});
    const int reduced = tensor(base + "_nhwc", {out_shape[0], 1, 1, out_shape[1]});
    rw_.add_node(std::move(mean), {source}, {reduced});
    Node view;
    view.op_type = "Reshape";
    view.name = base + "_view";
    const int shape = rw_.add_constant(base + "_shape", Tensor::from_int64s(out_shape, {4}));
    rw_.add_node(std::move(view), {reduced, shape}, {out});
    return true;
  }

  /// A Transpose to NHWC of a value that is channels-last already is that value.
  bool cancel(int n) {
    const Graph &g = rw_.graph();
    if (g.nodes[n].op_type != "Transpose" || g.node_outputs[n].size() != 1) return false;
    if (g.nodes[n].attributes.get_ints("perm", {}) != kToNhwc) return false;
    auto it = nhwc_of_.find(g.node_inputs[n][0]);
    const int out = g.node_outputs[n][0];
    if (it == nhwc_of_.end() || out == kNoTensor || !rw_.can_merge(it->second, out)) return false;
    const int keep = it->second;
    rw_.remove_node(n);
    const int survivor = rw_.merge_into(keep, out);
    if (survivor != keep)  // `out` was pinned: it now holds the value under its own name
      for (auto &[nchw, nhwc] : nhwc_of_)
        if (nhwc == keep) nhwc = survivor;
    return true;
  }

  /// Removes the Transposes nothing reads any more: those back to NCHW that the next op
  /// cancelled, and the graph's own ones whose readers now read their input.
  void drop_unread_transposes() {
    const Graph &g = rw_.graph();
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (rw_.is_removed(static_cast<int>(n)) || g.nodes[n].op_type != "Transpose") continue;
      const int out = g.node_outputs[n][0];
      if (out != kNoTensor && !rw_.is_used(out)) rw_.remove_node(static_cast<int>(n));
    }
  }

 private:
  int tensor(const std::string &name, const Shape &shape) {
    return rw_.add_tensor(name, make_type(DType::Float32, shape));
  }

  /// The channels-last form of NCHW tensor t: the value a converted op made, else a
  /// Transpose of it; kNoTensor for a narrow input the conv should read as it is.
  int channels_last(int t) {
    auto it = nhwc_of_.find(t);
    if (it != nhwc_of_.end()) return it->second;
    const int producer = rw_.producer(t);
    if (producer >= 0 && rw_.graph().nodes[producer].op_type == "Transpose" &&
        rw_.graph().nodes[producer].attributes.get_ints("perm", {}) == kToNchw)
      return rw_.graph().node_inputs[producer][0];  // a channels-last value viewed as NCHW
    const TensorType &type = rw_.graph().tensors[t].type;
    if (type.shape[1] <= kMaxNchwInputChannels) return kNoTensor;
    const int out = tensor(rw_.graph().tensors[t].name + "_nhwc", permuted(type.shape, kToNhwc));
    Node node;
    node.op_type = "Transpose";
    node.name = rw_.graph().tensors[t].name + "_to_nhwc";
    node.attributes.set("perm", kToNhwc);
    rw_.add_node(std::move(node), {t}, {out});
    nhwc_of_[t] = out;
    return out;
  }

  /// `nchw` (the original tensor, keeping its name and readers) becomes Transpose(nhwc).
  void back_to_nchw(int nhwc, int nchw, const std::string &base) {
    Node node;
    node.op_type = "Transpose";
    node.name = base + "_to_nchw";
    node.attributes.set("perm", kToNchw);
    rw_.add_node(std::move(node), {nhwc}, {nchw});
    nhwc_of_[nchw] = nhwc;
  }

  GraphRewriter &rw_;
  std::map<int, int> nhwc_of_;  // NCHW tensor -> the same value channels-last
};

}  // namespace

bool has_depthwise_conv(const Graph &graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (is_convertible_conv(graph, static_cast<int>(n)) && is_depthwise(graph, static_cast<int>(n))) return true;
  return false;
}

Result<Graph> channels_last_conv(Graph graph) {
  if (!has_depthwise_conv(graph)) return graph;
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    ChannelsLast pass(rw);
    const std::vector<int> order = rw.order();  // the nodes before any were added
    for (int n : order) {
      if (rw.is_removed(n)) continue;
      if (is_convertible_conv(rw.graph(), n))
        pass.convert_conv(n);
      else if (!pass.pool(n) && !pass.cancel(n))
        pass.sink(n);
    }
    pass.drop_unread_transposes();
    return rw.finish();
  });
}

}  // namespace tessel
