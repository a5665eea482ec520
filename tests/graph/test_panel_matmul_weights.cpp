// Tests of the panel_matmul_weights layout pass: which matrix products get a B stored as
// panels of 16 columns, where each element lands, and that the rewritten graphs compute the
// same outputs with the built-in kernels at every vector width.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "graph/infer/model_stats.h"
#include "graph/passes/panel_matmul_weights.h"
#include "tests/graph/graph_builder.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Graph paneled(const Graph &g) { return after_pass(g, {"panel_matmul_weights", panel_matmul_weights}); }

/// y = MatMul(x [a_shape], w [k, n]).
Builder matmul(Shape a_shape, int64_t n, std::mt19937 &rng) {
  const int64_t k = a_shape.back();
  Builder b;
  b.input("x", a_shape).constant("w", random_uniform({k, n}, rng)).node("MatMul", {"x", "w"}, "y").output("y");
  return b;
}

const Tensor &b_of(const Graph &g, const std::string &op) {
  return *g.tensors[g.node_inputs[first_node_index(g, op)][1]].constant;
}

}  // namespace

TEST_CASE("panel_matmul_weights stores B [K, N] as [N/16, K, 16]", "[passes][panel_matmul]") {
  std::mt19937 rng(51);
  Builder b = matmul({5, 32}, 48, rng);
  const Graph out = paneled(b.g);
  const Tensor &panels = b_of(out, "MatMul");
  REQUIRE(panels.shape() == Shape{3, 32, 16});
  CHECK(matmul_panel_width(first_node(out, "MatMul")) == 16);
  // Element (k, j) sits at [j / 16, k, j % 16].
  const float *src = b_of(b.g, "MatMul").data_as<float>(), *dst = panels.data_as<float>();
  for (int64_t k : {0, 17, 31})
    for (int64_t j : {0, 15, 16, 47}) CHECK(dst[((j / 16) * 32 + k) * 16 + j % 16] == src[k * 48 + j]);
  CHECK(out.tensors[out.outputs[0]].type.shape == Shape{5, 48});
  CHECK(compute_model_stats(out).flops == 2 * 5 * 48 * 32);  // 2 x outputs x K
  check_same_outputs(b.g, out, {random_uniform({5, 32}, rng)});
}

TEST_CASE("panel_matmul_weights leaves other products as they are", "[passes][panel_matmul]") {
  std::mt19937 rng(52);
  for (int64_t n : {24, 16, 8}) {  // not whole panels, one panel, under one
    INFO(n << " columns");
    const Graph out = paneled(matmul({4, 32}, n, rng).g);
    CHECK(matmul_panel_width(first_node(out, "MatMul")) == 1);
    CHECK(b_of(out, "MatMul").shape() == Shape{32, n});
  }
  // A B two products share, a B computed at run time, and a transB = 1 Gemm.
  Builder shared;
  shared.input("x", Shape{4, 32})
      .constant("w", random_uniform({32, 32}, rng))
      .node("MatMul", {"x", "w"}, "a")
      .node("MatMul", {"a", "w"}, "y")
      .output("y");
  for (const Node &node : paneled(shared.g).nodes) CHECK(matmul_panel_width(node) == 1);
  Builder computed;
  computed.input("x", Shape{4, 32}).input("w", Shape{32, 32}).node("MatMul", {"x", "w"}, "y").output("y");
  CHECK(matmul_panel_width(first_node(paneled(computed.g), "MatMul")) == 1);
  Builder transposed;
  transposed.input("x", Shape{4, 32})
      .constant("w", random_uniform({32, 32}, rng))
      .node("Gemm", {"x", "w"}, "y", make_attributes({{"transB", int64_t{1}}}))
      .output("y");
  CHECK(matmul_panel_width(first_node(paneled(transposed.g), "Gemm")) == 1);
}

TEST_CASE("paneled products compute what they did at every vector width", "[passes][panel_matmul]") {
  // Rows from 1 to 13 (register tiles of fewer rows than the product, and a tail), N = 48
  // (not a multiple of AVX-512's two-vector tile) and 64, a batched A folded into rows, and
  // a Gemm with a bias and scales.
  std::mt19937 rng(53);
  for (const char *bits : {"128", "256", "512"}) {
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    for (const auto &[a_shape, n] : std::vector<std::pair<Shape, int64_t>>{
             {{1, 40}, 48}, {{9, 40}, 64}, {{13, 24}, 48}, {{2, 3, 3, 32}, 64}, {{2, 5, 40}, 48}}) {
      INFO("TESSEL_VECTOR_BITS=" << bits << " A " << shape_to_string(a_shape) << " N " << n);
      Builder b = matmul(a_shape, n, rng);
      const Graph out = paneled(b.g);
      REQUIRE(matmul_panel_width(first_node(out, "MatMul")) == 16);
      check_same_outputs(b.g, out, {random_uniform(a_shape, rng)});
    }
    INFO("TESSEL_VECTOR_BITS=" << bits << " Gemm");
    Builder gemm;
    gemm.input("x", Shape{7, 40})
        .constant("w", random_uniform({40, 32}, rng))
        .constant("c", random_uniform({32}, rng))
        .node("Gemm", {"x", "w", "c"}, "y", make_attributes({{"alpha", 0.5f}, {"beta", 2.0f}}))
        .output("y");
    const Graph out = paneled(gemm.g);
    REQUIRE(matmul_panel_width(first_node(out, "Gemm")) == 16);
    check_same_outputs(gemm.g, out, {random_uniform({7, 40}, rng)});
  }
  unsetenv("TESSEL_VECTOR_BITS");
}

TEST_CASE("matrix_of_panels reads [N/width, K, width] back as [K, N]", "[passes][panel_matmul]") {
  CHECK(matrix_of_panels({3, 32, 16}, 16) == Shape{32, 48});
  CHECK_FALSE(matrix_of_panels({3, 32, 8}, 16));  // last extent is not the width
  CHECK_FALSE(matrix_of_panels({32, 48}, 16));    // a plain matrix
  CHECK_FALSE(matrix_of_panels({3, 32, 16}, 1));
}
