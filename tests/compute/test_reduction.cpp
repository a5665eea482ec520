#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "graph/infer/reduce_axes.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

std::vector<int64_t> ints(const Tensor &t) { return t.to_int64_vector(); }

/// Runs a one-input op on x, with optional constant value inputs after it.
Tensor run_unary(const std::string &op, const Tensor &x, Attributes a, std::vector<std::optional<Tensor>> values = {},
                 int64_t opset = 17) {
  std::vector<TensorType> types{x.type()};
  std::vector<std::optional<Tensor>> constants{std::nullopt};
  for (auto &v : values) {
    types.push_back(v ? v->type() : TensorType{});
    constants.push_back(v);
  }
  return run_graph(single_node_graph(op, types, 1, std::move(a), constants, opset), {x})[0];
}

const Tensor kData = float_tensor({3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});

}  // namespace

TEST_CASE("ReduceSum takes axes as an input from opset 13", "[reduction]") {
  Tensor y =
      run_unary("ReduceSum", kData, make_attributes({{"keepdims", int64_t{0}}}), {Tensor::from_int64s({1}, {1})}, 13);
  CHECK(y.shape() == Shape{3, 2});
  CHECK(float_values(y) == std::vector<float>{4, 6, 12, 14, 20, 22});
  // Empty axes reduce everything; noop_with_empty_axes keeps the input.
  Tensor all = run_unary("ReduceSum", kData, {}, {Tensor::from_int64s({}, {0})}, 13);
  CHECK(all.shape() == Shape{1, 1, 1});
  CHECK(float_values(all) == std::vector<float>{78});
  Tensor noop = run_unary("ReduceSum", kData, make_attributes({{"noop_with_empty_axes", int64_t{1}}}),
                          {Tensor::from_int64s({}, {0})}, 13);
  CHECK(noop.shape() == Shape{3, 2, 2});
  CHECK(float_values(noop) == float_values(kData));
  // A scalar has nothing to reduce.
  Tensor scalar = run_unary("ReduceSum", Tensor::scalar(DType::Float32, 2.5f), {}, {}, 13);
  CHECK(scalar.shape() == Shape{});
  CHECK(float_values(scalar) == std::vector<float>{2.5f});
}

TEST_CASE("Reductions with attribute axes and keepdims", "[reduction]") {
  Attributes keep_axis1 = make_attributes({{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{1}}});
  Tensor mean = run_unary("ReduceMean", kData, keep_axis1, {}, 11);
  CHECK(mean.shape() == Shape{3, 1, 2});
  CHECK(float_values(mean) == std::vector<float>{2, 3, 6, 7, 10, 11});
  CHECK(float_values(run_unary("ReduceMax", kData, keep_axis1, {}, 11)) == std::vector<float>{3, 4, 7, 8, 11, 12});
  CHECK(float_values(run_unary("ReduceMin", kData, keep_axis1, {}, 11)) == std::vector<float>{1, 2, 5, 6, 9, 10});
  CHECK(float_values(run_unary("ReduceProd", kData, keep_axis1, {}, 11)) == std::vector<float>{3, 8, 35, 48, 99, 120});
  CHECK(float_values(run_unary("ReduceSumSquare", kData, keep_axis1, {}, 11)) ==
        std::vector<float>{10, 20, 74, 100, 202, 244});

  // Negative axes, several at once, no keepdims: over axes 1 and 2 of kData.
  Attributes last_two = make_attributes({{"axes", std::vector<int64_t>{-1, 1}}, {"keepdims", int64_t{0}}});
  Tensor l1 =
      run_unary("ReduceL1", float_tensor({3, 2, 2}, {-1, 2, -3, 4, 5, -6, 7, 8, 9, 10, 11, -12}), last_two, {}, 13);
  CHECK(l1.shape() == Shape{3});
  CHECK(float_values(l1) == std::vector<float>{10, 26, 42});
  Tensor l2 = run_unary("ReduceL2", kData, last_two, {}, 13);
  CHECK(float_values(l2)[0] == Approx(std::sqrt(30.0)));
  CHECK(float_values(run_unary("ReduceLogSum", kData, last_two, {}, 13))[1] == Approx(std::log(26.0)));
}

TEST_CASE("ReduceLogSumExp does not overflow on large inputs", "[reduction]") {
  Tensor x = float_tensor({2, 2}, {1000, 1000, -1000, 0});
  Tensor y = run_unary("ReduceLogSumExp", x,
                       make_attributes({{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}), {}, 13);
  CHECK(float_values(y)[0] == Approx(1000 + std::log(2.0)));
  CHECK(float_values(y)[1] == Approx(0).margin(1e-6));
}

TEST_CASE("Reductions over an empty axis give the identity", "[reduction]") {
  Tensor empty(DType::Float32, {0, 3});
  Attributes axis0 = make_attributes({{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{1}}});
  CHECK(float_values(run_unary("ReduceSum", empty, axis0, {}, 13)) == std::vector<float>{0, 0, 0});
  CHECK(float_values(run_unary("ReduceProd", empty, axis0, {}, 13)) == std::vector<float>{1, 1, 1});
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(float_values(run_unary("ReduceMax", empty, axis0, {}, 13)) == std::vector<float>{-inf, -inf, -inf});
  CHECK(float_values(run_unary("ReduceMin", empty, axis0, {}, 13)) == std::vector<float>{inf, inf, inf});
  CHECK(float_values(run_unary("ReduceLogSumExp", empty, axis0, {}, 13))[0] == -inf);
  CHECK(std::isnan(float_values(run_unary("ReduceMean", empty, axis0, {}, 13))[0]));
}

TEST_CASE("Integer reductions keep their type", "[reduction]") {
  Tensor x(DType::Int32, {2, 3});
  const int32_t values[] = {1, -2, 3, 4, 5, 7};
  for (int i = 0; i < 6; ++i) x.data_as<int32_t>()[i] = values[i];
  Attributes axis1 = make_attributes({{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  Tensor sum = run_unary("ReduceSum", x, axis1, {}, 11);
  CHECK(sum.dtype() == DType::Int32);
  CHECK(ints(sum) == std::vector<int64_t>{2, 16});
  CHECK(ints(run_unary("ReduceMean", x, axis1, {}, 11)) == std::vector<int64_t>{0, 5});  // 2/3, 16/3 truncated
  CHECK(ints(run_unary("ReduceL1", x, axis1, {}, 11)) == std::vector<int64_t>{6, 16});
  CHECK(ints(run_unary("ReduceMax", x, axis1, {}, 11)) == std::vector<int64_t>{3, 7});
}

TEST_CASE("Float16 reductions accumulate in float32", "[reduction]") {
  // 4096 ones: a float16 accumulator would stop growing at 2048.
  Tensor x(DType::Float16, {4096});
  for (int i = 0; i < 4096; ++i) x.data_as<uint16_t>()[i] = float_to_half(1.0f);
  Tensor y = run_unary("ReduceSum", x, make_attributes({{"keepdims", int64_t{0}}}), {}, 11);
  CHECK(y.dtype() == DType::Float16);
  CHECK(half_to_float(y.data_as<uint16_t>()[0]) == 4096.0f);
}

TEST_CASE("ArgMax and ArgMin with keepdims and select_last_index", "[reduction]") {
  Tensor x = float_tensor({2, 3}, {2, 5, 5, 1, 1, 0});
  Tensor first = run_unary("ArgMax", x, make_attributes({{"axis", int64_t{1}}}));
  CHECK(first.dtype() == DType::Int64);
  CHECK(first.shape() == Shape{2, 1});
  CHECK(ints(first) == std::vector<int64_t>{1, 0});
  Tensor last = run_unary("ArgMax", x, make_attributes({{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}}));
  CHECK(ints(last) == std::vector<int64_t>{2, 1});
  Tensor min0 = run_unary("ArgMin", x, make_attributes({{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}));
  CHECK(min0.shape() == Shape{3});
  CHECK(ints(min0) == std::vector<int64_t>{1, 1, 1});
  Tensor min_last =
      run_unary("ArgMin", float_tensor({4}, {3, 1, 2, 1}), make_attributes({{"select_last_index", int64_t{1}}}));
  CHECK(ints(min_last) == std::vector<int64_t>{3});
}

TEST_CASE("CumSum with exclusive and reverse", "[reduction]") {
  Tensor x = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto axis = [](int32_t a) { return std::optional<Tensor>(Tensor::scalar(DType::Int32, a)); };
  CHECK(float_values(run_unary("CumSum", x, {}, {axis(1)})) == std::vector<float>{1, 3, 6, 4, 9, 15});
  CHECK(float_values(run_unary("CumSum", x, {}, {axis(0)})) == std::vector<float>{1, 2, 3, 5, 7, 9});
  CHECK(float_values(run_unary("CumSum", x, make_attributes({{"exclusive", int64_t{1}}}), {axis(-1)})) ==
        std::vector<float>{0, 1, 3, 0, 4, 9});
  CHECK(float_values(run_unary("CumSum", x, make_attributes({{"reverse", int64_t{1}}}), {axis(1)})) ==
        std::vector<float>{6, 5, 3, 15, 11, 6});
  CHECK(float_values(run_unary("CumSum", x, make_attributes({{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}),
                               {axis(1)})) == std::vector<float>{5, 3, 0, 11, 6, 0});
}

TEST_CASE("TopK inference reads K from its input", "[reduction]") {
  Node node{"TopK", "topk", "", make_attributes({{"axis", int64_t{1}}})};
  Tensor k = Tensor::from_int64s({2}, {1});
  auto types = infer_node_types(node, 11, {TensorType{DType::Float32, {3, 4}}, k.type()}, {nullptr, &k}, 2);
  REQUIRE(types.ok());
  CHECK(types.value()[0] == TensorType{DType::Float32, {3, 2}});
  CHECK(types.value()[1] == TensorType{DType::Int64, {3, 2}});
  Tensor too_big = Tensor::from_int64s({5}, {1});
  auto bad = infer_node_types(node, 11, {TensorType{DType::Float32, {3, 4}}, too_big.type()}, {nullptr, &too_big}, 2);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("exceeds"));
}

TEST_CASE("Einsum common forms", "[reduction][einsum]") {
  auto einsum = [](const std::string &eq, const std::vector<Tensor> &xs) {
    std::vector<TensorType> types;
    for (const Tensor &x : xs) types.push_back(x.type());
    return run_graph(single_node_graph("Einsum", types, 1, make_attributes({{"equation", eq}}), {}, 12), xs)[0];
  };
  Tensor a = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = float_tensor({3, 2}, {1, 0, 0, 1, 1, 1});
  Tensor ab = einsum("ij,jk->ik", {a, b});
  CHECK(ab.shape() == Shape{2, 2});
  CHECK(float_values(ab) == std::vector<float>{4, 5, 10, 11});
  CHECK(float_values(einsum("ij,jk", {a, b})) == float_values(ab));  // implicit output "ik"
  CHECK(einsum("ij->ji", {a}).shape() == Shape{3, 2});
  CHECK(float_values(einsum("ij->ji", {a})) == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(float_values(einsum("ij->j", {a})) == std::vector<float>{5, 7, 9});
  CHECK(float_values(einsum("i,j->ij", {float_tensor({2}, {1, 2}), float_tensor({2}, {3, 4})})) ==
        std::vector<float>{3, 4, 6, 8});
  Tensor square = float_tensor({2, 2}, {1, 2, 3, 4});
  CHECK(float_values(einsum("ii", {square})) == std::vector<float>{5});
  CHECK(float_values(einsum("ii->i", {square})) == std::vector<float>{1, 4});
  Tensor batch = float_tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor swapped = einsum("...ij->...ji", {batch});
  CHECK(swapped.shape() == Shape{2, 2, 2});
  CHECK(float_values(swapped) == std::vector<float>{1, 3, 2, 4, 5, 7, 6, 8});
  CHECK(float_values(einsum("bij,bjk->bik", {batch, batch})) == std::vector<float>{7, 10, 15, 22, 67, 78, 91, 106});
}

TEST_CASE("Reduced axes from the attribute or input 1, and the shape they leave", "[reduction]") {
  using Mask = std::vector<bool>;
  auto mask = [](const Attributes &a, const std::vector<int64_t> &input_axes) {
    Result<Mask> m = reduced_axis_mask(a, input_axes, 3);
    REQUIRE(m.ok());
    return m.value();
  };
  CHECK(mask(make_attributes({{"axes", std::vector<int64_t>{-1, 0}}}), {}) == Mask{true, false, true});
  CHECK(mask({}, {1}) == Mask{false, true, false});
  CHECK(mask({}, {}) == Mask{true, true, true});
  CHECK(mask(make_attributes({{"noop_with_empty_axes", int64_t{1}}}), {}) == Mask{false, false, false});
  CHECK_THAT(reduced_axis_mask({}, {0, -3}, 3).error().message, Catch::Contains("axis -3 appears more than once"));
  CHECK(reduced_shape({3, 4, 5}, {true, false, true}, true) == Shape{1, 4, 1});
  CHECK(reduced_shape({3, 4, 5}, {true, false, true}, false) == Shape{4});
}

TEST_CASE("Reduction errors name the problem", "[reduction][errors]") {
  Graph bad_axis =
      single_node_graph("ReduceSum", {kData.type()}, 1, make_attributes({{"axes", std::vector<int64_t>{3}}}), {}, 11);
  CHECK_THAT(run_error_message(bad_axis, {kData}), Catch::Contains("axis 3 in axes is out of range"));
  Graph twice = single_node_graph("ReduceMax", {kData.type()}, 1,
                                  make_attributes({{"axes", std::vector<int64_t>{1, -2}}}), {}, 11);
  CHECK_THAT(run_error_message(twice, {kData}), Catch::Contains("more than once"));
  Tensor a = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Graph mismatch = single_node_graph("Einsum", {a.type(), a.type()}, 1,
                                     make_attributes({{"equation", std::string("ij,jk->ik")}}), {}, 12);
  CHECK_THAT(run_error_message(mismatch, {a, a}), Catch::Contains("subscript 'j' has sizes 3 and 2"));
  Graph rank =
      single_node_graph("Einsum", {a.type()}, 1, make_attributes({{"equation", std::string("ijk->i")}}), {}, 12);
  CHECK_THAT(run_error_message(rank, {a}), Catch::Contains("has rank 2"));
  Graph empty_arg = single_node_graph("ArgMax", {TensorType{DType::Float32, {0, 2}}}, 1, {}, {}, 13);
  CHECK_THAT(run_error_message(empty_arg, {Tensor(DType::Float32, {0, 2})}), Catch::Contains("has size 0"));
}

namespace {

/// Deterministic values in [-1, 1), for shapes big enough to take the vectorized and
/// parallel schedules.
Tensor pattern_tensor(Shape shape) {
  Tensor t(DType::Float32, shape);
  uint32_t state = 12345;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data_as<float>()[i] = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return t;
}

}  // namespace

TEST_CASE("Large reductions match naive loops", "[reduction]") {
  const Tensor x = pattern_tensor({64, 33, 40});
  const float *px = x.data_as<float>();
  auto at = [&](int a, int b, int c) { return px[(a * 33 + b) * 40 + c]; };

  SECTION("sum over the middle axis (vectorized, parallel)") {
    Tensor y = run_unary("ReduceSum", x, make_attributes({{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}),
                         {}, 11);
    REQUIRE(y.shape() == Shape{64, 40});
    for (int a = 0; a < 64; ++a)
      for (int c = 0; c < 40; ++c) {
        double s = 0;
        for (int b = 0; b < 33; ++b) s += at(a, b, c);
        REQUIRE(y.data_as<float>()[a * 40 + c] == Approx(s).margin(1e-4));
      }
  }
  SECTION("max over the last axis and argmax over the first") {
    Tensor y = run_unary("ReduceMax", x, make_attributes({{"axes", std::vector<int64_t>{-1}}}), {}, 11);
    REQUIRE(y.shape() == Shape{64, 33, 1});
    Tensor arg = run_unary("ArgMax", x, make_attributes({{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}));
    REQUIRE(arg.shape() == Shape{33, 40});
    for (int a = 0; a < 64; ++a)
      for (int b = 0; b < 33; ++b) {
        float m = at(a, b, 0);
        for (int c = 1; c < 40; ++c) m = std::max(m, at(a, b, c));
        REQUIRE(y.data_as<float>()[a * 33 + b] == m);
      }
    for (int b = 0; b < 33; ++b)
      for (int c = 0; c < 40; ++c) {
        int best = 0;
        for (int a = 1; a < 64; ++a)
          if (at(a, b, c) > at(best, b, c)) best = a;
        REQUIRE(arg.data_as<int64_t>()[b * 40 + c] == best);
      }
  }
  SECTION("cumsum along the middle axis") {
    Tensor y = run_unary("CumSum", x, make_attributes({{"reverse", int64_t{1}}}), {Tensor::scalar(DType::Int64, 1)});
    for (int a = 0; a < 64; ++a)
      for (int c = 0; c < 40; ++c) {
        double s = 0;
        for (int b = 32; b >= 0; --b) {
          s += at(a, b, c);
          REQUIRE(y.data_as<float>()[(a * 33 + b) * 40 + c] == Approx(s).margin(1e-4));
        }
      }
  }
  SECTION("einsum batched matmul") {
    const Tensor w = pattern_tensor({64, 40, 24});
    Tensor y = run_graph(single_node_graph("Einsum", {x.type(), w.type()}, 1,
                                           make_attributes({{"equation", std::string("bij,bjk->bik")}}), {}, 12),
                         {x, w})[0];
    REQUIRE(y.shape() == Shape{64, 33, 24});
    const float *pw = w.data_as<float>();
    for (int a = 0; a < 64; ++a)
      for (int i = 0; i < 33; ++i)
        for (int k = 0; k < 24; ++k) {
          double s = 0;
          for (int j = 0; j < 40; ++j) s += at(a, i, j) * pw[(a * 40 + j) * 24 + k];
          REQUIRE(y.data_as<float>()[(a * 33 + i) * 24 + k] == Approx(s).margin(1e-4));
        }
  }
}
