#include "graph/passes/simplify_algebra.h"

#include <algorithm>
#include <numeric>

#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

class Simplifier {
 public:
  explicit Simplifier(GraphRewriter &rewriter) : rw_(rewriter), g_(rewriter.graph()) {}

  /// Applies the first rule that matches node n; returns whether the graph changed.
  bool simplify(int n) {
    const std::string &op = g_.nodes[n].op_type;
    if (!g_.nodes[n].domain.empty() || g_.node_inputs[n].empty() || input(n, 0) == kNoTensor) return false;
    if (op == "Identity") return bypass(n);
    if (op == "Dropout") return is_inference_dropout(n) && bypass(n);
    if (op == "Cast") return cast_is_noop(n) && bypass(n);
    if (op == "Reshape" && merge_reshapes(n)) return true;
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
      return keeps_shape(n) && bypass(n);
    if (op == "Transpose") return simplify_transpose(n);
    if (op == "Mul") return drop_neutral_operand(n, 1.0, /*either_side=*/true);
    if (op == "Add") return drop_neutral_operand(n, 0.0, /*either_side=*/true);
    if (op == "Sub") return drop_neutral_operand(n, 0.0, /*either_side=*/false);
    if (op == "Pow") return drop_neutral_operand(n, 1.0, /*either_side=*/false) || products_from_pow(n);
    return false;
  }

 private:
  int input(int n, size_t i) const { return i < g_.node_inputs[n].size() ? g_.node_inputs[n][i] : kNoTensor; }
  int output(int n, size_t i) const { return i < g_.node_outputs[n].size() ? g_.node_outputs[n][i] : kNoTensor; }
  const TensorType &type(int t) const { return g_.tensors[t].type; }

  /// Removes n, whose first output equals its first input, when every other output is
  /// unused and the rewriter can rewire the readers.
  bool bypass(int n, size_t input_slot = 0) {
    for (size_t i = 1; i < g_.node_outputs[n].size(); ++i)
      if (output(n, i) != kNoTensor && rw_.is_used(output(n, i))) return false;
    const int in = input(n, input_slot), out = output(n, 0);
    if (out == kNoTensor || !rw_.can_merge(in, out)) return false;
    rw_.remove_node(n);
    rw_.merge_into(in, out);
    return true;
  }

  /// Removes n's producer-side partner when nothing reads its output any more.
  void remove_if_unused(int node) {
    if (node < 0 || rw_.is_removed(node)) return;
    for (int t : g_.node_outputs[node])
      if (t != kNoTensor && rw_.is_used(t)) return;
    rw_.remove_node(node);
  }

  bool is_inference_dropout(int n) const {
    const int mask = output(n, 1);
    if (mask != kNoTensor && rw_.is_used(mask)) return false;
    const int training = input(n, 2);
    if (training == kNoTensor) return true;
    const Tensor *value = constant_value(g_, training);
    return value && value->numel() == 1 && value->element_as_int64(0) == 0;
  }

  bool cast_is_noop(int n) const {
    const DType from = type(input(n, 0)).dtype;
    const Node &node = g_.nodes[n];
    return from != DType::Undefined && node.attributes.has("to") &&
           dtype_from_onnx(static_cast<int32_t>(node.attributes.get_int("to"))) == from;
  }

  bool keeps_shape(int n) const {
    const int out = output(n, 0);
    if (out == kNoTensor) return false;
    const TensorType &a = type(input(n, 0)), &b = type(out);
    return a.fully_known() && b.fully_known() && a.dtype == b.dtype && a.shape == b.shape;
  }

  /// Reshape(Reshape(x, s1), s2) -> Reshape(x, s2'), where s2' is s2 when it does not copy
  /// dims from its input (no 0 entries, or allowzero) and otherwise the known output shape.
  bool merge_reshapes(int n) {
    const int inner = rw_.producer(input(n, 0));
    if (inner < 0 || rw_.is_removed(inner) || g_.nodes[inner].op_type != "Reshape" ||
        !g_.nodes[inner].domain.empty() || input(inner, 0) == kNoTensor)
      return false;
    const Node &node = g_.nodes[n];
    const bool allow_zero = node.attributes.get_int("allowzero", 0) != 0;
    std::vector<int64_t> target;
    bool target_known = false;
    if (const Tensor *shape = constant_value(g_, input(n, 1))) {
      target = shape->to_int64_vector();
      target_known = true;
    } else if (input(n, 1) == kNoTensor && node.attributes.has("shape")) {
      target = node.attributes.get_ints("shape");  // opset < 5 form
      target_known = true;
    }
    const bool copies_dims = std::find(target.begin(), target.end(), 0) != target.end() && !allow_zero;
    if (!target_known || copies_dims) {
      // Spell the output shape out instead; a zero-sized dim would read as "copy" again.
      const TensorType &out = type(output(n, 0));
      if (!out.fully_known() || input(n, 1) == kNoTensor ||
          std::find(out.shape.begin(), out.shape.end(), 0) != out.shape.end())
        return false;
      rw_.set_input(n, 1, rw_.add_constant(g_.tensors[output(n, 0)].name + "_shape",
                                           Tensor::from_int64s(out.shape, {static_cast<int64_t>(out.shape.size())})));
    }
    rw_.set_input(n, 0, input(inner, 0));
    remove_if_unused(inner);
    return true;
  }

  std::optional<std::vector<int64_t>> permutation(int n) const {
    const Node &node = g_.nodes[n];
    if (node.attributes.has("perm")) return node.attributes.get_ints("perm");
    const TensorType &in = type(input(n, 0));
    if (!in.rank_known || in.dtype == DType::Undefined) return std::nullopt;
    std::vector<int64_t> reversed(in.shape.size());
    std::iota(reversed.rbegin(), reversed.rend(), 0);  // the default reverses the axes
    return reversed;
  }

  static bool is_identity(const std::vector<int64_t> &perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  }

  /// Transpose(Transpose(x, p1), p2) = Transpose(x, p1[p2[i]]); identity ones are removed.
  bool simplify_transpose(int n) {
    std::optional<std::vector<int64_t>> outer = permutation(n);
    if (!outer) return false;
    const int inner = rw_.producer(input(n, 0));
    if (inner >= 0 && !rw_.is_removed(inner) && g_.nodes[inner].op_type == "Transpose" &&
        g_.nodes[inner].domain.empty() && input(inner, 0) != kNoTensor) {
      std::optional<std::vector<int64_t>> first = permutation(inner);
      if (first && first->size() == outer->size()) {
        std::vector<int64_t> composed(outer->size());
        bool valid = true;
        for (size_t i = 0; i < outer->size(); ++i) {
          const int64_t p = (*outer)[i];
          valid &= p >= 0 && p < static_cast<int64_t>(first->size());
          if (valid) composed[i] = (*first)[p];
        }
        if (valid) {
          rw_.node(n).attributes.set("perm", composed);
          rw_.set_input(n, 0, input(inner, 0));
          remove_if_unused(inner);
          if (is_identity(composed)) bypass(n);
          return true;
        }
      }
    }
    return is_identity(*outer) && bypass(n);
  }

  /// Whether every element of the constant equals `neutral`.
  static bool all_equal(const Tensor &value, double neutral) {
    for (int64_t i = 0; i < value.numel(); ++i)
      if (value.element_as_double(i) != neutral) return false;
    return true;
  }

  /// x op c (or c op x when either_side) with c all `neutral`: the result is x when
  /// broadcasting against c leaves x's shape and dtype as they are.
  bool drop_neutral_operand(int n, double neutral, bool either_side) {
    if (g_.node_inputs[n].size() != 2 || output(n, 0) == kNoTensor) return false;
    for (int side = 1; side >= (either_side ? 0 : 1); --side) {
      const int c = input(n, side), x = input(n, 1 - side);
      const Tensor *value = constant_value(g_, c);
      if (!value || x == kNoTensor || !all_equal(*value, neutral)) continue;
      if (type(x).dtype != value->dtype()) continue;
      if (keeps_operand_shape(n, x, *value) && bypass(n, static_cast<size_t>(1 - side))) return true;
    }
    return false;
  }

  /// Whether broadcasting x against the constant c leaves x's shape and dtype as node n's
  /// output.
  bool keeps_operand_shape(int n, int x, const Tensor &c) const {
    const TensorType &xt = type(x), &out = type(output(n, 0));
    if (xt.fully_known() && out.fully_known() && xt.shape == out.shape && out.dtype == xt.dtype) return true;
    if (!xt.rank_known || c.rank() > static_cast<int>(xt.shape.size())) return false;
    // All-ones dims of a lower-or-equal rank never widen x, whatever x's dims are.
    for (int64_t d : c.shape())
      if (d != 1) return false;
    return true;
  }

  /// Pow(x, 2) and Pow(x, 3) with a constant exponent become x * x and (x * x) * x:
  /// multiplies instead of a call to pow() per element. Exporters write LayerNorm's
  /// variance as ReduceMean(Pow(d, 2)) and GPT-2's GELU with Pow(x, 3); through pow() they
  /// were most of a BERT or GPT-2 layer's time.
  bool products_from_pow(int n) {
    const int x = input(n, 0), exponent = input(n, 1);
    const Tensor *value = constant_value(g_, exponent);
    if (!value || x == kNoTensor || output(n, 0) == kNoTensor) return false;
    const bool square = all_equal(*value, 2.0), cube = all_equal(*value, 3.0);
    if (!(square || cube) || !dtype_is_float(type(x).dtype) || !keeps_operand_shape(n, x, *value)) return false;
    int factor = x;
    if (cube) {
      factor = rw_.add_tensor(g_.tensors[output(n, 0)].name + "_squared", type(x));
      rw_.add_node(Node{"Mul", g_.nodes[n].name + "_square", "", {}}, {x, x}, {factor});
    }
    rw_.node(n).op_type = "Mul";
    rw_.set_input(n, 1, factor);
    return true;
  }

  GraphRewriter &rw_;
  const Graph &g_;
};

}  // namespace

Result<Graph> simplify_algebra(Graph graph) {
  return guarded([&]() -> Graph {
    // Each sweep goes in topological order, so a chain collapses from its start; one more
    // sweep catches what a rewrite exposed upstream. Bounded, since each change removes a node
    // or rewires towards the inputs.
    for (int sweep = 0; sweep < 8; ++sweep) {
      GraphRewriter rewriter(std::move(graph));
      Simplifier simplifier(rewriter);
      bool changed = false;
      for (int n : rewriter.order())
        if (!rewriter.is_removed(n)) changed |= simplifier.simplify(n);
      graph = rewriter.finish();
      if (!changed) break;
    }
    return graph;
  });
}

}  // namespace tessel
