// Tests of the flatten_pointwise_conv layout pass: which convolutions run on [N, C, 1, H*W],
// which elementwise ops follow them flat, that fusion groups stay as they were, and that
// the rewritten graphs compute the same outputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "graph/fusion/fuse.h"
#include "graph/passes/flatten_pointwise_conv.h"
#include "graph/passes/pass_manager.h"
#include "tests/graph/graph_builder.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Tensor random_tensor(Shape shape, std::mt19937 &rng) { return random_uniform(std::move(shape), rng); }

Graph flattened(const Graph &g) { return after_pass(g, {"flatten_pointwise_conv", flatten_pointwise_conv}); }

/// The shape of the tensor node `op` (the first of that type) writes.
Shape output_shape_of(const Graph &g, const std::string &op) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op_type == op) return g.tensors[g.node_outputs[n][0]].type.shape;
  FAIL("no " << op);
  return {};
}

/// Op lists of the fused groups that are kernels, sorted.
std::vector<std::string> kernel_groups(const Graph &g) {
  std::vector<std::string> ops;
  for (const FusedGroup &group : partition_graph(g))
    if (!runs_on_host(g.nodes[group.anchor].op_type)) ops.push_back(group_ops_text(g, group));
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace

TEST_CASE("flatten_pointwise_conv runs a 1x1 conv and its epilogue flat, residual included", "[passes][flatten]") {
  std::mt19937 rng(11);
  // y = Clip(Conv1x1(x) + r, 0, 6) * s: the Add's full-shape operand is viewed flat, the
  // scalar bounds and the per-channel scale are read as they are.
  Builder b;
  b.input("x", Shape{1, 16, 7, 7})
      .input("r", Shape{1, 24, 7, 7})
      .constant("w", random_tensor({24, 16, 1, 1}, rng))
      .constant("bias", random_tensor({24}, rng))
      .constant("lo", Tensor::scalar(DType::Float32, 0.0f))
      .constant("hi", Tensor::scalar(DType::Float32, 6.0f))
      .constant("s", random_tensor({24, 1, 1}, rng))
      .node("Conv", {"x", "w", "bias"}, "c", make_attributes({{"kernel_shape", std::vector<int64_t>{1, 1}}}))
      .node("Add", {"c", "r"}, "a")
      .node("Clip", {"a", "lo", "hi"}, "k")
      .node("Mul", {"k", "s"}, "y")
      .output("y");
  const Graph out = flattened(b.g);
  CHECK(output_shape_of(out, "Conv") == Shape{1, 24, 1, 49});
  CHECK(output_shape_of(out, "Mul") == Shape{1, 24, 1, 49});
  CHECK(count_ops(out, "Reshape") == 3);  // x and r viewed flat, y viewed back
  CHECK(out.tensors[out.outputs[0]].type.shape == Shape{1, 24, 7, 7});
  CHECK(kernel_groups(out) == kernel_groups(b.g));
  check_same_outputs(b.g, out, {random_tensor({1, 16, 7, 7}, rng), random_tensor({1, 24, 7, 7}, rng)});
}

TEST_CASE("flatten_pointwise_conv stops the flat chain where an op needs the rows", "[passes][flatten]") {
  std::mt19937 rng(12);
  // The Add's operand varies along W: it cannot broadcast against the flat layout, so the
  // conv is flattened alone and viewed back before the Add.
  Builder b;
  b.input("x", Shape{2, 8, 5, 6})
      .constant("w", random_tensor({4, 8, 1, 1}, rng))
      .constant("row", random_tensor({6}, rng))
      .node("Conv", {"x", "w"}, "c")
      .node("Add", {"c", "row"}, "y")
      .output("y");
  const Graph out = flattened(b.g);
  CHECK(output_shape_of(out, "Conv") == Shape{2, 4, 1, 30});
  CHECK(output_shape_of(out, "Add") == Shape{2, 4, 5, 6});
  check_same_outputs(b.g, out, {random_tensor({2, 8, 5, 6}, rng)});
}

TEST_CASE("flatten_pointwise_conv leaves convolutions that are not pointwise", "[passes][flatten]") {
  std::mt19937 rng(13);
  const auto conv_graph = [&](Shape w_shape, Attributes attributes) {
    Builder b;
    b.input("x", Shape{1, 8, 6, 6}).constant("w", random_tensor(w_shape, rng));
    b.node("Conv", {"x", "w"}, "y", std::move(attributes)).output("y");
    return b.g;
  };
  const std::vector<Graph> kept = {
      conv_graph({8, 8, 3, 3}, make_attributes({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})),
      conv_graph({8, 8, 1, 1}, make_attributes({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})),
      conv_graph({8, 1, 1, 1}, make_attributes({{"group", int64_t{8}}})),
  };
  for (const Graph &g : kept) {
    const Graph out = flattened(g);
    CHECK(count_ops(out, "Reshape") == 0);
  }
  // A single row is already flat.
  Builder row;
  row.input("x", Shape{1, 8, 1, 40}).constant("w", random_tensor({8, 8, 1, 1}, rng));
  row.node("Conv", {"x", "w"}, "y").output("y");
  CHECK(count_ops(flattened(row.g), "Reshape") == 0);
}

TEST_CASE("flatten_pointwise_conv subsamples the input of a strided 1x1 conv first", "[passes][flatten]") {
  std::mt19937 rng(15);
  // ResNet's downsampling conv with its residual Add and ReLU; odd sizes, so the last row
  // and column of the input are read and the output is ceil(H / 2) x ceil(W / 2).
  Builder b;
  b.input("x", Shape{1, 8, 13, 11})
      .input("r", Shape{1, 16, 7, 6})
      .constant("w", random_tensor({16, 8, 1, 1}, rng))
      .constant("bias", random_tensor({16}, rng))
      .node("Conv", {"x", "w", "bias"}, "c", make_attributes({{"strides", std::vector<int64_t>{2, 2}}}))
      .node("Add", {"c", "r"}, "a")
      .node("Relu", {"a"}, "y")
      .output("y");
  b.g.opset = 17;
  const Graph out = flattened(b.g);
  CHECK(count_ops(out, "Slice") == 1);
  CHECK(output_shape_of(out, "Slice") == Shape{1, 8, 7, 6});
  CHECK(output_shape_of(out, "Conv") == Shape{1, 16, 1, 42});
  check_same_outputs(b.g, out, {random_tensor({1, 8, 13, 11}, rng), random_tensor({1, 16, 7, 6}, rng)});

  // Before opset 10 Slice has no steps: the conv stays as it was.
  b.g.opset = 9;
  CHECK(count_ops(flattened(b.g), "Slice") == 0);
}

TEST_CASE("flatten_pointwise_conv keeps a conv output that is also a graph output", "[passes][flatten]") {
  std::mt19937 rng(14);
  Builder b;
  b.input("x", Shape{1, 4, 3, 3})
      .constant("w", random_tensor({4, 4, 1, 1}, rng))
      .node("Conv", {"x", "w"}, "c")
      .node("Relu", {"c"}, "y")
      .output("c")
      .output("y");
  const Graph out = flattened(b.g);
  CHECK(out.tensors[out.outputs[0]].type.shape == Shape{1, 4, 3, 3});
  CHECK(output_shape_of(out, "Relu") == Shape{1, 4, 3, 3});  // c is pinned: the chain stops there
  check_same_outputs(b.g, out, {random_tensor({1, 4, 3, 3}, rng)});
}
