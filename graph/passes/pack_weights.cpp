#include "graph/passes/pack_weights.h"

#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

/// A node of the default domain with this op type.
bool is_op(const Graph &g, int n, const char *op_type) {
  return g.nodes[n].op_type == op_type && g.nodes[n].domain.empty();
}

/// Whether every reader of `t` reads it as B (input 1) of a MatMul or Gemm, and only there.
bool read_only_as_matrix_b(const GraphRewriter &rw, int t) {
  const Graph &g = rw.graph();
  if (rw.readers(t).empty()) return false;
  for (int reader : rw.readers(t)) {
    if (!is_op(g, reader, "MatMul") && !is_op(g, reader, "Gemm")) return false;
    const std::vector<int> &ins = g.node_inputs[reader];
    for (size_t slot = 0; slot < ins.size(); ++slot)
      if (ins[slot] == t && slot != 1) return false;
  }
  return true;
}

/// Transpose(W) -> B of matrix products, W constant and read only here: fold it.
bool fold_weight_transpose(GraphRewriter &rw, int n) {
  const Graph &g = rw.graph();
  if (!is_op(g, n, "Transpose") || g.node_inputs[n].size() != 1 || g.node_outputs[n].size() != 1) return false;
  const int w = g.node_inputs[n][0], out = g.node_outputs[n][0];
  if (w == kNoTensor || out == kNoTensor || !g.is_constant(w) || rw.sole_reader(w) != n) return false;
  if (rw.is_pinned(out) || !read_only_as_matrix_b(rw, out)) return false;
  const Tensor &value = *g.tensors[w].constant;
  std::vector<int64_t> perm;
  for (int64_t d = value.rank(); d-- > 0;) perm.push_back(d);  // the default: reverse
  perm = g.nodes[n].attributes.get_ints("perm", perm);
  if (static_cast<int>(perm.size()) != value.rank()) return false;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= value.rank() || seen[p]) return false;
    seen[p] = true;
  }
  Tensor folded = value.permuted(perm);
  rw.remove_node(n);
  TensorInfo &info = rw.tensor(out);
  info.type = folded.type();
  info.constant = std::move(folded);
  return true;
}

/// Output rows of a Gemm, or -1 when A's shape is not known.
int64_t gemm_rows(const Graph &g, int n) {
  const TensorType &a = g.tensors[g.node_inputs[n][0]].type;
  if (!a.rank_known || a.shape.size() != 2) return -1;
  const bool trans_a = g.nodes[n].attributes.get_int("transA", 0) != 0;
  const int64_t rows = trans_a ? a.shape[1] : a.shape[0];
  return rows == kUnknownDim ? -1 : rows;
}

/// A Gemm whose B the pass would store transposed, on its own.
bool packable_gemm(const Graph &g, int n) {
  const std::vector<int> &ins = g.node_inputs[n];
  if (!is_op(g, n, "Gemm") || ins.size() < 2 || ins[0] == kNoTensor || ins[1] == kNoTensor) return false;
  if (g.nodes[n].attributes.get_int("transB", 0) == 0) return false;
  const TensorType &b = g.tensors[ins[1]].type;  // [N, K] with transB
  if (!b.rank_known || b.shape.size() != 2 || b.shape[0] < kPackWeightsMinColumns) return false;
  return gemm_rows(g, n) >= kPackWeightsMinRows;
}

/// B of transB=1 Gemms, transposed once for all of them when all of them want it.
bool pack_gemm_weight(GraphRewriter &rw, int b) {
  const Graph &g = rw.graph();
  if (!g.is_constant(b) || rw.is_pinned(b) || g.tensors[b].constant->rank() != 2) return false;
  if (!read_only_as_matrix_b(rw, b)) return false;
  for (int reader : rw.readers(b))
    if (!packable_gemm(g, reader)) return false;
  Tensor transposed = g.tensors[b].constant->permuted({1, 0});
  const int packed = rw.add_constant(g.tensors[b].name + "_packed", std::move(transposed));
  const std::vector<int> readers = rw.readers(b);  // set_input edits the list
  for (int reader : readers) {
    rw.set_input(reader, 1, packed);
    rw.node(reader).attributes.set("transB", int64_t{0});
  }
  return true;
}

}  // namespace

Result<Graph> pack_weights(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    const Graph &g = rw.graph();
    // Transposes first: a Gemm(transB=1) reading a folded Transpose is then packed too.
    for (int n : rw.order())
      if (!rw.is_removed(n)) fold_weight_transpose(rw, n);
    for (int n : rw.order()) {
      if (rw.is_removed(n) || !packable_gemm(g, n)) continue;
      const int b = g.node_inputs[n][1];
      if (b != kNoTensor) pack_gemm_weight(rw, b);
    }
    return rw.finish();
  });
}

}  // namespace tessel
