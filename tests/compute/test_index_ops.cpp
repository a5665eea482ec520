// Index ops (gathers, scatters, OneHot) and resampling (Resize, Upsample): expected values
// worked out by hand or with the ONNX reference (onnx/backend/test/case/node/resize.py),
// plus the error paths inference must report.
#include <catch2/catch.hpp>

#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Tensor int64_tensor(Shape shape, const std::vector<int64_t> &values) { return Tensor::from_int64s(values, shape); }

Tensor floats(const std::vector<float> &values) { return float_tensor({static_cast<int64_t>(values.size())}, values); }

/// Resize's roi/scales left empty, which ONNX treats as not given.
Tensor empty_floats() { return Tensor(DType::Float32, {0}); }

Attributes with_int(const std::string &name, int64_t v) {
  Attributes a;
  a.set(name, v);
  return a;
}

}  // namespace

TEST_CASE("Gather picks slices along an axis, negative indices from the end", "[index_ops]") {
  // np.take(np.arange(12).reshape(3, 4), [[-1, 0]], axis=1)
  auto out = run_node("Gather", {float_type({3, 4}), int64_type({1, 2})}, {},
                      {iota_tensor({3, 4}), int64_tensor({1, 2}, {-1, 0})}, with_int("axis", 1));
  CHECK(out[0].shape() == Shape{3, 1, 2});
  CHECK(values_of(out[0]) == std::vector<double>{3, 0, 7, 4, 11, 8});
  // Scalar indices drop the axis: rows[2].
  out = run_node("Gather", {float_type({3, 4}), int64_type({})}, {},
                 {iota_tensor({3, 4}), int64_tensor({}, {2})});
  CHECK(out[0].shape() == Shape{4});
  CHECK(values_of(out[0]) == std::vector<double>{8, 9, 10, 11});
  // Rank-1 data with a scalar index gives a scalar.
  out = run_node("Gather", {float_type({5}), int64_type({})}, {}, {iota_tensor({5}), int64_tensor({}, {-2})});
  CHECK(out[0].shape() == Shape{});
  CHECK(values_of(out[0]) == std::vector<double>{3});
}

TEST_CASE("GatherElements and GatherND", "[index_ops]") {
  SECTION("GatherElements axis 0 with a negative index") {
    // np.take_along_axis([[0, 1], [2, 3]], [[1, 0], [-2, 1]] % 2, axis=0)
    auto out = run_node("GatherElements", {float_type({2, 2}), int64_type({2, 2})}, {},
                        {iota_tensor({2, 2}), int64_tensor({2, 2}, {1, 0, -2, 1})});
    CHECK(values_of(out[0]) == std::vector<double>{2, 1, 0, 3});
  }
  SECTION("GatherND with batch_dims 1") {
    // data[b][indices[b][0]] for data = arange(8).reshape(2, 2, 2), indices = [[1], [0]]
    auto out = run_node("GatherND", {float_type({2, 2, 2}), int64_type({2, 1})}, {},
                        {iota_tensor({2, 2, 2}), int64_tensor({2, 1}, {1, 0})}, with_int("batch_dims", 1));
    CHECK(out[0].shape() == Shape{2, 2});
    CHECK(values_of(out[0]) == std::vector<double>{2, 3, 4, 5});
  }
  SECTION("GatherND picking single elements") {
    auto out = run_node("GatherND", {float_type({2, 3}), int64_type({2, 2})}, {},
                        {iota_tensor({2, 3}), int64_tensor({2, 2}, {1, 2, 0, -1})});
    CHECK(out[0].shape() == Shape{2});
    CHECK(values_of(out[0]) == std::vector<double>{5, 2});
  }
}

TEST_CASE("ScatterElements writes updates in order and reduces duplicates", "[index_ops]") {
  const Tensor data = float_tensor({1, 5}, {1, 2, 3, 4, 5});
  const std::vector<TensorType> types = {float_type({1, 5}), int64_type({1, 2}), float_type({1, 2})};
  auto scatter = [&](const std::string &reduction, std::vector<int64_t> indices, std::vector<float> updates) {
    Attributes a = with_int("axis", 1);
    a.set("reduction", reduction);
    return run_node("ScatterElements", types, {}, {data, int64_tensor({1, 2}, indices), float_tensor({1, 2}, updates)},
                    a, 1, 18)[0];
  };
  check_values_close(scatter("none", {1, 1}, {7, 8}), {1, 8, 3, 4, 5});  // the last duplicate wins
  check_values_close(scatter("add", {1, 1}, {1.1f, 2.1f}), {1, 5.2, 3, 4, 5});
  check_values_close(scatter("mul", {-1, 0}, {2, 3}), {3, 2, 3, 4, 10});
  check_values_close(scatter("max", {1, 3}, {0.5f, 9}), {1, 2, 3, 9, 5});
  check_values_close(scatter("min", {1, 3}, {0.5f, 9}), {1, 0.5, 3, 4, 5});
}

TEST_CASE("ScatterND replaces and multiplies slices", "[index_ops]") {
  const Tensor data = float_tensor({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  const std::vector<TensorType> types = {float_type({8}), int64_type({4, 1}), float_type({4})};
  const Tensor indices = int64_tensor({4, 1}, {4, 3, 1, 7});
  const Tensor updates = float_tensor({4}, {9, 10, 11, 12});
  auto out = run_node("ScatterND", types, {}, {data, indices, updates});
  check_values_close(out[0], {1, 11, 3, 10, 9, 6, 7, 12});
  Attributes a;
  a.set("reduction", std::string("mul"));
  out = run_node("ScatterND", types, {}, {data, indices, updates}, a);
  check_values_close(out[0], {1, 22, 3, 40, 45, 6, 7, 96});
  // Whole rows: data 2x2, indices [[1]] replace row 1.
  out = run_node("ScatterND", {float_type({2, 2}), int64_type({1, 1}), float_type({1, 2})}, {},
                 {iota_tensor({2, 2}), int64_tensor({1, 1}, {1}), float_tensor({1, 2}, {8, 9})});
  check_values_close(out[0], {0, 1, 8, 9});
}

TEST_CASE("OneHot with negative indices and an axis", "[index_ops]") {
  const std::vector<TensorType> types = {int64_type({3}), int64_type({}), float_type({2})};
  const std::vector<std::optional<Tensor>> constants = {std::nullopt, int64_tensor({}, {3})};
  const Tensor indices = int64_tensor({3}, {0, -1, 3});  // 3 is out of range: all off
  auto out = run_node("OneHot", types, constants, {indices, floats({0, 5})});
  CHECK(out[0].shape() == Shape{3, 3});
  CHECK(values_of(out[0]) == std::vector<double>{5, 0, 0, 0, 0, 5, 0, 0, 0});
  out = run_node("OneHot", types, constants, {indices, floats({0, 5})}, with_int("axis", 0));
  CHECK(values_of(out[0]) == std::vector<double>{5, 0, 0, 0, 0, 0, 0, 5, 0});
}

TEST_CASE("Resize nearest, linear, cubic and crop", "[index_ops]") {
  const TensorType x_type = float_type({1, 1, 2, 2});
  const Tensor x = float_tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  auto resize_scales = [](const Tensor &in, std::vector<float> scales, Attributes a) {
    return run_node("Resize", {in.type(), float_type({0}), float_type({static_cast<int64_t>(scales.size())})},
                    {std::nullopt, empty_floats(), floats(scales)}, {in}, std::move(a), 1, 13)[0];
  };
  SECTION("nearest upsampling by sizes") {
    Attributes a;
    a.set("mode", std::string("nearest"));
    auto out =
        run_node("Resize", {x_type, float_type({0}), float_type({0}), int64_type({4})},
                 {std::nullopt, empty_floats(), empty_floats(), int64_tensor({4}, {1, 1, 3, 4})}, {x}, a, 1, 13)[0];
    CHECK(out.shape() == Shape{1, 1, 3, 4});
    // half_pixel rows (r + 0.5) / 1.5 - 0.5 = -1/6, 0.5, 7/6 -> 0, 0 (a tie rounds down), 1
    CHECK(values_of(out) == std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4});
  }
  SECTION("bilinear half_pixel upsampling (ONNX test_resize_upsample_scales_linear)") {
    Attributes a;
    a.set("mode", std::string("linear"));
    auto out = resize_scales(x, {1, 1, 2, 2}, a);
    check_values_close(out, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  }
  SECTION("trilinear align_corners by sizes") {
    Attributes a;
    a.set("mode", std::string("linear"));
    a.set("coordinate_transformation_mode", std::string("align_corners"));
    auto out = run_node("Resize", {float_type({2, 2, 2}), float_type({0}), float_type({0}), int64_type({3})},
                        {std::nullopt, empty_floats(), empty_floats(), int64_tensor({3}, {3, 3, 3})},
                        {iota_tensor({2, 2, 2})}, a, 1, 13)[0];
    check_values_close(
        out, {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3, 2, 2.5, 3, 3, 3.5, 4, 4, 4.5, 5, 4, 4.5, 5, 5, 5.5, 6, 6, 6.5, 7});
  }
  SECTION("cubic, default and with A=-0.5 excluding outside samples") {
    const Tensor row = float_tensor({1, 4}, {1, 2, 4, 8});
    Attributes a;
    a.set("mode", std::string("cubic"));
    check_values_close(resize_scales(row, {1, 1.5f}, a),
                       {0.91319444, 1.3125, 2.30439815, 3.38310185, 6.1875, 8.34722222});
    a.set("cubic_coeff_a", -0.5f);
    a.set("exclude_outside", int64_t{1});
    check_values_close(resize_scales(row, {1, 1.5f}, a),
                       {0.93421053, 1.35294118, 2.25231481, 3.53935185, 6.23529412, 8.26315789});
  }
  SECTION("linear on uint8 rounds to nearest") {
    // half_pixel sources -0.25, 0.25, 0.75, 1.25 over [10, 21] -> 10, 12.75, 18.25, 21
    Tensor row(DType::UInt8, {1, 2});
    row.data_as<uint8_t>()[0] = 10;
    row.data_as<uint8_t>()[1] = 21;
    Attributes a;
    a.set("mode", std::string("linear"));
    auto out = run_node("Resize", {row.type(), float_type({0}), float_type({0}), int64_type({2})},
                        {std::nullopt, empty_floats(), empty_floats(), int64_tensor({2}, {1, 4})}, {row}, a, 1, 13)[0];
    CHECK(out.dtype() == DType::UInt8);
    CHECK(values_of(out) == std::vector<double>{10, 13, 18, 21});
  }
  SECTION("tf_crop_and_resize extrapolates outside the roi") {
    // ONNX test_resize_tf_crop_and_resize
    Attributes a;
    a.set("mode", std::string("linear"));
    a.set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
    a.set("extrapolation_value", 10.0f);
    auto out = run_node(
        "Resize", {float_type({1, 1, 4, 4}), float_type({8}), float_type({0}), int64_type({4})},
        {std::nullopt, floats({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}), empty_floats(), int64_tensor({4}, {1, 1, 3, 3})},
        {float_tensor({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})}, a, 1, 13)[0];
    check_values_close(out, {7.6, 10, 10, 12.4, 10, 10, 10, 10, 10}, 1e-4);
  }
}

TEST_CASE("Upsample from an input (opset 9) and an attribute (opset 7)", "[index_ops]") {
  Attributes a;
  a.set("mode", std::string("nearest"));
  auto out = run_node("Upsample", {float_type({1, 1, 2, 2}), float_type({4})}, {std::nullopt, floats({1, 1, 2, 3})},
                      {float_tensor({1, 1, 2, 2}, {1, 2, 3, 4})}, a, 1, 9)[0];
  CHECK(out.shape() == Shape{1, 1, 4, 6});
  CHECK(values_of(out) == std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // Asymmetric linear: source x / 2 -> 0, 0.5, 1, 1.5 (the last clamps to the edge).
  Attributes linear;
  linear.set("mode", std::string("linear"));
  linear.set("scales", std::vector<float>{1, 2});
  out = run_node("Upsample", {float_type({1, 2})}, {}, {float_tensor({1, 2}, {1, 2})}, linear, 1, 7)[0];
  check_values_close(out, {1, 1.5, 2, 2});
}

TEST_CASE("Index op errors name the problem", "[index_ops]") {
  SECTION("Gather with float indices") {
    Graph g = single_node_graph("Gather", {float_type({3}), float_type({1})});
    CHECK_THAT(run_error_message(g, {iota_tensor({3}), floats({0})}),
               Catch::Contains("indices must be int32 or int64"));
  }
  SECTION("GatherElements with a rank mismatch") {
    Graph g = single_node_graph("GatherElements", {float_type({2, 2}), int64_type({2})});
    CHECK_THAT(run_error_message(g, {iota_tensor({2, 2}), int64_tensor({2}, {0, 1})}),
               Catch::Contains("must have the rank of data"));
  }
  SECTION("ScatterND with updates of the wrong shape") {
    Graph g = single_node_graph("ScatterND", {float_type({8}), int64_type({2, 1}), float_type({3})});
    CHECK_THAT(run_error_message(g, {iota_tensor({8}), int64_tensor({2, 1}, {0, 1}), floats({1, 2, 3})}),
               Catch::Contains("updates [3] must have shape [2]"));
  }
  SECTION("Resize with scales that do not match the rank") {
    Graph g = single_node_graph("Resize", {float_type({1, 1, 2, 2}), float_type({0}), float_type({3})}, 1, {},
                                {std::nullopt, empty_floats(), floats({1, 2, 2})}, 13);
    CHECK_THAT(run_error_message(g, {iota_tensor({1, 1, 2, 2})}),
               Catch::Contains("scales has 3 values but X has rank 4"));
  }
  SECTION("ScatterElements with an unknown reduction") {
    Attributes a;
    a.set("reduction", std::string("avg"));
    Graph g = single_node_graph("ScatterElements", {float_type({2}), int64_type({1}), float_type({1})}, 1, a);
    CHECK_THAT(run_error_message(g, {iota_tensor({2}), int64_tensor({1}, {0}), floats({1})}),
               Catch::Contains("unsupported reduction 'avg'"));
  }
}
