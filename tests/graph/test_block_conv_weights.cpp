// Tests of the block_conv_weights layout pass: which convolutions get a weight blocked by
// output channels, where each weight value lands, and that the rewritten graphs compute
// the same outputs with the built-in kernels.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "executor/kernel_cache.h"
#include "graph/infer/model_stats.h"
#include "graph/passes/block_conv_weights.h"
#include "tests/graph/graph_builder.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Graph blocked_graph(const Graph &g) { return after_pass(g, {"block_conv_weights", block_conv_weights}); }

/// x [1, C, H, W] -> Conv(w [M, C/group, k, k], pad k/2) -> y.
Builder conv_graph(int64_t c, int64_t m, int64_t k, int64_t group, std::mt19937 &rng, int64_t stride = 1) {
  Builder b;
  Attributes attrs = make_attributes({{"pads", std::vector<int64_t>(4, k / 2)},
                                      {"strides", std::vector<int64_t>{stride, stride}},
                                      {"group", group}});
  b.input("x", Shape{1, c, 9, 11})
      .constant("w", random_uniform({m, c / group, k, k}, rng))
      .constant("bias", random_uniform({m}, rng))
      .node("Conv", {"x", "w", "bias"}, "y", attrs)
      .output("y");
  return b;
}

const Tensor &conv_weight(const Graph &g) { return *g.tensors[g.node_inputs[first_node_index(g, "Conv")][1]].constant; }

/// Same outputs before and after, on a random x.
void check_same_on_random_x(const Graph &before, const Graph &after, std::mt19937 &rng) {
  check_same_outputs(before, after, {random_uniform(before.tensors[before.inputs[0]].type.shape, rng)});
}

}  // namespace

TEST_CASE("block_conv_weights stores a 3x3 conv's weight as [M/16, C, 3, 3, 16]", "[passes][block_conv]") {
  std::mt19937 rng(21);
  Builder b = conv_graph(16, 32, 3, 1, rng);
  const Graph out = blocked_graph(b.g);
  const Tensor &w = conv_weight(out);
  REQUIRE(w.shape() == Shape{2, 16, 3, 3, 16});
  CHECK(conv_weight_block(first_node(out, "Conv")) == 16);
  CHECK(first_node(out, "Conv").attributes.get_ints("kernel_shape", {}) == std::vector<int64_t>{3, 3});
  // Output channel m, input channel c, tap (ky, kx) sits at [m / 16, c, ky, kx, m % 16].
  const Tensor &original = *b.g.tensors[b.g.find_tensor("w")].constant;
  const float *src = original.data_as<float>(), *dst = w.data_as<float>();
  for (int64_t m : {0, 5, 16, 31})
    for (int64_t c : {0, 15})
      for (int64_t tap : {0, 4, 8})
        CHECK(dst[(((m / 16) * 16 + c) * 9 + tap) * 16 + m % 16] == src[(m * 16 + c) * 9 + tap]);
  CHECK(out.tensors[out.outputs[0]].type.shape == Shape{1, 32, 9, 11});
  // The model's FLOPs do not count the block as a kernel dimension: 2 x outputs x C x 3 x 3.
  CHECK(compute_model_stats(out).flops == 2 * (32 * 9 * 11) * (16 * 3 * 3));
  check_same_on_random_x(b.g, out, rng);
}

TEST_CASE("block_conv_weights: strided and 5x5 convolutions compute what they did", "[passes][block_conv]") {
  std::mt19937 rng(22);
  Builder strided = conv_graph(16, 16, 3, 1, rng, 2);
  const Graph strided_out = blocked_graph(strided.g);
  CHECK(conv_weight(strided_out).shape() == Shape{1, 16, 3, 3, 16});
  check_same_on_random_x(strided.g, strided_out, rng);
  Builder wide = conv_graph(16, 48, 5, 1, rng);
  const Graph out = blocked_graph(wide.g);
  CHECK(conv_weight(out).shape() == Shape{3, 16, 5, 5, 16});
  check_same_on_random_x(wide.g, out, rng);
  // A 7x7 stride-2 stem over 3 input channels sums 147 products per output: blocked too.
  Builder stem = conv_graph(3, 64, 7, 1, rng, 2);
  const Graph stem_out = blocked_graph(stem.g);
  CHECK(conv_weight(stem_out).shape() == Shape{4, 3, 7, 7, 16});
  check_same_on_random_x(stem.g, stem_out, rng);
}

TEST_CASE("block_conv_weights: convs on maps whose whole rows share the register tile compute what they did",
          "[passes][block_conv]") {
  // Rows of 3 or 2 positions: the built-in kernel takes several rows into its register tile
  // (a late ResNet layer's 3x3 map), with an even and an odd number of 16-channel blocks,
  // a row count the tile divides and one it must not (5 rows of 2), and a strided conv.
  std::mt19937 rng(25);
  struct Case {
    int64_t c, m, h, w, stride;
  };
  for (const Case &k : std::vector<Case>{{32, 64, 3, 3, 1}, {16, 48, 6, 3, 1}, {16, 32, 5, 2, 1}, {32, 64, 6, 6, 2}}) {
    Builder b;
    b.input("x", Shape{1, k.c, k.h, k.w})
        .constant("w", random_uniform({k.m, k.c, 3, 3}, rng))
        .constant("bias", random_uniform({k.m}, rng))
        .node("Conv", {"x", "w", "bias"}, "y",
              make_attributes({{"pads", std::vector<int64_t>(4, 1)}, {"strides", std::vector<int64_t>{k.stride, k.stride}}}))
        .output("y");
    const Graph out = blocked_graph(b.g);
    CHECK(conv_weight_block(first_node(out, "Conv")) == 16);
    check_same_on_random_x(b.g, out, rng);
  }
}

TEST_CASE("block_conv_weights leaves convolutions it cannot block as they are", "[passes][block_conv]") {
  std::mt19937 rng(23);
  // 1x1 (a matrix product, flatten_pointwise_conv's), grouped, 24 output channels, and a
  // 3x3 stem over 3 input channels (27 products per output).
  for (const auto &[c, m, k, group] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {16, 32, 1, 1}, {32, 32, 3, 32}, {16, 24, 3, 1}, {3, 32, 3, 1}}) {
    Builder b = conv_graph(c, m, k, group, rng);
    const Graph out = blocked_graph(b.g);
    CHECK(conv_weight(out).shape() == Shape{m, c / group, k, k});
    CHECK(conv_weight_block(first_node(out, "Conv")) == 1);
  }
  // A weight two convolutions share stays as it is: blocking it for one would copy it.
  Builder shared;
  shared.input("x", Shape{1, 16, 6, 6})
      .constant("w", random_uniform({16, 16, 3, 3}, rng))
      .node("Conv", {"x", "w"}, "a", make_attributes({{"pads", std::vector<int64_t>(4, 1)}}))
      .node("Conv", {"x", "w"}, "b", make_attributes({{"pads", std::vector<int64_t>(4, 1)}}))
      .node("Add", {"a", "b"}, "y")
      .output("y");
  CHECK(conv_weight(blocked_graph(shared.g)).shape() == Shape{16, 16, 3, 3});
}

TEST_CASE("block_conv_weights blocks 3-D convolutions too: (3,3,3), (1,3,3), (3,1,1) and strided", "[passes][block_conv]") {
  std::mt19937 rng(24);
  // mc3_18 and r2plus1d_18 use these: 3-D kernels, and the (1,3,3) spatial and (3,1,1)
  // temporal halves of a (2+1)-D block.
  struct Case {
    Shape kernel;
    std::vector<int64_t> strides;
  };
  for (const Case &c : std::vector<Case>{{{3, 3, 3}, {1, 1, 1}}, {{1, 3, 3}, {1, 2, 2}}, {{3, 1, 1}, {1, 1, 1}}}) {
    INFO(shape_to_string(c.kernel));
    std::vector<int64_t> pads;
    for (int side = 0; side < 2; ++side)
      for (int64_t k : c.kernel) pads.push_back(k / 2);
    Builder b;
    b.input("x", Shape{1, 48, 3, 7, 6})
        .constant("w", random_uniform({32, 48, c.kernel[0], c.kernel[1], c.kernel[2]}, rng))
        .constant("bias", random_uniform({32}, rng))
        .node("Conv", {"x", "w", "bias"}, "y", make_attributes({{"pads", pads}, {"strides", c.strides}}))
        .output("y");
    const Graph out = blocked_graph(b.g);
    CHECK(conv_weight(out).shape() == Shape{2, 48, c.kernel[0], c.kernel[1], c.kernel[2], 16});
    CHECK(conv_weight_block(first_node(out, "Conv")) == 16);
    check_same_on_random_x(b.g, out, rng);
  }
}

TEST_CASE("the built-in conv kernels compute the same with the register tiles of 128-, 256- and 512-bit vectors",
          "[passes][block_conv]") {
  // The tiles follow the host's vectors (compute/vector_isa.h); TESSEL_VECTOR_BITS makes
  // each width's tiling run here, whatever this host has.
  std::mt19937 rng(29);
  for (const char *bits : {"128", "256", "512"}) {
    INFO("TESSEL_VECTOR_BITS=" << bits);
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    const int compiled_before = kernel_cache_stats().compiled;
    for (int64_t m : {32, 48}) {  // two blocks per tile where they fit, and an odd count
      Builder b = conv_graph(16, m, 3, 1, rng);
      const Graph out = blocked_graph(b.g);
      REQUIRE(conv_weight_block(first_node(out, "Conv")) == 16);
      check_same_on_random_x(b.g, out, rng);
    }
    CHECK(kernel_cache_stats().compiled > compiled_before);  // the width's own kernels, not cached ones
  }
  unsetenv("TESSEL_VECTOR_BITS");
}

TEST_CASE("blocked convs on short rows (wide-row tiles across rows) compute what they did", "[passes][block_conv]") {
  // Maps whose rows hold at most 2 positions of a row tile: 7x7, 13x13, 14x14 from a stride-2
  // conv, a dilated 3x3, a 5x5 and a map with a single position; at each vector width.
  std::mt19937 rng(31);
  struct Case {
    int64_t size, k, stride, dilation;
  };
  for (const char *bits : {"256", "512"}) {
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    for (const Case &c : std::vector<Case>{{7, 3, 1, 1}, {13, 3, 1, 1}, {28, 3, 2, 1}, {14, 3, 2, 1},
                                           {11, 3, 1, 2}, {9, 5, 1, 1}, {1, 3, 1, 1}}) {
      INFO("TESSEL_VECTOR_BITS=" << bits << " map " << c.size << " kernel " << c.k << " stride " << c.stride
                                 << " dilation " << c.dilation);
      const int64_t pad = c.k / 2 * c.dilation;
      Builder b;
      b.input("x", Shape{1, 24, c.size, c.size})
          .constant("w", random_uniform({32, 24, c.k, c.k}, rng))
          .constant("bias", random_uniform({32}, rng))
          .node("Conv", {"x", "w", "bias"}, "y",
                make_attributes({{"pads", std::vector<int64_t>(4, pad)},
                                 {"strides", std::vector<int64_t>{c.stride, c.stride}},
                                 {"dilations", std::vector<int64_t>{c.dilation, c.dilation}}}))
          .output("y");
      const Graph out = blocked_graph(b.g);
      REQUIRE(conv_weight_block(first_node(out, "Conv")) == 16);
      check_same_on_random_x(b.g, out, rng);
    }
  }
  unsetenv("TESSEL_VECTOR_BITS");
}

TEST_CASE("block_conv_weights blocks 1x1 convs over maps of at most 36 positions, same outputs", "[passes][block_conv]") {
  // Maps too small to fill vectors along them: 3x3, 6x6 and a pooled 1x1 (a squeeze-and-
  // excitation conv); 7x7 and larger stay matrix products.
  std::mt19937 rng(32);
  for (const auto &[size, blocked] : std::vector<std::pair<int64_t, bool>>{{3, true}, {6, true}, {1, true}, {7, false}}) {
    INFO("map " << size << "x" << size);
    Builder b;
    b.input("x", Shape{1, 128, size, size})
        .constant("w", random_uniform({48, 128, 1, 1}, rng))
        .constant("bias", random_uniform({48}, rng))
        .node("Conv", {"x", "w", "bias"}, "y")
        .output("y");
    const Graph out = blocked_graph(b.g);
    CHECK(conv_weight_block(first_node(out, "Conv")) == (blocked ? 16 : 1));
    check_same_on_random_x(b.g, out, rng);
  }
}

TEST_CASE("block_conv_weights blocks grouped convs by 16 output channels, or by 8 where groups hold 8",
          "[passes][block_conv]") {
  // RegNet-X: groups of 16 in and 16 out; ResNeXt's late stages: 16 or 32 per group; RegNet-Y:
  // groups of 8 (blocked by 8). Row and wide-row tiles, plain and strided.
  std::mt19937 rng(33);
  struct Case {
    int64_t c, m, group, size, stride, block;
  };
  for (const Case &t : std::vector<Case>{{64, 64, 4, 12, 1, 16},
                                         {96, 96, 6, 7, 1, 16},
                                         {64, 128, 2, 14, 2, 16},
                                         {64, 64, 2, 9, 1, 16},
                                         {64, 64, 8, 12, 1, 8},
                                         {104, 104, 13, 24, 2, 8},
                                         {24, 24, 3, 7, 1, 8}}) {
    INFO(t.c << " -> " << t.m << " in " << t.group << " groups on " << t.size << "x" << t.size << " stride " << t.stride);
    Builder b;
    b.input("x", Shape{1, t.c, t.size, t.size})
        .constant("w", random_uniform({t.m, t.c / t.group, 3, 3}, rng))
        .constant("bias", random_uniform({t.m}, rng))
        .node("Conv", {"x", "w", "bias"}, "y",
              make_attributes({{"pads", std::vector<int64_t>(4, 1)},
                               {"strides", std::vector<int64_t>{t.stride, t.stride}},
                               {"group", t.group}}))
        .output("y");
    const Graph out = blocked_graph(b.g);
    REQUIRE(conv_weight_block(first_node(out, "Conv")) == t.block);
    CHECK(conv_weight(out).shape() == Shape{t.m / t.block, t.c / t.group, 3, 3, t.block});
    check_same_on_random_x(b.g, out, rng);
  }
}
