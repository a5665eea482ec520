// Tests of the pack_weights layout pass: transB=1 Gemm weights stored transposed, constant
// Transposes feeding matrix products folded, what it leaves alone, its place in the CPU
// pipeline only, and that the rewritten graphs compute the same outputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <array>
#include <cstdio>
#include <random>

#include "executor/constant_evaluator.h"
#include "executor/optimize_graph.h"
#include "graph/passes/fold_constants.h"
#include "graph/passes/pack_weights.h"
#include "graph/passes/pass_manager.h"
#include "tests/graph/graph_builder.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Tensor random_matrix(Shape shape, std::mt19937 &rng) { return random_uniform(std::move(shape), rng); }

Attributes trans_b(int64_t value) { return make_attributes({{"transB", value}}); }

/// y = x * w^T + c with a constant w [n, k]: the classifier of a CNN.
Builder linear(int64_t m, int64_t k, int64_t n, std::mt19937 &rng) {
  Builder b;
  b.input("x", {m, k})
      .constant("w", random_matrix({n, k}, rng))
      .constant("c", random_matrix({n}, rng))
      .node("Gemm", {"x", "w", "c"}, "y", trans_b(1))
      .output("y");
  return b;
}

Graph packed(const Graph &g) { return after_pass(g, {"pack_weights", pack_weights}); }

int64_t trans_b_of(const Graph &g, int node) { return g.nodes[node].attributes.get_int("transB", 0); }

/// The constant a node reads as input `slot`, which must be one.
const Tensor &constant_input(const Graph &g, int node, size_t slot) {
  const int t = g.node_inputs[node][slot];
  REQUIRE(g.is_constant(t));
  return *g.tensors[t].constant;
}

}  // namespace

TEST_CASE("pack_weights stores a transB=1 Gemm weight transposed and keeps the output", "[passes][pack_weights]") {
  std::mt19937 rng(1);
  for (int64_t m : {kPackWeightsMinRows, int64_t{33}}) {
    INFO("rows " << m);
    Builder b = linear(m, 40, 24, rng);
    const Graph g = packed(b.g);
    REQUIRE(g.nodes.size() == 1);
    CHECK(g.nodes[0].op_type == "Gemm");
    CHECK(trans_b_of(g, 0) == 0);
    const Tensor &w = constant_input(g, 0, 1), &original = *b.g.tensors[b.tensor("w")].constant;
    REQUIRE(w.shape() == Shape{40, 24});
    for (int64_t k = 0; k < 40; ++k)
      for (int64_t j = 0; j < 24; ++j) REQUIRE(w.data_as<float>()[k * 24 + j] == original.data_as<float>()[j * 40 + k]);
    // The original [n, k] weight is gone: the model does not grow.
    CHECK(g.tensors.size() == b.g.tensors.size());
    const Tensor x = random_matrix({m, 40}, rng);
    CHECK(max_abs_diff(run_graph(g, {x})[0], run_graph(b.g, {x})[0]) < 1e-5);
  }
}

TEST_CASE("pack_weights leaves Gemms whose layout already suits the kernel, or whose B it cannot own",
          "[passes][pack_weights]") {
  std::mt19937 rng(2);
  SECTION("B fed at run time") {
    Builder b;
    b.input("x", {16, 8}).input("w", {4, 8}).node("Gemm", {"x", "w"}, "y", trans_b(1)).output("y");
    const Graph g = packed(b.g);
    CHECK(trans_b_of(g, 0) == 1);
    CHECK(g.node_inputs[0][1] == g.inputs[1]);
  }
  SECTION("fewer rows than the kernel's dot-product threshold (batch-1 classifier)") {
    for (int64_t m : {int64_t{1}, kPackWeightsMinRows - 1}) {
      const Graph g = packed(linear(m, 512, 100, rng).g);
      CHECK(trans_b_of(g, 0) == 1);
      CHECK(constant_input(g, 0, 1).shape() == Shape{100, 512});
    }
  }
  SECTION("fewer columns than the kernel's dot-product threshold (binary classifier)") {
    const Graph g = packed(linear(64, 32, kPackWeightsMinColumns - 1, rng).g);
    CHECK(trans_b_of(g, 0) == 1);
  }
  SECTION("transB=0 already") {
    Builder b;
    b.input("x", {16, 8}).constant("w", random_matrix({8, 4}, rng)).node("Gemm", {"x", "w"}, "y").output("y");
    const Graph g = packed(b.g);
    CHECK(constant_input(g, 0, 1).shape() == Shape{8, 4});
  }
  SECTION("the weight has another reader") {
    Builder b = linear(16, 8, 4, rng);
    b.node("Relu", {"w"}, "r").output("r");
    const Graph g = packed(b.g);
    CHECK(trans_b_of(g, 0) == 1);
    CHECK(g.tensors.size() == b.g.tensors.size());
  }
  SECTION("the weight is a graph output") {
    Builder b = linear(16, 8, 4, rng);
    b.output("w");
    CHECK(trans_b_of(packed(b.g), 0) == 1);
  }
}

TEST_CASE("pack_weights transposes a weight shared by two Gemms once", "[passes][pack_weights]") {
  std::mt19937 rng(3);
  Builder b = linear(16, 12, 10, rng);
  b.input("x2", {9, 12}).node("Gemm", {"x2", "w"}, "y2", trans_b(1)).output("y2");
  const Graph g = packed(b.g);
  REQUIRE(count_ops(g, "Gemm") == 2);
  CHECK(trans_b_of(g, 0) == 0);
  CHECK(trans_b_of(g, 1) == 0);
  CHECK(g.node_inputs[0][1] == g.node_inputs[1][1]);
  const Tensor x = random_matrix({16, 12}, rng), x2 = random_matrix({9, 12}, rng);
  const auto got = run_graph(g, {x, x2}), want = run_graph(b.g, {x, x2});
  CHECK(max_abs_diff(got[0], want[0]) < 1e-5);
  CHECK(max_abs_diff(got[1], want[1]) < 1e-5);

  SECTION("unless one of them is below the row threshold") {
    Builder small = linear(16, 12, 10, rng);
    small.input("x2", {1, 12}).node("Gemm", {"x2", "w"}, "y2", trans_b(1)).output("y2");
    const Graph kept = packed(small.g);
    CHECK(trans_b_of(kept, 0) == 1);
    CHECK(trans_b_of(kept, 1) == 1);
  }
}

TEST_CASE("pack_weights folds a constant Transpose feeding a matrix product", "[passes][pack_weights]") {
  std::mt19937 rng(4);
  SECTION("MatMul(x, Transpose(w)), batched weight with the last two axes swapped") {
    Builder b;
    b.input("x", {2, 5, 6})
        .constant("w", random_matrix({2, 7, 6}, rng))
        .node("Transpose", {"w"}, "wt", make_attributes({{"perm", std::vector<int64_t>{0, 2, 1}}}))
        .node("MatMul", {"x", "wt"}, "y")
        .output("y");
    const Graph g = packed(b.g);
    CHECK(count_ops(g, "Transpose") == 0);
    REQUIRE(g.nodes.size() == 1);
    CHECK(constant_input(g, 0, 1).shape() == Shape{2, 6, 7});
    const Tensor x = random_matrix({2, 5, 6}, rng);
    CHECK(max_abs_diff(run_graph(g, {x})[0], run_graph(b.g, {x})[0]) < 1e-5);
  }
  SECTION("Gemm(x, Transpose(w)) with transB=1 ends with w itself and transB=0") {
    Builder b;
    b.input("x", {16, 6})
        .constant("w", random_matrix({6, 9}, rng))
        .node("Transpose", {"w"}, "wt")  // default perm: reversed
        .node("Gemm", {"x", "wt"}, "y", trans_b(1))
        .output("y");
    const Graph g = packed(b.g);
    REQUIRE(g.nodes.size() == 1);
    CHECK(trans_b_of(g, 0) == 0);
    const Tensor &w = constant_input(g, 0, 1), &original = *b.g.tensors[b.tensor("w")].constant;
    REQUIRE(w.shape() == original.shape());
    CHECK(std::equal(w.data_as<float>(), w.data_as<float>() + w.numel(), original.data_as<float>()));
    const Tensor x = random_matrix({16, 6}, rng);
    CHECK(max_abs_diff(run_graph(g, {x})[0], run_graph(b.g, {x})[0]) < 1e-5);
  }
  SECTION("not when the transposed weight is also read elsewhere") {
    Builder b;
    b.input("x", {3, 4})
        .constant("w", random_matrix({5, 4}, rng))
        .node("Transpose", {"w"}, "wt")
        .node("MatMul", {"x", "wt"}, "y")
        .node("Relu", {"wt"}, "r")
        .output("y")
        .output("r");
    CHECK(count_ops(packed(b.g), "Transpose") == 1);
  }
}

TEST_CASE("pack_weights folds the weight Transposes too large for fold_constants", "[passes][pack_weights]") {
  std::mt19937 rng(7);
  const int64_t k = 2048, n = kMaxFoldedBytes / (k * 4) + 1;  // just over the folding limit
  Builder b;
  b.input("x", {1, k})
      .constant("w", random_matrix({n, k}, rng))
      .node("Transpose", {"w"}, "wt")
      .node("MatMul", {"x", "wt"}, "y")
      .output("y");
  const ConstantEvaluator evaluate = make_constant_evaluator();
  auto neutral = run_passes(b.g, default_passes(evaluate));
  auto cpu = run_passes(b.g, default_passes(evaluate, PassTarget::Cpu));
  REQUIRE(neutral.ok());
  REQUIRE(cpu.ok());
  CHECK(count_ops(neutral.value(), "Transpose") == 1);
  CHECK(count_ops(cpu.value(), "Transpose") == 0);
  CHECK(constant_input(cpu.value(), 0, 1).shape() == Shape{k, n});
  const Tensor x = random_matrix({1, k}, rng);
  CHECK(max_abs_diff(run_graph(cpu.value(), {x})[0], run_graph(b.g, {x})[0]) < 1e-4);
}

TEST_CASE("pack_weights runs in the CPU pipeline only, after the target-neutral passes, and --skip-pass turns it off",
          "[passes][pack_weights]") {
  const ConstantEvaluator evaluate = make_constant_evaluator();
  const std::string neutral = pass_order_text(default_passes(evaluate));
  CHECK(pass_order_text(default_passes(evaluate, PassTarget::Cpu)) ==
        neutral +
            " -> channels_last_conv -> pack_weights -> panel_matmul_weights -> winograd_conv -> flatten_pointwise_conv"
            " -> pad_conv_channels -> block_conv_weights -> block_nhwc_conv_weights");
  CHECK(pass_order_text(default_passes(evaluate, PassTarget::Gpu)) == neutral);
  CHECK(layout_passes(PassTarget::Gpu).empty());

  std::mt19937 rng(5);
  Builder b = linear(32, 64, 48, rng);
  auto cpu = optimize_graph(b.g);
  REQUIRE(cpu.ok());
  CHECK(trans_b_of(cpu.value(), 0) == 0);

  PassOptions skip;
  skip.skip = {"pack_weights"};
  auto skipped = optimize_graph(b.g, skip);
  REQUIRE(skipped.ok());
  CHECK(trans_b_of(skipped.value(), 0) == 1);
  CHECK(constant_input(skipped.value(), 0, 1).shape() == Shape{48, 64});

  Target cuda;
  cuda.kind = Target::Kind::Cuda;
  auto gpu = optimize_graph(b.g, {}, cuda);
  REQUIRE(gpu.ok());
  CHECK(trans_b_of(gpu.value(), 0) == 1);

  const Tensor x = random_matrix({32, 64}, rng);
  CHECK(max_abs_diff(run_graph(cpu.value(), {x})[0], run_graph(skipped.value(), {x})[0]) < 1e-4);
}

namespace {

/// Median milliseconds of `runs` executions after one warm-up (which compiles).
double median_ms(const Graph &g, const Tensor &x, int runs) {
  GraphExecutor executor(std::make_shared<const Graph>(g));
  REQUIRE(executor.run({x}).ok());
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(executor.run({x}).ok());
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

TEST_CASE("pack_weights speed on Gemm shapes", "[.benchmark]") {
  std::mt19937 rng(6);
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 512, 1000}, {2, 512, 1000}, {4, 512, 1000}, {8, 256, 256}, {16, 256, 256}, {128, 256, 256},
                         {32, 512, 1000}, {512, 512, 512}}) {
    Builder b = linear(m, k, n, rng);
    const Graph after = packed(b.g);
    const Tensor x = random_matrix({m, k}, rng);
    const int runs = 300;
    const double before_ms = median_ms(b.g, x, runs), after_ms = median_ms(after, x, runs);
    std::printf("Gemm %lldx%lld by %lldx%lld transB=1: %.4f ms before, %.4f ms after pack_weights%s\n",
                static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(k),
                static_cast<long long>(n), before_ms, after_ms, trans_b_of(after, 0) ? " (left as is)" : "");
  }
}
