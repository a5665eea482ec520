// Tests of the pad_conv_channels layout pass: which convolutions get whole blocks of output
// channels, that block_conv_weights then blocks them, and that the rewritten graphs compute
// the same outputs with the built-in kernels.
#include <catch2/catch.hpp>

#include <random>

#include "graph/passes/block_conv_weights.h"
#include "graph/passes/pad_conv_channels.h"
#include "tests/graph/graph_builder.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Graph padded_graph(const Graph &g) { return after_pass(g, {"pad_conv_channels", pad_conv_channels}); }

/// x [1, C, H, W] -> Conv(w [M, C/group, k, k], pad k/2) -> Relu -> y.
Builder conv_relu_graph(int64_t c, int64_t m, int64_t k, int64_t h, std::mt19937 &rng, int64_t group = 1) {
  Builder b;
  Attributes attrs = make_attributes({{"pads", std::vector<int64_t>(4, k / 2)}, {"group", group}});
  b.input("x", Shape{1, c, h, h})
      .constant("w", random_uniform({m, c / group, k, k}, rng))
      .constant("bias", random_uniform({m}, rng))
      .node("Conv", {"x", "w", "bias"}, "conv", attrs)
      .node("Relu", {"conv"}, "y")
      .output("y");
  return b;
}

void check_same_on_random_x(const Graph &before, const Graph &after, std::mt19937 &rng) {
  check_same_outputs(before, after, {random_uniform(before.tensors[before.inputs[0]].type.shape, rng)});
}

}  // namespace

TEST_CASE("padded_conv_channels: two blocks, else one, within a sixteenth", "[passes][pad_conv_channels]") {
  CHECK(padded_conv_channels(1000) == 1024);  // SqueezeNet's classifier: 2.4% more
  CHECK(padded_conv_channels(440) == 448);    // RegNet-Y-400MF: 448 is 14 pairs of blocks
  CHECK(padded_conv_channels(250) == 256);
  CHECK(padded_conv_channels(200) == 208);    // 224 would be 12% more: one block
  CHECK(padded_conv_channels(104) == 104);    // 112 would be 7.7% more
  CHECK(padded_conv_channels(1024) == 1024);
  CHECK(padded_conv_channels(48) == 48);
  CHECK(padded_conv_channels(10) == 10);
}

TEST_CASE("pad_conv_channels: a 1x1 conv to 250 channels on a 5x5 map is padded to 256 and blocked",
          "[passes][pad_conv_channels]") {
  std::mt19937 rng(31);
  Builder b = conv_relu_graph(128, 250, 1, 5, rng);
  const Graph padded = padded_graph(b.g);
  REQUIRE(count_ops(padded, "Slice") == 1);
  const int conv = first_node_index(padded, "Conv");
  CHECK(padded.tensors[padded.node_inputs[conv][1]].constant->shape() == Shape{256, 128, 1, 1});
  CHECK(padded.tensors[padded.node_inputs[conv][2]].constant->shape() == Shape{256});
  CHECK(padded.tensors[padded.node_outputs[conv][0]].type.shape == Shape{1, 256, 5, 5});
  CHECK(padded.tensors[padded.outputs[0]].type.shape == Shape{1, 250, 5, 5});
  check_same_on_random_x(b.g, padded, rng);
  // What block_conv_weights left alone before, it blocks now.
  const Graph blocked = after_pass(padded, {"block_conv_weights", block_conv_weights});
  CHECK(conv_weight_block(first_node(blocked, "Conv")) == kConvWeightBlock);
  CHECK(conv_weight_block(first_node(after_pass(b.g, {"block_conv_weights", block_conv_weights}), "Conv")) == 1);
  check_same_on_random_x(b.g, blocked, rng);
}

TEST_CASE("pad_conv_channels: a 3x3 conv to 200 channels pads one block", "[passes][pad_conv_channels]") {
  std::mt19937 rng(32);
  Builder b = conv_relu_graph(16, 200, 3, 7, rng);
  const Graph blocked = after_pass(padded_graph(b.g), {"block_conv_weights", block_conv_weights});
  const int conv = first_node_index(blocked, "Conv");
  CHECK(blocked.tensors[blocked.node_inputs[conv][1]].constant->shape() == Shape{13, 16, 3, 3, 16});
  check_same_on_random_x(b.g, blocked, rng);
}

TEST_CASE("pad_conv_channels leaves convs it cannot pad cheaply or that would not be blocked",
          "[passes][pad_conv_channels]") {
  std::mt19937 rng(33);
  for (Builder b : {conv_relu_graph(128, 104, 1, 5, rng),      // 112 channels: 7.7% more
                    conv_relu_graph(128, 250, 1, 9, rng),      // 81 positions: a matrix product along them
                    conv_relu_graph(4, 250, 3, 5, rng),        // 36 products per output
                    conv_relu_graph(128, 250, 1, 5, rng, 2)})  // two groups
    CHECK(count_ops(padded_graph(b.g), "Slice") == 0);
  // A weight another node reads too stays as it is.
  Builder shared = conv_relu_graph(128, 250, 1, 5, rng);
  shared.node("Conv", {"x", "w"}, "other").output("other");
  CHECK(count_ops(padded_graph(shared.g), "Slice") == 0);
}
