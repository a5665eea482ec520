// Tests of the block_nhwc_conv_weights layout pass: which channels-last convolutions get a
// weight blocked by output channels, where each weight value lands, and that the rewritten
// graphs compute the same outputs with the built-in kernels at every vector width.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "graph/infer/model_stats.h"
#include "graph/passes/block_conv_weights.h"
#include "graph/passes/block_nhwc_conv_weights.h"
#include "graph/passes/channels_last_conv.h"
#include "tests/graph/graph_builder.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Graph channels_last(const Graph &g) { return after_pass(g, {"channels_last_conv", channels_last_conv}); }
Graph blocked(const Graph &g) { return after_pass(g, {"block_nhwc_conv_weights", block_nhwc_conv_weights}); }

Attributes conv_attrs(int64_t group, int64_t stride, int64_t pad) {
  return make_attributes({{"group", group},
                          {"strides", std::vector<int64_t>{stride, stride}},
                          {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
}

/// x [1, C, H, W] -> depthwise 3x3 -> Relu -> Conv(w [M, C / group, k, k]) -> y: the
/// depthwise conv makes channels_last_conv convert both.
Builder depthwise_then_conv(int64_t c, int64_t m, int64_t k, int64_t group, int64_t size, std::mt19937 &rng,
                            int64_t stride = 1) {
  Builder b;
  b.input("x", Shape{1, c, size, size})
      .constant("wd", random_uniform({c, 1, 3, 3}, rng))
      .constant("w", random_uniform({m, c / group, k, k}, rng))
      .constant("bias", random_uniform({m}, rng))
      .node("Conv", {"x", "wd"}, "d", conv_attrs(c, 1, 1))
      .node("Relu", {"d"}, "r")
      .node("Conv", {"r", "w", "bias"}, "y", conv_attrs(group, stride, k / 2))
      .output("y");
  return b;
}

/// The weight of the last channels-last conv, and the node.
int last_nhwc_conv(const Graph &g) {
  int last = -1;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op_type == kConvNhwcOp) last = static_cast<int>(n);
  REQUIRE(last >= 0);
  return last;
}
const Tensor &weight_of(const Graph &g, int n) { return *g.tensors[g.node_inputs[n][1]].constant; }

}  // namespace

TEST_CASE("block_nhwc_conv_weights stores [KH, KW, C, M] as [M/16, KH, KW, C, 16]", "[passes][block_nhwc]") {
  std::mt19937 rng(41);
  Builder b = depthwise_then_conv(8, 48, 3, 1, 7, rng);
  const Graph nhwc = channels_last(b.g);
  const Graph out = blocked(nhwc);
  const int conv = last_nhwc_conv(out);
  REQUIRE(weight_of(out, conv).shape() == Shape{3, 3, 3, 8, 16});
  CHECK(conv_weight_block(out.nodes[conv]) == 16);
  // HWIO element (ky, kx, c, o) sits at [o / 16, ky, kx, c, o % 16].
  const Tensor &hwio = weight_of(nhwc, last_nhwc_conv(nhwc));
  REQUIRE(hwio.shape() == Shape{3, 3, 8, 48});
  const float *src = hwio.data_as<float>(), *dst = weight_of(out, conv).data_as<float>();
  for (int64_t o : {0, 15, 16, 47})
    for (int64_t tap : {0, 4, 8})
      for (int64_t c : {0, 7})
        CHECK(dst[(((o / 16) * 9 + tap) * 8 + c) * 16 + o % 16] == src[(tap * 8 + c) * 48 + o]);
  // The depthwise conv keeps its weight; FLOPs do not change.
  CHECK(conv_weight_block(out.nodes[first_node_index(out, kConvNhwcOp)]) == 1);
  CHECK(compute_model_stats(out).flops == compute_model_stats(nhwc).flops);
  CHECK(out.tensors[out.outputs[0]].type.shape == Shape{1, 48, 7, 7});
  check_same_outputs(b.g, out, {random_uniform({1, 8, 7, 7}, rng)});
}

TEST_CASE("block_nhwc_conv_weights leaves weights it cannot block as they are", "[passes][block_nhwc]") {
  std::mt19937 rng(42);
  // 24 output channels (not whole blocks), 16 (one block already), two groups.
  for (const auto &[m, group] : std::vector<std::pair<int64_t, int64_t>>{{24, 1}, {16, 1}, {32, 2}}) {
    INFO(m << " output channels, " << group << " groups");
    const Graph nhwc = channels_last(depthwise_then_conv(16, m, 1, group, 5, rng).g);
    const Graph out = blocked(nhwc);
    CHECK(conv_weight_block(out.nodes[last_nhwc_conv(out)]) == 1);
    CHECK(weight_of(out, last_nhwc_conv(out)).shape() == Shape{1, 1, 16 / group, m});
  }
}

TEST_CASE("blocked channels-last convs compute what they did at every vector width", "[passes][block_nhwc]") {
  // 1x1 convs on 3x3 and 7x7 maps (whole rows in the tile), a 3x3 and a strided 3x3, and a
  // map whose row is wider than the tile; TESSEL_VECTOR_BITS runs each width's tiles here.
  std::mt19937 rng(43);
  struct Case {
    int64_t c, m, k, size, stride;
  };
  const std::vector<Case> cases = {{40, 64, 1, 3, 1}, {24, 32, 1, 7, 1}, {16, 48, 3, 6, 1}, {16, 32, 3, 9, 2},
                                   {8, 96, 1, 20, 1}};
  for (const char *bits : {"128", "256", "512"}) {
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    for (const Case &c : cases) {
      INFO("TESSEL_VECTOR_BITS=" << bits << " " << c.c << " -> " << c.m << " k " << c.k << " on " << c.size << "x"
                                 << c.size << " stride " << c.stride);
      Builder b = depthwise_then_conv(c.c, c.m, c.k, 1, c.size, rng, c.stride);
      const Graph out = blocked(channels_last(b.g));
      REQUIRE(conv_weight_block(out.nodes[last_nhwc_conv(out)]) == 16);
      check_same_outputs(b.g, out, {random_uniform({1, c.c, c.size, c.size}, rng)});
    }
  }
  unsetenv("TESSEL_VECTOR_BITS");
}

TEST_CASE("TesselConvNHWC's shape inference refuses a weight that is not blocked as declared", "[passes][block_nhwc]") {
  CHECK(nhwc_conv_weight_dims({3, 3, 8, 48}, 1)->out_channels == 48);
  const auto blocked_dims = nhwc_conv_weight_dims({3, 3, 3, 8, 16}, 16);
  REQUIRE(blocked_dims);
  CHECK(blocked_dims->kernel_h == 3);
  CHECK(blocked_dims->in_per_group == 8);
  CHECK(blocked_dims->out_channels == 48);
  CHECK_FALSE(nhwc_conv_weight_dims({3, 3, 3, 8, 8}, 16));  // last extent is not the block
  CHECK_FALSE(nhwc_conv_weight_dims({3, 3, 8, 48}, 16));    // 4-D where 5-D is declared
  CHECK_FALSE(nhwc_conv_weight_dims({3, 3, 3, 8, 16}, 1));
}
