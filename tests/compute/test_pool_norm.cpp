#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>

#include "graph/infer/pool_geometry.h"
#include "graph/infer/shape_inference.h"
#include "graph/ir/op_registry.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

using Ints = std::vector<int64_t>;

}  // namespace

TEST_CASE("MaxPool takes window maxima and their flat indices", "[pool]") {
  auto out = run_on_inputs("MaxPool", {iota_tensor({1, 1, 4, 4})},
                           make_attributes({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}), 2);
  CHECK(out[0].shape() == Shape{1, 1, 2, 2});
  check_values_close(out[0], {5, 7, 13, 15});
  CHECK(out[1].dtype() == DType::Int64);
  CHECK(out[1].to_int64_vector() == Ints{5, 7, 13, 15});
  // storage_order=1 numbers the spatial positions column-major.
  auto col = run_on_inputs(
      "MaxPool", {iota_tensor({1, 1, 4, 4})},
      make_attributes({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"storage_order", int64_t{1}}}), 2);
  CHECK(col[1].to_int64_vector() == Ints{5, 13, 7, 15});
}

TEST_CASE("MaxPool indices count the batch and channel offset", "[pool]") {
  auto out = run_on_inputs("MaxPool", {iota_tensor({2, 1, 1, 3})}, make_attributes({{"kernel_shape", Ints{1, 3}}}), 2);
  check_values_close(out[0], {2, 5});
  CHECK(out[1].to_int64_vector() == Ints{2, 5});
}

TEST_CASE("MaxPool SAME padding puts the odd pad at the end (UPPER) or start (LOWER)", "[pool]") {
  Tensor x = float_tensor({1, 1, 4}, {1, 3, 2, 5});
  check_values_close(
      run_on_inputs("MaxPool", {x},
                    make_attributes({{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}}))[0],
      {3, 3, 5, 5});
  check_values_close(
      run_on_inputs("MaxPool", {x},
                    make_attributes({{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_LOWER")}}))[0],
      {1, 3, 3, 5});
}

TEST_CASE("MaxPool ceil_mode keeps a partial last window, dilations spread the taps", "[pool]") {
  // 5 wide, kernel 2, stride 2: floor gives 2 windows, ceil gives 3 (the last one [4]).
  Tensor x = float_tensor({1, 1, 5}, {1, 9, 2, 3, 7});
  check_values_close(
      run_on_inputs("MaxPool", {x}, make_attributes({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}))[0], {9, 3});
  check_values_close(
      run_on_inputs("MaxPool", {x},
                    make_attributes({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", int64_t{1}}}))[0],
      {9, 3, 7});
  // Taps 0 and 2 of each window.
  check_values_close(
      run_on_inputs("MaxPool", {x}, make_attributes({{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}}))[0],
      {2, 9, 7});
}

TEST_CASE("MaxPool with a large window and uint8 data", "[pool]") {
  // 9x9 windows take the reduction path rather than the unrolled one.
  Tensor big =
      run_on_inputs("MaxPool", {iota_tensor({1, 1, 9, 10})}, make_attributes({{"kernel_shape", Ints{9, 9}}}))[0];
  CHECK(big.shape() == Shape{1, 1, 1, 2});
  check_values_close(big, {88, 89});
  Tensor u(DType::UInt8, {1, 1, 4});
  const uint8_t values[] = {10, 250, 3, 7};
  for (int i = 0; i < 4; ++i) u.data_as<uint8_t>()[i] = values[i];
  Tensor y = run_on_inputs("MaxPool", {u}, make_attributes({{"kernel_shape", Ints{3}}, {"pads", Ints{1, 1}}}))[0];
  CHECK(y.dtype() == DType::UInt8);
  CHECK(y.to_int64_vector() == Ints{250, 250, 250, 7});
}

TEST_CASE("Pools onto rows shorter than a vector match a direct loop", "[pool]") {
  // The default schedule keeps a pool's short rows (5, 7, 11, 13 wide) as vectors of their
  // own with the last one shifted back, and runs larger ones parallel over channels.
  struct Case {
    int64_t channels, size, kernel, stride, pad;
  };
  for (const Case &c : {Case{128, 23, 3, 2, 0}, Case{64, 11, 3, 2, 0}, Case{8, 13, 3, 1, 1}, Case{96, 14, 2, 2, 0},
                        Case{3, 7, 3, 2, 1}}) {
    for (const char *op : {"MaxPool", "AveragePool"}) {
      INFO(op << " channels " << c.channels << " size " << c.size << " kernel " << c.kernel << " stride " << c.stride
              << " pad " << c.pad);
      const int64_t n = c.channels * c.size * c.size;
      Tensor x(DType::Float32, {1, c.channels, c.size, c.size});
      for (int64_t i = 0; i < n; ++i) x.data_as<float>()[i] = static_cast<float>((i * 7919) % 1009) - 500.0f;
      const Attributes attrs = make_attributes({{"kernel_shape", Ints{c.kernel, c.kernel}},
                                                {"strides", Ints{c.stride, c.stride}},
                                                {"pads", Ints{c.pad, c.pad, c.pad, c.pad}},
                                                {"ceil_mode", int64_t{1}}});
      const Tensor y = run_on_inputs(op, {x}, attrs)[0];
      const int64_t out = y.shape()[3];
      REQUIRE(y.shape() == Shape{1, c.channels, out, out});
      const bool max = std::string(op) == "MaxPool";
      std::vector<double> expected;
      for (int64_t ch = 0; ch < c.channels; ++ch)
        for (int64_t oy = 0; oy < out; ++oy)
          for (int64_t ox = 0; ox < out; ++ox) {
            float acc = max ? -INFINITY : 0.0f;
            int taps = 0;
            for (int64_t ky = 0; ky < c.kernel; ++ky)
              for (int64_t kx = 0; kx < c.kernel; ++kx) {
                const int64_t iy = oy * c.stride + ky - c.pad, ix = ox * c.stride + kx - c.pad;
                if (iy < 0 || ix < 0 || iy >= c.size || ix >= c.size) continue;
                const float v = x.data_as<float>()[(ch * c.size + iy) * c.size + ix];
                acc = max ? std::max(acc, v) : acc + v;
                ++taps;
              }
            expected.push_back(max ? acc : acc / static_cast<float>(taps));
          }
      check_values_close(y, expected);
    }
  }
}

TEST_CASE("AveragePool divides by the taps inside the input unless count_include_pad", "[pool]") {
  Attributes a = make_attributes({{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  check_values_close(run_on_inputs("AveragePool", {iota_tensor({1, 1, 4, 4})}, a)[0], {2.5f, 4, 8.5f, 10});
  a.set("count_include_pad", int64_t{1});
  check_values_close(run_on_inputs("AveragePool", {iota_tensor({1, 1, 4, 4})}, a)[0],
                     {10.0f / 9, 24.0f / 9, 51.0f / 9, 10});
}

TEST_CASE("AveragePool with a large padded window", "[pool]") {
  // Windows [-1, 68], [0, 69], [1, 70] over 0..69: the pads are not counted.
  Tensor y = run_on_inputs("AveragePool", {iota_tensor({1, 1, 70})},
                           make_attributes({{"kernel_shape", Ints{70}}, {"pads", Ints{1, 1}}}))[0];
  CHECK(y.shape() == Shape{1, 1, 3});
  check_values_close(y, {34, 34.5f, 35}, 1e-4f);
}

TEST_CASE("LpPool and the global pools", "[pool]") {
  Tensor x = float_tensor({1, 1, 3}, {3, 4, 0});
  check_values_close(run_on_inputs("LpPool", {x}, make_attributes({{"kernel_shape", Ints{2}}, {"p", int64_t{2}}}))[0],
                     {5, 4});
  Tensor g = float_tensor({1, 2, 2, 2}, {1, 2, 3, 6, -1, -2, -3, -6});
  Tensor avg = run_on_inputs("GlobalAveragePool", {g}, {})[0];
  CHECK(avg.shape() == Shape{1, 2, 1, 1});
  check_values_close(avg, {3, -3});
  check_values_close(run_on_inputs("GlobalMaxPool", {g}, {})[0], {6, -1});
  check_values_close(run_on_inputs("GlobalLpPool", {float_tensor({1, 1, 2}, {3, 4})}, {})[0], {5});
}

TEST_CASE("Pool errors name the problem", "[pool][errors]") {
  std::string msg =
      run_error_message("MaxPool", {iota_tensor({1, 1, 4, 4})}, make_attributes({{"kernel_shape", Ints{2}}}));
  CHECK_THAT(msg, Catch::Contains("kernel_shape"));
  msg = run_error_message("AveragePool", {iota_tensor({1, 1, 4, 4})}, make_attributes({{"kernel_shape", Ints{5, 5}}}));
  CHECK_THAT(msg, Catch::Contains("larger than padded spatial dimension"));
  msg = run_error_message("MaxPool", {iota_tensor({4, 4})}, make_attributes({{"kernel_shape", Ints{2}}}));
  CHECK_THAT(msg, Catch::Contains("spatial dimension"));
}

TEST_CASE("Pool geometry resolves auto_pad and ceil_mode", "[pool]") {
  // Width 4, kernel 3, stride 2: SAME gives ceil(4 / 2) = 2 outputs and one pad in total.
  Attributes same =
      make_attributes({{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}});
  Result<PoolGeometry> g = pool_geometry(same, {4});
  REQUIRE(g.ok());
  CHECK(g->out == Ints{2});
  CHECK(g->pad_begin == Ints{0});
  CHECK(g->pad_end == Ints{1});
  same.set("auto_pad", std::string("SAME_LOWER"));
  g = pool_geometry(same, {4});
  REQUIRE(g.ok());
  CHECK(g->pad_begin == Ints{1});
  CHECK(g->pad_end == Ints{0});
  // Width 5, kernel 2, stride 2: ceil_mode keeps the partial last window.
  Attributes ceil = make_attributes({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", int64_t{1}}});
  g = pool_geometry(ceil, {5});
  REQUIRE(g.ok());
  CHECK(g->out == Ints{3});
  // An unknown extent gives an unknown output extent.
  g = pool_geometry(make_attributes({{"kernel_shape", Ints{2, 2}}}), {kUnknownDim, 4});
  REQUIRE(g.ok());
  CHECK(g->out == Ints{kUnknownDim, 3});

  CHECK_THAT(pool_geometry({}, {4}).error().message, Catch::Contains("kernel_shape is required"));
  CHECK_THAT(pool_geometry(make_attributes({{"kernel_shape", Ints{3}}, {"dilations", Ints{2}}}), {4}).error().message,
             Catch::Contains("dilated kernel (5) is larger than padded spatial dimension 0 (4)"));
  CHECK_THAT(pool_geometry(make_attributes({{"kernel_shape", Ints{2}}, {"pads", Ints{1}}}), {4}).error().message,
             Catch::Contains("pads [1] must have 2 entries"));
}

TEST_CASE("BatchNormalization in inference mode uses the given statistics", "[norm]") {
  Tensor x = float_tensor({1, 2, 1, 2}, {1, 2, 3, 4});
  auto y = run_on_inputs(
      "BatchNormalization",
      {x, float_tensor({2}, {1, 2}), float_tensor({2}, {0, 1}), float_tensor({2}, {1, 3}), float_tensor({2}, {4, 1})},
      make_attributes({{"epsilon", 0.0f}}));
  check_values_close(y[0], {0, 0.5f, 1, 3});
}

TEST_CASE("BatchNormalization in training mode uses batch statistics and updates the running ones", "[norm]") {
  Tensor x = float_tensor({2, 1, 2}, {1, 3, 5, 7});
  auto out =
      run_on_inputs("BatchNormalization",
                    {x, float_tensor({1}, {1}), float_tensor({1}, {0}), float_tensor({1}, {0}), float_tensor({1}, {1})},
                    make_attributes({{"epsilon", 0.0f}, {"training_mode", int64_t{1}}}), 3, 15);
  check_values_close(out[0], {-1.3416407f, -0.4472136f, 0.4472136f, 1.3416407f});
  check_values_close(out[1], {0.4f});  // 0 * 0.9 + 4 * 0.1
  check_values_close(out[2], {1.4f});  // 1 * 0.9 + 5 * 0.1
}

TEST_CASE("BatchNormalization rejects statistics of the wrong shape", "[norm][errors]") {
  Tensor x = float_tensor({1, 2, 1, 2}, {1, 2, 3, 4});
  std::string msg = run_error_message("BatchNormalization",
                                      {x, float_tensor({3}, {1, 1, 1}), float_tensor({2}, {0, 0}),
                                       float_tensor({2}, {0, 0}), float_tensor({2}, {1, 1})},
                                      {});
  CHECK_THAT(msg, Catch::Contains("scale has shape [3]"));
}

TEST_CASE("InstanceNormalization normalizes each channel of each image", "[norm]") {
  Tensor x = float_tensor({1, 2, 1, 3}, {-1, 0, 1, 2, 3, 4});
  auto y = run_on_inputs("InstanceNormalization", {x, float_tensor({2}, {1, 1.5f}), float_tensor({2}, {0, 1})}, {});
  check_values_close(y[0], {-1.2247356f, 0, 1.2247356f, -0.8371035f, 1, 2.8371034f});
}

TEST_CASE("LayerNormalization returns Y, Mean and InvStdDev", "[norm]") {
  Tensor x = float_tensor({2, 4}, {1, 2, 3, 4, 2, 4, 6, 10});
  auto out =
      run_on_inputs("LayerNormalization", {x, float_tensor({4}, {1, 2, 1, 0.5f}), float_tensor({1}, {0.5f})}, {}, 3);
  check_values_close(out[0], {-0.84163547f, -0.39442366f, 0.94721186f, 1.17081773f, -0.68321526f, -0.51418447f,
                              0.66903079f, 1.26063848f});
  CHECK(out[1].shape() == Shape{2, 1});
  check_values_close(out[1], {2.5f, 5.5f});
  check_values_close(out[2], {0.8944237f, 0.3380615f});
  // axis=0 normalizes the whole tensor into one statistic.
  auto all = run_on_inputs("LayerNormalization", {float_tensor({2, 1}, {1, 3}), float_tensor({2, 1}, {1, 1})},
                           make_attributes({{"axis", int64_t{0}}, {"epsilon", 0.0f}}), 2);
  check_values_close(all[0], {-1, 1});
  CHECK(all[1].shape() == Shape{1, 1});
  check_values_close(all[1], {2});
}

TEST_CASE("LayerNormalization rejects a scale that does not broadcast", "[norm][errors]") {
  std::string msg = run_error_message(
      "LayerNormalization", {float_tensor({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), float_tensor({3}, {1, 1, 1})}, {});
  CHECK_THAT(msg, Catch::Contains("does not broadcast"));
}

TEST_CASE("Softmax and LogSoftmax along an axis, stable for large inputs", "[softmax]") {
  Tensor x = float_tensor({2, 3}, {1, 2, 3, 1, 1, 1});
  check_values_close(run_on_inputs("Softmax", {x}, {}, 1, 13)[0],
                     {0.09003057f, 0.24472846f, 0.66524094f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f});
  check_values_close(run_on_inputs("LogSoftmax", {x}, {}, 1, 13)[0],
                     {-2.4076059f, -1.4076060f, -0.4076060f, -1.0986123f, -1.0986123f, -1.0986123f});
  Tensor big = float_tensor({1, 2}, {10000, 10001});
  check_values_close(run_on_inputs("Softmax", {big}, {}, 1, 13)[0], {0.26894142f, 0.73105858f});
  // axis=0 of [2, 3]: each column.
  check_values_close(
      run_on_inputs("Softmax", {float_tensor({2, 1}, {0, 0})}, make_attributes({{"axis", int64_t{0}}}), 1, 13)[0],
      {0.5f, 0.5f});
}

TEST_CASE("Softmax before opset 13 flattens the axes from `axis` on", "[softmax]") {
  Tensor x = iota_tensor({2, 2, 2});
  std::vector<double> row{0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f};
  std::vector<double> both = row;
  both.insert(both.end(), row.begin(), row.end());
  check_values_close(run_on_inputs("Softmax", {x}, {}, 1, 11)[0], both);
  // Opset 13 with axis=1 works on pairs along axis 1 only.
  check_values_close(run_on_inputs("Softmax", {x}, make_attributes({{"axis", int64_t{1}}}), 1, 13)[0],
                     {0.1192029f, 0.1192029f, 0.8807971f, 0.8807971f, 0.1192029f, 0.1192029f, 0.8807971f, 0.8807971f});
}

TEST_CASE("Hardmax marks the first maximum", "[softmax]") {
  Tensor x = float_tensor({2, 3}, {1, 3, 3, 2, 0, 1});
  check_values_close(run_on_inputs("Hardmax", {x}, {}, 1, 13)[0], {0, 1, 0, 1, 0, 0});
  // Opset 11, axis 0: one maximum over the whole flattened tensor.
  check_values_close(run_on_inputs("Hardmax", {x}, make_attributes({{"axis", int64_t{0}}}), 1, 11)[0],
                     {0, 1, 0, 0, 0, 0});
}

TEST_CASE("Softmax rejects an axis out of range", "[softmax][errors]") {
  std::string msg = run_error_message("Softmax", {iota_tensor({2, 3})}, make_attributes({{"axis", int64_t{2}}}));
  CHECK_THAT(msg, Catch::Contains("axis 2 is out of range"));
}

TEST_CASE("LRN sums squares over neighbouring channels", "[norm]") {
  Tensor x = float_tensor({1, 3, 1, 1}, {1, 2, 3});
  Tensor y = run_on_inputs("LRN", {x},
                           make_attributes({{"size", int64_t{3}}, {"alpha", 3.0f}, {"beta", 1.0f}, {"bias", 1.0f}}))[0];
  check_values_close(y, {1 / 6.0f, 2 / 15.0f, 3 / 14.0f});
}

TEST_CASE("MeanVarianceNormalization over the default axes", "[norm]") {
  Tensor x = float_tensor({1, 2, 1, 2}, {1, 3, 2, 2});
  check_values_close(run_on_inputs("MeanVarianceNormalization", {x}, {})[0], {-1, 1, 0, 0});
}

TEST_CASE("Inference of pool and normalization output types", "[pool][norm]") {
  Node node{"MaxPool", "p", "",
            make_attributes({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})};
  auto types = infer_node_types(node, 17, {TensorType{DType::Float32, {1, 64, 112, 112}, true}}, {nullptr}, 2);
  REQUIRE(types.ok());
  CHECK(types.value()[0].shape == Shape{1, 64, 56, 56});
  CHECK(types.value()[1].dtype == DType::Int64);
  Node avg{"AveragePool", "a", "", make_attributes({{"kernel_shape", Ints{2}}})};
  auto bad = infer_node_types(avg, 17, {TensorType{DType::Int32, {1, 1, 4}, true}}, {nullptr}, 1);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("int32"));
}

TEST_CASE("Long rows fold across vector lanes, ragged tails included", "[softmax][norm]") {
  // 37 and 40 elements: more than two vectors, the first not a multiple of the lanes.
  Tensor ramp = iota_tensor({1, 37});
  std::vector<double> softmax(37);
  double total = 0;
  for (int i = 0; i < 37; ++i) total += std::exp(i - 36.0);
  for (int i = 0; i < 37; ++i) softmax[i] = std::exp(i - 36.0) / total;
  check_values_close(run_on_inputs("Softmax", {ramp}, {}, 1, 13)[0], softmax, 1e-6f);
  std::vector<double> one_hot(37, 0);
  one_hot[36] = 1;
  check_values_close(run_on_inputs("Hardmax", {ramp}, {}, 1, 13)[0], one_hot);

  auto ln = run_on_inputs("LayerNormalization", {iota_tensor({2, 40}), float_tensor({1}, {1})}, {}, 3);
  // Row 0 is 0..39: mean 19.5, variance (40^2 - 1) / 12.
  check_values_close(ln[1], {19.5f, 59.5f}, 1e-4f);
  const float inv = 1 / std::sqrt(133.25f + 1e-5f);
  check_values_close(ln[2], {inv, inv}, 1e-6f);
  CHECK(float_values(ln[0])[0] == Approx(-19.5f * inv).margin(1e-5));

  Tensor g = iota_tensor({1, 2, 1, 40});
  check_values_close(run_on_inputs("GlobalAveragePool", {g}, {})[0], {19.5f, 59.5f}, 1e-4f);
  check_values_close(run_on_inputs("GlobalMaxPool", {g}, {})[0], {39, 79});
}

TEST_CASE("Node names with dots make valid kernels", "[pool][softmax]") {
  // Exported models name nodes like "/layer1/pool.0/MaxPool"; '.' is Halide's separator.
  Tensor x = iota_tensor({1, 1, 2, 2});
  Graph g = single_node_graph("MaxPool", {x.type()}, 1, make_attributes({{"kernel_shape", Ints{2, 2}}}));
  g.nodes[0].name = "/layer1/pool.0/MaxPool";
  check_values_close(run_graph(g, {x})[0], {3});
  Graph s = single_node_graph("Softmax", {x.type()}, 1, {});
  s.nodes[0].name = "/encoder/layer.0/Softmax";
  check_values_close(run_graph(s, {x})[0], {0.2689414f, 0.7310586f, 0.2689414f, 0.7310586f});
}

TEST_CASE("Float16 and float64 inputs compute in a wider type and keep their dtype", "[pool][softmax]") {
  Tensor h(DType::Float16, {1, 1, 4});
  const float values[] = {1, 2, 3, 4};
  for (int i = 0; i < 4; ++i) h.data_as<uint16_t>()[i] = float_to_half(values[i]);
  Tensor avg = run_on_inputs("AveragePool", {h}, make_attributes({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}))[0];
  CHECK(avg.dtype() == DType::Float16);
  check_values_close(avg, {1.5f, 3.5f});
  Tensor d(DType::Float64, {2});
  d.set_element_from_double(0, 0);
  d.set_element_from_double(1, std::log(3.0));
  Tensor sm = run_on_inputs("Softmax", {d}, {}, 1, 13)[0];
  CHECK(sm.dtype() == DType::Float64);
  CHECK(sm.element_as_double(0) == Approx(0.25).epsilon(1e-12));
}

TEST_CASE("BatchNormalization before opset 9 with spatial=0 has per-element statistics", "[norm]") {
  Tensor x = float_tensor({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor ones = float_tensor({2, 1, 2}, {1, 1, 1, 1}), zeros = float_tensor({2, 1, 2}, {0, 0, 0, 0});
  Tensor mean = float_tensor({2, 1, 2}, {1, 1, 1, 1}), var = float_tensor({2, 1, 2}, {1, 4, 1, 4});
  auto y = run_on_inputs("BatchNormalization", {x, ones, zeros, mean, var},
                         make_attributes({{"spatial", int64_t{0}}, {"epsilon", 0.0f}}), 1, 7);
  check_values_close(y[0], {0, 0.5f, 2, 1.5f});
}
