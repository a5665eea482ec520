// Shape and data-movement ops: expected values computed by hand (or with numpy) for small
// inputs, plus the error paths inference must report.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>

#include "graph/infer/pad_geometry.h"
#include "graph/infer/slice_geometry.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Tensor ints(const std::vector<int64_t> &values) {
  return Tensor::from_int64s(values, {static_cast<int64_t>(values.size())});
}

}  // namespace

TEST_CASE("Transpose permutes axes", "[shape_ops]") {
  Attributes a;
  a.set("perm", std::vector<int64_t>{1, 0});
  auto out = run_node("Transpose", {float_type({2, 3})}, {}, {iota_tensor({2, 3})}, a);
  CHECK(out[0].shape() == Shape{3, 2});
  CHECK(values_of(out[0]) == std::vector<double>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("Concat joins along an axis and skips empty inputs", "[shape_ops]") {
  Attributes a;
  a.set("axis", int64_t{-1});
  Tensor empty(DType::Float32, {2, 0});
  auto out = run_node("Concat", {float_type({2, 2}), float_type({2, 0}), float_type({2, 1})}, {},
                      {iota_tensor({2, 2}), empty, float_tensor({2, 1}, {10, 11})}, a);
  CHECK(out[0].shape() == Shape{2, 3});
  CHECK(values_of(out[0]) == std::vector<double>{0, 1, 10, 2, 3, 11});
}

TEST_CASE("Concat of many pieces along an outer axis over short rows (branches, fused vector rows)",
          "[shape_ops]") {
  // DenseNet's pattern: pieces of 3 and 5 channels on 7x7 maps, joined along the channels;
  // the output's rows are fused into one vector loop and each vector reads its piece alone.
  std::vector<TensorType> types;
  std::vector<Tensor> pieces;
  int64_t channels = 0;
  for (int k = 0; k < 9; ++k) {
    const int64_t c = k % 2 == 0 ? 3 : 5;
    types.push_back(float_type({1, c, 7, 7}));
    Tensor piece = iota_tensor({1, c, 7, 7});
    float *p = piece.data_as<float>();
    for (int64_t e = 0; e < piece.numel(); ++e) p[e] += 1000.0f * static_cast<float>(k);
    pieces.push_back(piece);
    channels += c;
  }
  Attributes a;
  a.set("axis", int64_t{1});
  auto out = run_node("Concat", types, {}, pieces, a)[0];
  REQUIRE(out.shape() == Shape{1, channels, 7, 7});
  bool all_match = true;
  int64_t first = 0;
  for (int k = 0; k < 9; ++k) {
    const int64_t c = k % 2 == 0 ? 3 : 5;
    for (int64_t e = 0; e < c * 49; ++e)
      all_match &= out.element_as_double(first * 49 + e) == 1000.0 * k + static_cast<double>(e);
    first += c;
  }
  CHECK(all_match);
}

TEST_CASE("Split by sizes, evenly, and by num_outputs", "[shape_ops]") {
  SECTION("sizes input") {
    auto out = run_node("Split", {float_type({5}), int64_type({2})}, {std::nullopt, ints({2, 3})},
                        {iota_tensor({5})}, {}, 2);
    CHECK(values_of(out[0]) == std::vector<double>{0, 1});
    CHECK(values_of(out[1]) == std::vector<double>{2, 3, 4});
  }
  SECTION("even split along axis 1") {
    Attributes a;
    a.set("axis", int64_t{1});
    auto out = run_node("Split", {float_type({2, 4})}, {}, {iota_tensor({2, 4})}, a, 2);
    CHECK(values_of(out[0]) == std::vector<double>{0, 1, 4, 5});
    CHECK(values_of(out[1]) == std::vector<double>{2, 3, 6, 7});
  }
  SECTION("num_outputs with a smaller last chunk (opset 18)") {
    Attributes a;
    a.set("num_outputs", int64_t{3});
    auto out = run_node("Split", {float_type({7})}, {}, {iota_tensor({7})}, a, 3, 18);
    CHECK(values_of(out[0]) == std::vector<double>{0, 1, 2});
    CHECK(values_of(out[1]) == std::vector<double>{3, 4, 5});
    CHECK(values_of(out[2]) == std::vector<double>{6});
  }
}

TEST_CASE("Slice with negative steps and clamped bounds", "[shape_ops]") {
  // numpy: np.arange(10)[8:-100:-3] == [8, 5, 2]
  auto out = run_node("Slice", {float_type({10}), int64_type({1}), int64_type({1}), int64_type({1}), int64_type({1})},
                      {std::nullopt, ints({8}), ints({-100}), ints({0}), ints({-3})}, {iota_tensor({10})});
  CHECK(values_of(out[0]) == std::vector<double>{8, 5, 2});
  // np.arange(12).reshape(3, 4)[1:1000, -3:-1] == [[5, 6], [9, 10]]
  out = run_node("Slice", {float_type({3, 4}), int64_type({2}), int64_type({2})},
                 {std::nullopt, ints({1, -3}), ints({1000, -1})}, {iota_tensor({3, 4})});
  CHECK(out[0].shape() == Shape{2, 2});
  CHECK(values_of(out[0]) == std::vector<double>{5, 6, 9, 10});
}

TEST_CASE("Pad modes", "[shape_ops]") {
  const Tensor x = iota_tensor({3});  // [0, 1, 2]
  const std::vector<TensorType> types = {float_type({3}), int64_type({2}), float_type({})};
  auto pad = [&](const std::string &mode, std::vector<int64_t> pads) {
    Attributes a;
    a.set("mode", mode);
    return values_of(run_node("Pad", types, {std::nullopt, ints(pads), Tensor::scalar(DType::Float32, 9)}, {x}, a)[0]);
  };
  CHECK(pad("constant", {2, 1}) == std::vector<double>{9, 9, 0, 1, 2, 9});
  CHECK(pad("edge", {2, 1}) == std::vector<double>{0, 0, 0, 1, 2, 2});
  // np.pad([0, 1, 2], (4, 3), mode="reflect")
  CHECK(pad("reflect", {4, 3}) == std::vector<double>{0, 1, 2, 1, 0, 1, 2, 1, 0, 1});
  CHECK(pad("constant", {-1, 1}) == std::vector<double>{1, 2, 9});
}

TEST_CASE("Pad before opset 11 takes attributes", "[shape_ops]") {
  Attributes a;
  a.set("pads", std::vector<int64_t>{0, 1, 0, 0});
  a.set("value", 1.5f);
  auto out = run_node("Pad", {float_type({2, 2})}, {}, {iota_tensor({2, 2})}, a, 1, 9);
  CHECK(out[0].shape() == Shape{2, 3});
  CHECK(values_of(out[0]) == std::vector<double>{1.5, 0, 1, 1.5, 2, 3});
}

TEST_CASE("Reshape, Squeeze and Unsqueeze views", "[shape_ops]") {
  auto out = run_node("Reshape", {float_type({2, 3, 4}), int64_type({2})}, {std::nullopt, ints({0, -1})},
                      {iota_tensor({2, 3, 4})});
  CHECK(out[0].shape() == Shape{2, 12});
  CHECK(out[0].element_as_double(13) == 13);

  out = run_node("Unsqueeze", {float_type({3}), int64_type({2})}, {std::nullopt, ints({-1, 0})}, {iota_tensor({3})});
  CHECK(out[0].shape() == Shape{1, 3, 1});

  Attributes old_axes;
  old_axes.set("axes", std::vector<int64_t>{0});
  out = run_node("Squeeze", {float_type({1, 3, 1})}, {}, {iota_tensor({1, 3, 1})}, old_axes, 1, 11);
  CHECK(out[0].shape() == Shape{3, 1});
  out = run_node("Squeeze", {float_type({1, 3, 1})}, {}, {iota_tensor({1, 3, 1})});
  CHECK(out[0].shape() == Shape{3});

  Attributes flatten_axis;
  flatten_axis.set("axis", int64_t{-1});
  out = run_node("Flatten", {float_type({2, 3, 4})}, {}, {iota_tensor({2, 3, 4})}, flatten_axis);
  CHECK(out[0].shape() == Shape{6, 4});
}

TEST_CASE("Expand and Tile", "[shape_ops]") {
  auto out = run_node("Expand", {float_type({3, 1}), int64_type({2})}, {std::nullopt, ints({2, 1, 2})},
                      {iota_tensor({3, 1})});
  CHECK(out[0].shape() == Shape{2, 3, 2});
  CHECK(values_of(out[0]) == std::vector<double>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2});

  out = run_node("Tile", {float_type({2, 2}), int64_type({2})}, {std::nullopt, ints({1, 2})}, {iota_tensor({2, 2})});
  CHECK(values_of(out[0]) == std::vector<double>{0, 1, 0, 1, 2, 3, 2, 3});
}

TEST_CASE("Range, ConstantOfShape and EyeLike", "[shape_ops]") {
  // np.arange(10, 3, -3, dtype=np.int32) == [10, 7, 4]
  auto out = run_node("Range", {TensorType{DType::Int32, {}, true}, TensorType{DType::Int32, {}, true},
                                TensorType{DType::Int32, {}, true}},
                      {Tensor::scalar(DType::Int32, 10), Tensor::scalar(DType::Int32, 3), Tensor::scalar(DType::Int32, -3)},
                      {});
  CHECK(out[0].dtype() == DType::Int32);
  CHECK(values_of(out[0]) == std::vector<double>{10, 7, 4});

  Attributes value;
  value.set("value", Tensor::from_int64s({7}, {1}));
  out = run_node("ConstantOfShape", {int64_type({2})}, {ints({2, 2})}, {}, value);
  CHECK(out[0].dtype() == DType::Int64);
  CHECK(values_of(out[0]) == std::vector<double>{7, 7, 7, 7});

  Attributes eye;
  eye.set("k", int64_t{1});
  eye.set("dtype", int64_t{static_cast<int64_t>(DType::Int32)});
  out = run_node("EyeLike", {float_type({2, 3})}, {}, {iota_tensor({2, 3})}, eye);
  CHECK(out[0].dtype() == DType::Int32);
  CHECK(values_of(out[0]) == std::vector<double>{0, 1, 0, 0, 0, 1});
}

TEST_CASE("DepthToSpace and SpaceToDepth", "[shape_ops]") {
  // x = np.arange(8).reshape(1, 8, 1, 1); DCR with blocksize 2 gives
  // [[[[0, 2], [4, 6]], [[1, 3], [5, 7]]]]; CRD gives [[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]].
  Attributes dcr;
  dcr.set("blocksize", int64_t{2});
  auto out = run_node("DepthToSpace", {float_type({1, 8, 1, 1})}, {}, {iota_tensor({1, 8, 1, 1})}, dcr);
  CHECK(out[0].shape() == Shape{1, 2, 2, 2});
  CHECK(values_of(out[0]) == std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7});
  Attributes crd = dcr;
  crd.set("mode", std::string("CRD"));
  out = run_node("DepthToSpace", {float_type({1, 8, 1, 1})}, {}, {iota_tensor({1, 8, 1, 1})}, crd);
  CHECK(values_of(out[0]) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});

  // SpaceToDepth inverts DCR DepthToSpace.
  Tensor space = float_tensor({1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
  out = run_node("SpaceToDepth", {float_type({1, 2, 2, 2})}, {}, {space}, dcr);
  CHECK(out[0].shape() == Shape{1, 8, 1, 1});
  CHECK(values_of(out[0]) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("Trilu keeps a triangle", "[shape_ops]") {
  // np.tril(np.arange(9).reshape(3, 3), k=-1)
  Attributes lower;
  lower.set("upper", int64_t{0});
  auto out = run_node("Trilu", {float_type({3, 3}), int64_type({})}, {std::nullopt, Tensor::scalar(DType::Int64, -1)},
                      {iota_tensor({3, 3})}, lower);
  CHECK(values_of(out[0]) == std::vector<double>{0, 0, 0, 3, 0, 0, 6, 7, 0});
  // np.triu(np.arange(6).reshape(2, 3))
  out = run_node("Trilu", {float_type({2, 3})}, {}, {iota_tensor({2, 3})});
  CHECK(values_of(out[0]) == std::vector<double>{0, 1, 2, 0, 4, 5});
}

TEST_CASE("Shape with start and end, and Size", "[shape_ops]") {
  Attributes a;
  a.set("start", int64_t{1});
  a.set("end", int64_t{-1});
  auto out = run_node("Shape", {float_type({2, 3, 4, 5})}, {}, {iota_tensor({2, 3, 4, 5})}, a);
  CHECK(values_of(out[0]) == std::vector<double>{3, 4});
  out = run_node("Size", {float_type({2, 3})}, {}, {iota_tensor({2, 3})});
  CHECK(out[0].shape().empty());
  CHECK(out[0].element_as_int64(0) == 6);
}

TEST_CASE("Omitted optional inputs before given ones", "[shape_ops]") {
  // Slice without axes (input 3) but with steps: np.arange(10)[1:8:3]
  auto out = run_node("Slice", {float_type({10}), int64_type({1}), int64_type({1}), TensorType{}, int64_type({1})},
                      {std::nullopt, ints({1}), ints({8}), std::nullopt, ints({3})}, {iota_tensor({10})});
  CHECK(values_of(out[0]) == std::vector<double>{1, 4, 7});
  // Pad-18 without constant_value (input 2) but with axes: zeros around the last axis only.
  out = run_node("Pad", {float_type({2, 3}), int64_type({2}), TensorType{}, int64_type({1})},
                 {std::nullopt, ints({1, 1}), std::nullopt, ints({-1})}, {iota_tensor({2, 3})}, {}, 1, 18);
  CHECK(out[0].shape() == Shape{2, 5});
  CHECK(values_of(out[0]) == std::vector<double>{0, 0, 1, 2, 0, 0, 3, 4, 5, 0});
}

TEST_CASE("Slice geometry clamps starts, ends and steps into each axis", "[shape_ops]") {
  // np.arange(40).reshape(10, 4)[8:-100:-3]: rows 8, 5, 2; the other axis is read whole.
  Result<SliceGeometry> g = slice_geometry({10, 4}, {{8}, {-100}, {}, {-3}});
  REQUIRE(g.ok());
  CHECK(g->start == std::vector<int64_t>{8, 0});
  CHECK(g->step == std::vector<int64_t>{-3, 1});
  CHECK(g->out == Shape{3, 4});
  // A step longer than the axis reads one element; the step is clamped to the axis length.
  g = slice_geometry({5}, {{0}, {5}, {}, {1000}});
  REQUIRE(g.ok());
  CHECK(g->out == Shape{1});
  CHECK(g->step == std::vector<int64_t>{5});
  // An unknown extent stays unknown; a known one is sliced.
  g = slice_geometry({kUnknownDim, 6}, {{1, 1}, {3, 3}, {}, {}});
  REQUIRE(g.ok());
  CHECK(g->out == Shape{kUnknownDim, 2});
  CHECK(steps_in_span(-7, -3) == 3);

  CHECK_THAT(slice_geometry({4}, {{0}, {4}, {}, {0}}).error().message, Catch::Contains("steps [0] contains 0"));
  CHECK_THAT(slice_geometry({4, 4}, {{0, 0}, {1, 1}, {1, -1}, {}}).error().message,
             Catch::Contains("axis 1 is repeated"));
  CHECK_THAT(slice_geometry({4}, {{0}, {1, 2}, {}, {}}).error().message, Catch::Contains("differ in length"));
}

TEST_CASE("Pad geometry spreads pads over all axes", "[shape_ops]") {
  Result<std::vector<int64_t>> full = full_pads({1, 2}, std::vector<int64_t>{-1}, 3);
  REQUIRE(full.ok());
  CHECK(full.value() == std::vector<int64_t>{0, 0, 1, 0, 0, 2});
  full = full_pads({1, -1, 2, 0}, std::nullopt, 2);
  REQUIRE(full.ok());
  CHECK(full.value() == std::vector<int64_t>{1, -1, 2, 0});
  Attributes old;
  old.set("paddings", std::vector<int64_t>{3, 4});
  CHECK(pads_from_attributes(old) == std::vector<int64_t>{3, 4});

  CHECK_THAT(full_pads({1}, std::nullopt, 2).error().message, Catch::Contains("has 1 entries, expected 4"));
  CHECK_THAT(full_pads({1, 1}, std::vector<int64_t>{5}, 2).error().message,
             Catch::Contains("axis 5 is out of range for rank 2"));
}

TEST_CASE("Shape-op errors name the problem", "[shape_ops]") {
  SECTION("Reshape to a different element count") {
    Graph g = single_node_graph("Reshape", {float_type({2, 3}), int64_type({2})}, 1, {}, {std::nullopt, ints({4, 2})});
    auto inferred = infer_shapes(g);
    REQUIRE_FALSE(inferred.ok());
    CHECK_THAT(inferred.error().message, Catch::Contains("cannot reshape") && Catch::Contains("Reshape"));
  }
  SECTION("Concat of mismatched shapes") {
    Attributes a;
    a.set("axis", int64_t{0});
    Graph g = single_node_graph("Concat", {float_type({1, 2}), float_type({1, 3})}, 1, a);
    CHECK_THAT(run_error_message(g, {iota_tensor({1, 2}), iota_tensor({1, 3})}), Catch::Contains("outside axis 0"));
  }
  SECTION("Split sizes that do not add up") {
    Graph g = single_node_graph("Split", {float_type({5}), int64_type({2})}, 2, {}, {std::nullopt, ints({2, 2})});
    CHECK_THAT(run_error_message(g, {iota_tensor({5})}), Catch::Contains("sums to 4"));
  }
  SECTION("Squeeze of a dimension that is not 1") {
    Graph g = single_node_graph("Squeeze", {float_type({2, 3}), int64_type({1})}, 1, {}, {std::nullopt, ints({1})});
    CHECK_THAT(run_error_message(g, {iota_tensor({2, 3})}), Catch::Contains("cannot squeeze axis 1"));
  }
  SECTION("Range with a zero delta") {
    Graph g = single_node_graph("Range", {float_type({}), float_type({}), float_type({})}, 1, {},
                                {Tensor::scalar(DType::Float32, 0), Tensor::scalar(DType::Float32, 1),
                                 Tensor::scalar(DType::Float32, 0)});
    CHECK_THAT(run_error_message(g, {}), Catch::Contains("delta is 0"));
  }
}

// Needs GraphExecutor to compute a node when only some of its outputs are empty (today it
// skips the node whenever any output is empty and returns zeros).
TEST_CASE("Split with an empty piece computes the others", "[shape_ops]") {
  auto out = run_node("Split", {float_type({5}), int64_type({3})}, {std::nullopt, ints({2, 0, 3})},
                      {iota_tensor({5})}, {}, 3);
  CHECK(out[1].numel() == 0);
  CHECK(values_of(out[0]) == std::vector<double>{0, 1});
  CHECK(values_of(out[2]) == std::vector<double>{2, 3, 4});
}

TEST_CASE("Old-opset attribute forms and scalar outputs", "[shape_ops]") {
  // Slice-1 takes starts/ends/axes as attributes: np.arange(12).reshape(3, 4)[:, 1:3]
  Attributes slice;
  slice.set("starts", std::vector<int64_t>{1});
  slice.set("ends", std::vector<int64_t>{3});
  slice.set("axes", std::vector<int64_t>{1});
  auto out = run_node("Slice", {float_type({3, 4})}, {}, {iota_tensor({3, 4})}, slice, 1, 9);
  CHECK(values_of(out[0]) == std::vector<double>{1, 2, 5, 6, 9, 10});

  // Split-11 takes split sizes as an attribute.
  Attributes split;
  split.set("split", std::vector<int64_t>{1, 2});
  out = run_node("Split", {float_type({3})}, {}, {iota_tensor({3})}, split, 2, 11);
  CHECK(values_of(out[1]) == std::vector<double>{1, 2});

  // An empty shape makes a scalar; no value attribute means float 0.
  out = run_node("ConstantOfShape", {int64_type({0})}, {ints({})}, {});
  CHECK(out[0].dtype() == DType::Float32);
  CHECK(out[0].shape().empty());
  CHECK(out[0].element_as_double(0) == 0);
}

TEST_CASE("Large tensors (vectorized and parallel schedules) match host loops", "[shape_ops]") {
  const Shape shape = {3, 70, 90};  // > 16384 elements, so the outer loops run in parallel
  const Tensor x = iota_tensor(shape);
  auto at = [&](int64_t a, int64_t b, int64_t c) { return static_cast<double>((a * 70 + b) * 90 + c); };

  SECTION("Transpose (2, 0, 1)") {
    Attributes a;
    a.set("perm", std::vector<int64_t>{2, 0, 1});
    auto out = run_node("Transpose", {float_type(shape)}, {}, {x}, a)[0];
    REQUIRE(out.shape() == Shape{90, 3, 70});
    bool all_match = true;
    for (int64_t c = 0; c < 90; ++c)
      for (int64_t a0 = 0; a0 < 3; ++a0)
        for (int64_t b = 0; b < 70; ++b) all_match &= out.element_as_double((c * 3 + a0) * 70 + b) == at(a0, b, c);
    CHECK(all_match);
  }
  SECTION("Concat along the innermost axis") {
    Attributes a;
    a.set("axis", int64_t{2});
    auto out = run_node("Concat", {float_type(shape), float_type(shape)}, {}, {x, x}, a)[0];
    REQUIRE(out.shape() == Shape{3, 70, 180});
    bool all_match = true;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 70; ++j)
        for (int64_t k = 0; k < 180; ++k) all_match &= out.element_as_double((i * 70 + j) * 180 + k) == at(i, j, k % 90);
    CHECK(all_match);
  }
  SECTION("Reflect Pad on the last two axes") {
    Attributes a;
    a.set("mode", std::string("reflect"));
    auto out = run_node("Pad", {float_type(shape), int64_type({6})}, {std::nullopt, ints({0, 5, 7, 0, 6, 8})}, {x}, a)[0];
    REQUIRE(out.shape() == Shape{3, 81, 105});
    auto reflect = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
    bool all_match = true;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 81; ++j)
        for (int64_t k = 0; k < 105; ++k)
          all_match &= out.element_as_double((i * 81 + j) * 105 + k) == at(i, reflect(j - 5, 70), reflect(k - 7, 90));
    CHECK(all_match);
  }
  SECTION("Slice with a negative step on the innermost axis") {
    auto out = run_node("Slice", {float_type(shape), int64_type({1}), int64_type({1}), int64_type({1}), int64_type({1})},
                        {std::nullopt, ints({-1}), ints({INT64_MIN}), ints({2}), ints({-2})}, {x})[0];
    REQUIRE(out.shape() == Shape{3, 70, 45});
    bool all_match = true;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 70; ++j)
        for (int64_t k = 0; k < 45; ++k) all_match &= out.element_as_double((i * 70 + j) * 45 + k) == at(i, j, 89 - 2 * k);
    CHECK(all_match);
  }
}
