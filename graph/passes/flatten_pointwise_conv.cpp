#include "graph/passes/flatten_pointwise_conv.h"

#include <algorithm>
#include <map>

#include "graph/fusion/fuse.h"
#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

bool all_equal(const std::vector<int64_t> &values, int64_t v) {
  return std::all_of(values.begin(), values.end(), [v](int64_t x) { return x == v; });
}

bool known_4d(const TensorType &t) {
  return t.rank_known && t.shape.size() == 4 && t.fully_known();
}

/// Whether node n is a Conv this pass flattens: 1x1 kernel, dilation 1, no padding, group
/// 1, 4-D with known shapes and more than one output row; strided only where Slice takes
/// steps (opset 10 on).
bool is_pointwise_conv(const Graph &g, int n) {
  const Node &node = g.nodes[n];
  if (node.op_type != "Conv" || !node.domain.empty() || g.node_outputs[n].size() != 1) return false;
  const std::vector<int> &ins = g.node_inputs[n];
  if (ins.size() < 2 || ins[0] == kNoTensor || ins[1] == kNoTensor) return false;
  const TensorType &x = g.tensors[ins[0]].type, &w = g.tensors[ins[1]].type;
  const int out = g.node_outputs[n][0];
  if (out == kNoTensor || !known_4d(x) || !known_4d(w) || !known_4d(g.tensors[out].type)) return false;
  const Attributes &a = node.attributes;
  if (w.shape[2] != 1 || w.shape[3] != 1) return false;
  const std::vector<int64_t> strides = a.get_ints("strides", {1, 1});
  if (!all_equal(a.get_ints("kernel_shape", {1, 1}), 1) || strides.size() != 2 ||
      !all_equal(a.get_ints("dilations", {1, 1}), 1) || !all_equal(a.get_ints("pads", {0, 0, 0, 0}), 0))
    return false;
  const bool strided = !all_equal(strides, 1);
  if (strided && (g.opset < 10 || strides[0] < 1 || strides[1] < 1)) return false;
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return false;
  if (a.get_int("group", 1) != 1) return false;
  const Shape &y = g.tensors[out].type.shape;
  return y[2] > 1 && y[2] == (x.shape[2] - 1) / strides[0] + 1 && y[3] == (x.shape[3] - 1) / strides[1] + 1;
}

/// How an elementwise op's other operand can follow the flat layout.
enum class Operand { Unchanged, Viewed, Blocks };

/// Scalars and per-channel tensors ([M, 1, 1], [1, M, 1, 1], ...) broadcast against
/// [N, M, 1, H*W] as they did against [N, M, H, W]; full-shape ones are viewed flat.
Operand classify_operand(const TensorType &t, const Shape &full) {
  if (!t.rank_known || !t.fully_known() || t.shape.size() > 4) return Operand::Blocks;
  if (t.shape == full) return Operand::Viewed;
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  if (numel == 1) return Operand::Unchanged;
  // Right-aligned against [N, M, H, W]: H and W must be 1, M may be M, N only 1 (a tensor
  // varying along N alone is fine too, but rare enough not to bother).
  const size_t r = t.shape.size();
  if (r < 3 || t.shape[r - 1] != 1 || t.shape[r - 2] != 1) return Operand::Blocks;
  if (t.shape[r - 3] != full[1] && t.shape[r - 3] != 1) return Operand::Blocks;
  if (r == 4 && t.shape[0] != 1) return Operand::Blocks;
  return Operand::Unchanged;
}

/// The elementwise ops after the conv's output that run flat with it, in order.
std::vector<int> flat_chain(const GraphRewriter &rw, int conv_out) {
  const Graph &g = rw.graph();
  const Shape full = g.tensors[conv_out].type.shape;
  std::vector<int> chain;
  int cur = conv_out;
  for (;;) {
    if (rw.is_pinned(cur) || rw.readers(cur).size() != 1) break;
    const int r = rw.readers(cur)[0];
    const OpPattern pattern = node_pattern(g.nodes[r]);
    if (pattern != OpPattern::Elementwise && pattern != OpPattern::Broadcast) break;
    if (g.node_outputs[r].size() != 1 || g.node_outputs[r][0] == kNoTensor) break;
    const int out = g.node_outputs[r][0];
    if (!g.tensors[out].type.rank_known || g.tensors[out].type.shape != full) break;
    bool ok = true;
    for (int t : g.node_inputs[r])
      if (t != kNoTensor && t != cur) ok &= classify_operand(g.tensors[t].type, full) != Operand::Blocks;
    if (!ok) break;
    chain.push_back(r);
    cur = out;
  }
  return chain;
}

class Flattener {
 public:
  explicit Flattener(GraphRewriter &rw) : rw_(rw) {}

  void flatten(int conv) {
    const Graph &g = rw_.graph();
    const int x = g.node_inputs[conv][0], y = g.node_outputs[conv][0];
    const Shape y_shape = g.tensors[y].type.shape;
    const std::string base = g.nodes[conv].name.empty() ? "pointwise_conv" : g.nodes[conv].name;
    const std::vector<int> chain = flat_chain(rw_, y);

    // A strided 1x1 conv reads every s-th row and column: a Slice picks them out first
    // (its own small kernel), and the conv is then a dense product like the others.
    const std::vector<int64_t> strides = g.nodes[conv].attributes.get_ints("strides", {1, 1});
    const int dense = all_equal(strides, 1) ? x : subsampled(x, strides, base);
    rw_.node(conv).attributes.set("strides", std::vector<int64_t>{1, 1});
    rw_.set_input(conv, 0, flat_view(dense, base + "_flat_input"));
    int flat_value = retype(conv);
    int original = y;
    for (int n : chain) {
      const std::vector<int> ins = rw_.graph().node_inputs[n];
      for (size_t slot = 0; slot < ins.size(); ++slot) {
        if (ins[slot] == original)
          rw_.set_input(n, slot, flat_value);
        else if (ins[slot] != kNoTensor &&
                 classify_operand(rw_.graph().tensors[ins[slot]].type, y_shape) == Operand::Viewed)
          rw_.set_input(n, slot, flat_view(ins[slot], base + "_flat_operand"));
      }
      original = rw_.graph().node_outputs[n][0];
      flat_value = retype(n);
    }
    // The last value keeps its tensor (name, readers, graph output) behind a view back.
    Node back;
    back.op_type = "Reshape";
    back.name = base + "_unflatten";
    rw_.add_node(std::move(back), {flat_value, shape_constant(y_shape)}, {original});
  }

 private:
  static Shape flat(const Shape &s) { return {s[0], s[1], 1, s[2] * s[3]}; }

  int shape_constant(const Shape &s) {
    auto it = shapes_.find(s);
    if (it != shapes_.end()) return it->second;
    const int t = rw_.add_constant("flat_shape", Tensor::from_int64s(std::vector<int64_t>(s.begin(), s.end()), {4}));
    shapes_[s] = t;
    return t;
  }

  /// Slice(t, steps = strides) over H and W: [N, C, ceil(H / sh), ceil(W / sw)].
  int subsampled(int t, const std::vector<int64_t> &strides, const std::string &base) {
    TensorType type = rw_.graph().tensors[t].type;
    const Shape in = type.shape;
    type.shape = {in[0], in[1], (in[2] - 1) / strides[0] + 1, (in[3] - 1) / strides[1] + 1};
    const int out = rw_.add_tensor(rw_.graph().tensors[t].name + "_subsampled", type);
    auto ints = [&](const std::string &name, const std::vector<int64_t> &v) {
      return rw_.add_constant(base + name, Tensor::from_int64s(v, {static_cast<int64_t>(v.size())}));
    };
    Node node;
    node.op_type = "Slice";
    node.name = base + "_subsample";
    rw_.add_node(std::move(node),
                 {t, ints("_starts", {0, 0}), ints("_ends", {in[2], in[3]}), ints("_axes", {2, 3}), ints("_steps", strides)},
                 {out});
    return out;
  }

  /// A Reshape view of `t` as [N, C, 1, H*W] (one per tensor).
  int flat_view(int t, const std::string &name) {
    auto it = views_.find(t);
    if (it != views_.end()) return it->second;
    TensorType type = rw_.graph().tensors[t].type;
    type.shape = flat(type.shape);
    const int out = rw_.add_tensor(rw_.graph().tensors[t].name + "_flat", type);
    Node node;
    node.op_type = "Reshape";
    node.name = name;
    rw_.add_node(std::move(node), {t, shape_constant(type.shape)}, {out});
    views_[t] = out;
    return out;
  }

  /// Gives node n's output a new flat tensor; returns it.
  int retype(int n) {
    const int old = rw_.graph().node_outputs[n][0];
    TensorType type = rw_.graph().tensors[old].type;
    type.shape = flat(type.shape);
    const int out = rw_.add_tensor(rw_.graph().tensors[old].name + "_flat", type);
    rw_.set_output(n, 0, out);
    return out;
  }

  GraphRewriter &rw_;
  std::map<Shape, int> shapes_;
  std::map<int, int> views_;
};

}  // namespace

Result<Graph> flatten_pointwise_conv(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    Flattener flattener(rw);
    const std::vector<int> order = rw.order();  // the nodes before any were added
    for (int n : order)
      if (!rw.is_removed(n) && is_pointwise_conv(rw.graph(), n)) flattener.flatten(n);
    return rw.finish();
  });
}

}  // namespace tessel
