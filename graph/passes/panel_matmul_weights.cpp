#include "graph/passes/panel_matmul_weights.h"

#include <limits>

#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

/// [K, N] -> [N / width, K, width].
Tensor panels(const Tensor &b, int64_t width) {
  const int64_t k = b.shape()[0], n = b.shape()[1];
  Tensor out(b.dtype(), Shape{n / width, k, width});
  copy_into_panels(static_cast<const float *>(b.data()), k, n, width, static_cast<float *>(out.data()));
  return out;
}

bool panelable(const GraphRewriter &rw, int n) {
  const Graph &g = rw.graph();
  const Node &node = g.nodes[n];
  if (!node.domain.empty() || node.attributes.has(kMatmulPanelAttr)) return false;
  if (node.op_type == "Gemm") {
    if (node.attributes.get_int("transB", 0) != 0) return false;
  } else if (node.op_type != "MatMul") {
    return false;
  }
  const std::vector<int> &ins = g.node_inputs[n];
  if (ins.size() < 2 || ins[0] == kNoTensor || ins[1] == kNoTensor || g.node_outputs[n].size() != 1) return false;
  const int b = ins[1];
  if (!g.is_constant(b) || rw.is_pinned(b) || rw.sole_reader(b) != n) return false;
  const Tensor &value = *g.tensors[b].constant;
  if (value.dtype() != DType::Float32 || value.rank() != 2) return false;
  const int64_t columns = value.shape()[1];
  return columns > kMatmulPanelWidth && columns % kMatmulPanelWidth == 0 && value.shape()[0] > 0;
}

}  // namespace

int64_t matmul_panel_width(const Node &node) { return node.attributes.get_int(kMatmulPanelAttr, 1); }

std::optional<Shape> matrix_of_panels(const Shape &panels, int64_t width) {
  if (width <= 1 || panels.size() != 3 || panels[2] != width || panels[0] < 0 ||
      panels[0] > std::numeric_limits<int64_t>::max() / width)
    return std::nullopt;
  return Shape{panels[1], panels[0] * width};
}

void copy_into_panels(const float *matrix, int64_t rows, int64_t cols, int64_t width, float *panels) {
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col)
      panels[((col / width) * rows + row) * width + col % width] = matrix[row * cols + col];
}

std::vector<float> matrix_from_panels(const float *data, const Shape &panels) {
  const int64_t width = panels[2], k = panels[1], n = panels[0] * width;
  std::vector<float> matrix(static_cast<size_t>(k * n));
  for (int64_t row = 0; row < k; ++row)
    for (int64_t col = 0; col < n; ++col) matrix[row * n + col] = data[((col / width) * k + row) * width + col % width];
  return matrix;
}

Result<Graph> panel_matmul_weights(Graph graph) {
  return guarded([&]() -> Graph {
    GraphRewriter rw(std::move(graph));
    for (int n : rw.order()) {
      if (rw.is_removed(n) || !panelable(rw, n)) continue;
      const int b = rw.graph().node_inputs[n][1];
      const Tensor &value = *rw.graph().tensors[b].constant;
      const int packed = rw.add_constant(rw.graph().tensors[b].name + "_panels", panels(value, kMatmulPanelWidth));
      rw.set_input(n, 1, packed);
      rw.node(n).attributes.set(kMatmulPanelAttr, kMatmulPanelWidth);
    }
    return rw.finish();
  });
}

}  // namespace tessel
