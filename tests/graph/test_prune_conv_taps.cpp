// Tests of prune_conv_taps: a Conv's taps that read only padding at every output position
// are cut from its weight, its pads shrink to match, and the outputs stay the same.
#include <catch2/catch.hpp>

#include <random>

#include "graph/passes/prune_conv_taps.h"
#include "tests/graph/graph_builder.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Graph pruned(const Graph &g) { return after_pass(g, {"prune_conv_taps", prune_conv_taps}); }

struct ConvCase {
  Shape x;                        // [N, C, spatial...]
  int64_t m;                      // output channels
  std::vector<int64_t> kernel;
  std::vector<int64_t> pads;      // begins, then ends
  std::vector<int64_t> dilations;
  std::vector<int64_t> strides;
  int64_t group = 1;
};

Builder conv_graph(const ConvCase &c, std::mt19937 &rng) {
  Shape w = {c.m, c.x[1] / c.group};
  w.insert(w.end(), c.kernel.begin(), c.kernel.end());
  Builder b;
  b.input("x", c.x)
      .constant("w", random_uniform(w, rng))
      .constant("bias", random_uniform({c.m}, rng))
      .node("Conv", {"x", "w", "bias"}, "y",
            make_attributes({{"pads", c.pads}, {"dilations", c.dilations}, {"strides", c.strides}, {"group", c.group}}))
      .output("y");
  return b;
}

Shape conv_weight_shape(const Graph &g) { return g.tensors[g.node_inputs[first_node_index(g, "Conv")][1]].type.shape; }

}  // namespace

TEST_CASE("prune_conv_taps: DeepLab's ASPP convs on a 12x12 map are 1x1 convs", "[passes][prune_taps]") {
  std::mt19937 rng(31);
  for (int64_t d : {12, 24, 36}) {
    INFO("dilation " << d);
    Builder b = conv_graph({{1, 8, 12, 12}, 16, {3, 3}, {d, d, d, d}, {d, d}, {1, 1}}, rng);
    const Graph out = pruned(b.g);
    CHECK(conv_weight_shape(out) == Shape{16, 8, 1, 1});
    const Attributes &a = first_node(out, "Conv").attributes;
    CHECK(a.get_ints("pads", {}) == std::vector<int64_t>{0, 0, 0, 0});
    CHECK(a.get_ints("dilations", {}) == std::vector<int64_t>{1, 1});
    CHECK(a.get_ints("kernel_shape", {}) == std::vector<int64_t>{1, 1});
    check_same_outputs(b.g, out, {random_uniform({1, 8, 12, 12}, rng)});
  }
}

TEST_CASE("prune_conv_taps cuts leading or trailing taps, in 1-D, 3-D, strided and grouped convs", "[passes][prune_taps]") {
  std::mt19937 rng(32);
  struct Expect {
    ConvCase conv;
    Shape weight;
  };
  for (const Expect &e : std::vector<Expect>{
           // A pad of 6 before a 5-tap kernel at dilation 2 on 4 positions: taps 0-1 read
           // only the leading padding (positions -6, -4 at output 0, and -3.. for the rest).
           {{{1, 4, 4}, 4, {5}, {6, 2}, {2}, {1}}, {4, 4, 3}},
           // Height 3 with dilation 4: only the centre row reads the input; width untouched.
           {{{1, 4, 3, 9}, 8, {3, 3}, {4, 1, 4, 1}, {4, 1}, {1, 1}}, {8, 4, 1, 3}},
           // 3-D: the frame axis of length 2 with dilation 3 keeps its centre tap only.
           {{{1, 4, 2, 5, 5}, 4, {3, 3, 3}, {3, 1, 1, 3, 1, 1}, {3, 1, 1}, {1, 1, 1}}, {4, 4, 1, 3, 3}},
           // Strided and grouped (depthwise).
           {{{1, 6, 5, 5}, 6, {3, 3}, {5, 5, 5, 5}, {5, 5}, {2, 2}, 6}, {6, 1, 1, 1}},
       }) {
    INFO(shape_to_string(e.conv.x) << " kernel " << shape_to_string(e.conv.kernel));
    Builder b = conv_graph(e.conv, rng);
    const Graph out = pruned(b.g);
    CHECK(conv_weight_shape(out) == e.weight);
    check_same_outputs(b.g, out, {random_uniform(e.conv.x, rng)});
  }
}

TEST_CASE("prune_conv_taps leaves convs whose every tap reads the input", "[passes][prune_taps]") {
  std::mt19937 rng(33);
  for (const ConvCase &c : std::vector<ConvCase>{
           {{1, 4, 8, 8}, 8, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}},  // an ordinary 3x3
           {{1, 4, 8, 8}, 8, {3, 3}, {2, 2, 2, 2}, {2, 2}, {1, 1}},  // dilated, still inside
           {{1, 4, 1, 8}, 8, {1, 3}, {0, 1, 0, 1}, {1, 1}, {1, 1}},  // nothing to cut
       }) {
    Builder b = conv_graph(c, rng);
    Shape weight = {c.m, c.x[1]};
    weight.insert(weight.end(), c.kernel.begin(), c.kernel.end());
    CHECK(conv_weight_shape(pruned(b.g)) == weight);
  }
}
