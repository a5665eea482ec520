// Tests of the winograd_conv layout pass: which convolutions become the three Winograd
// kernels, the shapes between them, and that the rewritten graphs compute the same outputs
// with the built-in kernels.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "graph/passes/winograd_conv.h"
#include "tests/graph/graph_builder.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Graph winograd_graph(const Graph &g) { return after_pass(g, {"winograd_conv", winograd_conv}); }

struct ConvCase {
  int64_t batch = 1, c = 32, m = 32, h = 28, w = 30, k = 3, group = 1, stride = 1, pad = 1;
  bool bias = true;
};

/// x [N, C, H, W] -> Conv -> Relu -> y.
Builder conv_graph(const ConvCase &p, std::mt19937 &rng) {
  Builder b;
  Attributes attrs = make_attributes({{"pads", std::vector<int64_t>(4, p.pad)},
                                      {"strides", std::vector<int64_t>{p.stride, p.stride}},
                                      {"group", p.group}});
  b.input("x", Shape{p.batch, p.c, p.h, p.w}).constant("w", random_uniform({p.m, p.c / p.group, p.k, p.k}, rng));
  std::vector<std::string> ins = {"x", "w"};
  if (p.bias) {
    b.constant("bias", random_uniform({p.m}, rng));
    ins.push_back("bias");
  }
  b.node("Conv", ins, "conv_out", attrs).node("Relu", {"conv_out"}, "y").output("y");
  return b;
}

const TensorType &type_of(const Graph &g, const std::string &op, bool output) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op_type == op) return g.tensors[output ? g.node_outputs[n][0] : g.node_inputs[n][0]].type;
  FAIL("no " << op);
  return g.tensors.front().type;
}

/// Same outputs before and after on a random x, to the Winograd transforms' rounding: F(4x4,
/// 3x3) scales values by up to 8 x 8 before the sum, so the error is relative to the outputs'
/// size (about 1e-6 of it), not absolute.
void check_same_on_random_x(const Graph &before, const Graph &after, std::mt19937 &rng) {
  const std::vector<Tensor> inputs = {random_uniform(before.tensors[before.inputs[0]].type.shape, rng)};
  const std::vector<Tensor> a = run_graph(before, inputs), b = run_graph(after, inputs);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  REQUIRE(a[0].shape() == b[0].shape());
  const float *x = a[0].data_as<float>(), *y = b[0].data_as<float>();
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < a[0].numel(); ++i) {
    diff += (x[i] - y[i]) * double(x[i] - y[i]);
    norm += x[i] * double(x[i]);
  }
  REQUIRE(norm > 0);
  CHECK(std::sqrt(diff / norm) < 1e-5);
}

}  // namespace

TEST_CASE("winograd_conv turns a 3x3 conv into input transform, product and output transform",
          "[passes][winograd]") {
  std::mt19937 rng(31);
  ConvCase p;  // 28x30: the last column of tiles is half outside the output
  Builder b = conv_graph(p, rng);
  const Graph out = winograd_graph(b.g);
  CHECK(count_ops(out, "Conv") == 0);
  CHECK(count_ops(out, kWinogradInputOp) == 1);
  CHECK(count_ops(out, "MatMul") == 1);
  CHECK(count_ops(out, kWinogradOutputOp) == 1);
  CHECK(type_of(out, kWinogradInputOp, true).shape == Shape{1, 36, 32, 7, 8});
  CHECK(type_of(out, "MatMul", true).shape == Shape{1, 36, 32, 56});
  CHECK(type_of(out, kWinogradOutputOp, true).shape == Shape{1, 32, 28, 30});
  for (const Node &node : out.nodes)
    if (node.op_type == kWinogradInputOp || node.op_type == kWinogradOutputOp)
      CHECK(node.attributes.get_int(kWinogradTileAttr, 0) == 4);
  // The transformed weight: 36 points x M x C, read only by the product.
  for (size_t n = 0; n < out.nodes.size(); ++n)
    if (out.nodes[n].op_type == "MatMul") CHECK(out.tensors[out.node_inputs[n][0]].constant->shape() == Shape{36, 32, 32});
  check_same_on_random_x(b.g, out, rng);
}

TEST_CASE("winograd_conv uses F(2x2, 3x3) on maps from 14x14 to below 28x28", "[passes][winograd]") {
  std::mt19937 rng(34);
  ConvCase p;
  p.h = 14;
  p.w = 15;  // the last column of tiles is half outside the output
  Builder b = conv_graph(p, rng);
  const Graph out = winograd_graph(b.g);
  CHECK(count_ops(out, "Conv") == 0);
  CHECK(type_of(out, kWinogradInputOp, true).shape == Shape{1, 16, 32, 7, 8});
  CHECK(type_of(out, "MatMul", true).shape == Shape{1, 16, 32, 56});
  for (const Node &node : out.nodes)
    if (node.op_type == kWinogradInputOp || node.op_type == kWinogradOutputOp)
      CHECK(node.attributes.get_int(kWinogradTileAttr, 0) == 2);
  check_same_on_random_x(b.g, out, rng);
}

TEST_CASE("winograd_conv takes 7x7 maps of 512 channels with F(2x2, 3x3)", "[passes][winograd]") {
  std::mt19937 rng(35);
  ConvCase p;
  p.c = p.m = 512;
  p.h = p.w = 7;  // 4x4 tiles, the last row and column half outside the output
  Builder b = conv_graph(p, rng);
  const Graph out = winograd_graph(b.g);
  CHECK(count_ops(out, "Conv") == 0);
  CHECK(type_of(out, kWinogradInputOp, true).shape == Shape{1, 16, 512, 4, 4});
  CHECK(type_of(out, "MatMul", true).shape == Shape{1, 16, 512, 16});
  check_same_on_random_x(b.g, out, rng);
  p.h = p.w = 6;  // below 7x7: left alone
  CHECK(count_ops(winograd_graph(conv_graph(p, rng).g), "Conv") == 1);
}

TEST_CASE("winograd_conv: a batch of two and no bias compute what they did", "[passes][winograd]") {
  std::mt19937 rng(32);
  ConvCase p;
  p.batch = 2;
  p.h = p.w = 28;
  p.bias = false;
  Builder b = conv_graph(p, rng);
  const Graph out = winograd_graph(b.g);
  CHECK(count_ops(out, kWinogradOutputOp) == 1);
  CHECK(type_of(out, kWinogradInputOp, true).shape == Shape{2, 36, 32, 7, 7});
  check_same_on_random_x(b.g, out, rng);
}

TEST_CASE("winograd_conv leaves other convolutions alone", "[passes][winograd]") {
  std::mt19937 rng(33);
  auto unchanged = [&](ConvCase p) {
    Builder b = conv_graph(p, rng);
    const Graph out = winograd_graph(b.g);
    CHECK(count_ops(out, "Conv") == 1);
    CHECK(count_ops(out, kWinogradInputOp) == 0);
  };
  ConvCase strided;
  strided.stride = 2;
  strided.h = strided.w = 56;
  unchanged(strided);
  ConvCase grouped;
  grouped.group = 2;
  unchanged(grouped);
  ConvCase few_channels;
  few_channels.c = 16;
  unchanged(few_channels);
  ConvCase small;  // 12x12: too few tiles to fill the product's vectors
  small.h = small.w = 12;
  unchanged(small);
  ConvCase small_wide = small;  // 12x12 with 256 channels: the direct conv was faster
  small_wide.c = small_wide.m = 256;
  unchanged(small_wide);
  ConvCase five;
  five.k = 5;
  five.pad = 2;
  unchanged(five);
  ConvCase unpadded;
  unpadded.pad = 0;
  unchanged(unpadded);

  // A weight another node also reads is left as it is.
  Builder shared;
  Attributes attrs = make_attributes({{"pads", std::vector<int64_t>(4, 1)}});
  shared.input("x", Shape{1, 32, 28, 28})
      .constant("w", random_uniform({32, 32, 3, 3}, rng))
      .node("Conv", {"x", "w"}, "a", attrs)
      .node("Conv", {"a", "w"}, "y", attrs)
      .output("y");
  CHECK(count_ops(winograd_graph(shared.g), "Conv") == 2);
}

TEST_CASE("the Winograd transforms are exact, and their runtime matrices exact in float32", "[passes][winograd]") {
  for (int tile : {2, 4}) {
    const WinogradTransform *t = winograd_transform(tile);
    REQUIRE(t != nullptr);
    const int s = t->input_tile;
    // In exact arithmetic A^T [(G g) . (B^T d)] is the correlation of d with g: checked on
    // every pair of basis vectors (the map is bilinear), in double.
    for (int a = 0; a < s; ++a)
      for (int b = 0; b < 3; ++b)
        for (int i = 0; i < tile; ++i) {
          double y = 0;
          for (int j = 0; j < s; ++j) y += t->AT(i, j) * t->G(j, b) * t->BT(j, a);
          INFO("F(" << tile << ", 3): d = e" << a << ", g = e" << b << ", output " << i);
          CHECK(y == Approx(a == i + b ? 1.0 : 0.0).margin(1e-12));
        }
    // B^T and A^T are applied to activations in float32 at run time (G only at compile time,
    // in double): a coefficient float32 cannot hold would add its own rounding error.
    for (int i = 0; i < s; ++i)
      for (int j = 0; j < s; ++j) CHECK(static_cast<double>(static_cast<float>(t->BT(i, j))) == t->BT(i, j));
    for (int i = 0; i < tile; ++i)
      for (int j = 0; j < s; ++j) CHECK(static_cast<double>(static_cast<float>(t->AT(i, j))) == t->AT(i, j));
  }
}
