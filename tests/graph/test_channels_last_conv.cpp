// Tests of the channels_last_conv layout pass: which graphs it rewrites, that the Transposes
// it needs cancel between convs and sink through elementwise ops, and that the rewritten
// graphs (run through TesselConvNHWC's compute rule) compute the same outputs.
#include <catch2/catch.hpp>

#include <random>

#include "graph/fusion/fuse.h"
#include "graph/passes/channels_last_conv.h"
#include "tests/graph/graph_builder.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Graph channels_last(const Graph &g) { return after_pass(g, {"channels_last_conv", channels_last_conv}); }

Attributes conv_attrs(int64_t group, int64_t stride, int64_t pad) {
  return make_attributes({{"group", group},
                          {"strides", std::vector<int64_t>{stride, stride}},
                          {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
}

int kernel_count(const Graph &g) {
  int kernels = 0;
  for (const FusedGroup &group : partition_graph(g)) kernels += !runs_on_host(g.nodes[group.anchor].op_type);
  return kernels;
}

}  // namespace

TEST_CASE("channels_last_conv keeps a MobileNet block channels-last from stem to pool", "[passes][channels_last]") {
  std::mt19937 rng(21);
  // stem (3 channels, read NCHW) -> Clip -> expand 1x1 -> Clip -> depthwise 3x3 -> Clip ->
  // project 1x1 -> Add(residual) -> GlobalAveragePool.
  Builder b;
  b.input("x", Shape{1, 3, 12, 12})
      .constant("w0", random_uniform({8, 3, 3, 3}, rng))
      .constant("b0", random_uniform({8}, rng))
      .constant("w1", random_uniform({24, 8, 1, 1}, rng))
      .constant("w2", random_uniform({24, 1, 3, 3}, rng))
      .constant("b2", random_uniform({24}, rng))
      .constant("w3", random_uniform({8, 24, 1, 1}, rng))
      .constant("lo", Tensor::scalar(DType::Float32, 0.0f))
      .constant("hi", Tensor::scalar(DType::Float32, 6.0f))
      .node("Conv", {"x", "w0", "b0"}, "s", conv_attrs(1, 2, 1))
      .node("Clip", {"s", "lo", "hi"}, "s6")
      .node("Conv", {"s6", "w1"}, "e", conv_attrs(1, 1, 0))
      .node("Clip", {"e", "lo", "hi"}, "e6")
      .node("Conv", {"e6", "w2", "b2"}, "d", conv_attrs(24, 1, 1))
      .node("Clip", {"d", "lo", "hi"}, "d6")
      .node("Conv", {"d6", "w3"}, "p", conv_attrs(1, 1, 0))
      .node("Add", {"p", "s6"}, "r")
      .node("GlobalAveragePool", {"r"}, "y")
      .output("y");
  const Graph out = channels_last(b.g);
  CHECK(count_ops(out, "Conv") == 0);
  CHECK(count_ops(out, kConvNhwcOp) == 4);
  CHECK(count_ops(out, "Transpose") == 0);  // the image is read NCHW by the stem itself
  CHECK(count_ops(out, "GlobalAveragePool") == 0);
  CHECK(count_ops(out, "ReduceMean") == 1);
  CHECK(out.tensors[out.outputs[0]].type.shape == Shape{1, 8, 1, 1});
  CHECK(kernel_count(out) == 5);  // four convs with their epilogues, the mean
  check_same_outputs(b.g, out, {random_uniform({1, 3, 12, 12}, rng)});
}

TEST_CASE("channels_last_conv converts strided, grouped and dilated convs exactly", "[passes][channels_last]") {
  std::mt19937 rng(22);
  struct Case {
    const char *name;
    Shape w;
    Attributes attrs;
  };
  const std::vector<Case> cases = {
      {"depthwise stride 2", {16, 1, 3, 3}, conv_attrs(16, 2, 1)},
      {"depthwise 5x5 SAME_UPPER",
       {16, 1, 5, 5},
       make_attributes({{"group", int64_t{16}}, {"auto_pad", std::string("SAME_UPPER")}})},
      {"two groups, dilation 2",
       {8, 8, 3, 3},
       make_attributes({{"group", int64_t{2}},
                        {"dilations", std::vector<int64_t>{2, 2}},
                        {"pads", std::vector<int64_t>{2, 1, 2, 1}}})},
  };
  for (const Case &c : cases) {
    SECTION(c.name) {
      // A depthwise conv first, so that the graph qualifies, then the case.
      Builder b;
      b.input("x", Shape{1, 16, 11, 9})
          .constant("wd", random_uniform({16, 1, 3, 3}, rng))
          .constant("w", random_uniform(c.w, rng))
          .node("Conv", {"x", "wd"}, "d", conv_attrs(16, 1, 1))
          .node("Relu", {"d"}, "r")
          .node("Conv", {"r", "w"}, "y", c.attrs)
          .output("y");
      const Graph out = channels_last(b.g);
      CHECK(count_ops(out, kConvNhwcOp) == 2);
      CHECK(count_ops(out, "Transpose") == 2);  // into the first conv, out of the last
      check_same_outputs(b.g, out, {random_uniform({1, 16, 11, 9}, rng)});
    }
  }
}

TEST_CASE("channels_last_conv leaves graphs without depthwise convs alone", "[passes][channels_last]") {
  std::mt19937 rng(23);
  Builder b;
  b.input("x", Shape{1, 8, 6, 6})
      .constant("w", random_uniform({8, 8, 3, 3}, rng))
      .node("Conv", {"x", "w"}, "y", conv_attrs(1, 1, 1))
      .output("y");
  CHECK_FALSE(has_depthwise_conv(b.g));
  const Graph out = channels_last(b.g);
  CHECK(count_ops(out, "Conv") == 1);
  CHECK(count_ops(out, kConvNhwcOp) == 0);
}

TEST_CASE("channels_last_conv cancels Transposes the graph already has", "[passes][channels_last]") {
  std::mt19937 rng(24);
  // NHWC in and out around a depthwise conv, as a channels-last exporter writes it: one
  // kernel, no Transpose left; the graph output keeps its name.
  Builder b;
  b.input("x", Shape{1, 10, 10, 32})
      .constant("w", random_uniform({32, 1, 3, 3}, rng))
      .node("Transpose", {"x"}, "xt", make_attributes({{"perm", std::vector<int64_t>{0, 3, 1, 2}}}))
      .node("Conv", {"xt", "w"}, "c", conv_attrs(32, 1, 1))
      .node("Relu", {"c"}, "r")
      .node("Transpose", {"r"}, "y", make_attributes({{"perm", std::vector<int64_t>{0, 2, 3, 1}}}))
      .output("y");
  const Graph out = channels_last(b.g);
  CHECK(count_ops(out, "Transpose") == 0);
  CHECK(kernel_count(out) == 1);
  CHECK(out.tensors[out.outputs[0]].name == "y");
  check_same_outputs(b.g, out, {random_uniform({1, 10, 10, 32}, rng)});
}

TEST_CASE("the built-in channels-last conv schedule computes the same with every tile and channel grouping",
          "[passes][channels_last]") {
  // The register tile takes whole rows when a row fits (a 3x3 map), one vector by 7 columns
  // where two vectors would leave one column, a third of the budget in columns and the rest
  // in rows on wider maps (8 x 3 on 24x24, 2 vectors by 6 x 2 on 12x12, 5 x 2 on 20 columns),
  // and the parallel loop groups channel blocks when there are few rows (not where the last
  // block is partial: 58 channels), in groups of whole blocks where enough remain (15 blocks
  // of 240 channels). Every vector width's tiles run here (TESSEL_VECTOR_BITS), whatever this
  // host has.
  std::mt19937 rng(24);
  struct Case {
    int64_t channels, height, width, out_channels;
  };
  const std::vector<Case> cases = {{40, 3, 3, 72}, {24, 7, 7, 48},  {36, 6, 6, 20},   {16, 40, 5, 24},
                                 {24, 6, 6, 58}, {24, 24, 24, 144}, {32, 12, 12, 192}, {40, 12, 12, 240},
                                 {16, 10, 20, 96}};
  for (const char *bits : {"128", "256", "512"}) {
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    for (const Case &c : cases) {
      INFO("TESSEL_VECTOR_BITS=" << bits << " channels " << c.channels << " map " << c.height << "x" << c.width
                                 << " out " << c.out_channels);
      Builder b;
      b.input("x", Shape{1, c.channels, c.height, c.width})
          .constant("wd", random_uniform({c.channels, 1, 3, 3}, rng))
          .constant("bd", random_uniform({c.channels}, rng))
          .constant("wp", random_uniform({c.out_channels, c.channels, 1, 1}, rng))
          .node("Conv", {"x", "wd", "bd"}, "d", conv_attrs(c.channels, 1, 1))
          .node("Relu", {"d"}, "r")
          .node("Conv", {"r", "wp"}, "y", conv_attrs(1, 1, 0))
          .output("y");
      const Graph out = channels_last(b.g);
      REQUIRE(count_ops(out, kConvNhwcOp) == 2);
      check_same_outputs(b.g, out, {random_uniform({1, c.channels, c.height, c.width}, rng)});
    }
  }
  unsetenv("TESSEL_VECTOR_BITS");
}

TEST_CASE("the built-in channels-last conv reads an NCHW image through a smaller tile", "[passes][channels_last]") {
  // A stem reads the model's NCHW image itself; its tile takes half the accumulators (a
  // scalar per column and tap, read through the padding's select). Padded strided stems,
  // an unpadded patchify stem (ConvNeXt's 4x4 stride 4), maps whose rows fit the tile.
  std::mt19937 rng(33);
  struct Case {
    int64_t size, out_channels, kernel, stride, pad;
  };
  const std::vector<Case> cases = {{24, 32, 3, 2, 1}, {10, 16, 3, 2, 1}, {13, 24, 3, 2, 1}, {16, 48, 4, 4, 0}};
  for (const char *bits : {"256", "512"}) {
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    for (const Case &c : cases) {
      INFO("TESSEL_VECTOR_BITS=" << bits << " image " << c.size << " out " << c.out_channels << " kernel " << c.kernel
                                 << " stride " << c.stride);
      Builder b;
      b.input("x", Shape{1, 3, c.size, c.size})
          .constant("w0", random_uniform({c.out_channels, 3, c.kernel, c.kernel}, rng))
          .constant("b0", random_uniform({c.out_channels}, rng))
          .constant("wd", random_uniform({c.out_channels, 1, 3, 3}, rng))
          .node("Conv", {"x", "w0", "b0"}, "s", conv_attrs(1, c.stride, c.pad))
          .node("Relu", {"s"}, "r")
          .node("Conv", {"r", "wd"}, "y", conv_attrs(c.out_channels, 1, 1))
          .output("y");
      const Graph out = channels_last(b.g);
      REQUIRE(count_ops(out, kConvNhwcOp) == 2);
      check_same_outputs(b.g, out, {random_uniform({1, 3, c.size, c.size}, rng)});
    }
  }
  unsetenv("TESSEL_VECTOR_BITS");
}

TEST_CASE("the built-in channels-last conv computes its epilogue in the tile, with shifted last blocks",
          "[passes][channels_last]") {
  // A conv whose only consumers in its kernel are elementwise (bias, Clip, a residual Add)
  // is computed inside that kernel's output tiles; channels past a multiple of the vector
  // (24, 40, 58) run whole vectors with the last block shifted onto the one before.
  std::mt19937 rng(31);
  for (const char *bits : {"256", "512"}) {
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    for (int64_t out_channels : {24, 40, 58, 64}) {
      INFO("TESSEL_VECTOR_BITS=" << bits << " out " << out_channels);
      const int64_t channels = 24, size = 12;
      Builder b;
      b.input("x", Shape{1, channels, size, size})
          .input("skip", Shape{1, out_channels, size, size})
          .constant("wd", random_uniform({channels, 1, 3, 3}, rng))
          .constant("wp", random_uniform({out_channels, channels, 1, 1}, rng))
          .constant("bp", random_uniform({out_channels}, rng))
          .constant("lo", Tensor::scalar(DType::Float32, 0.0f))
          .constant("hi", Tensor::scalar(DType::Float32, 6.0f))
          .node("Conv", {"x", "wd"}, "d", conv_attrs(channels, 1, 1))
          .node("Clip", {"d", "lo", "hi"}, "r")
          .node("Conv", {"r", "wp", "bp"}, "p", conv_attrs(1, 1, 0))
          .node("Add", {"p", "skip"}, "y")
          .output("y");
      const Graph out = channels_last(b.g);
      REQUIRE(count_ops(out, kConvNhwcOp) == 2);
      check_same_outputs(b.g, out,
                         {random_uniform({1, channels, size, size}, rng), random_uniform({1, out_channels, size, size}, rng)});
    }
  }
  unsetenv("TESSEL_VECTOR_BITS");
}
