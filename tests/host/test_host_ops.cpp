// Host ops (host/host_op.h) against the executor's per-node path, which runs each node
// through tessel's JIT kernels: the two must give the same numbers (floats to rounding,
// integers exactly) on broadcasting, negative axes and indices, int64 values beyond
// double's precision, and empty tensors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "executor/constant_evaluator.h"
#include "graph/infer/shape_inference.h"
#include "host/host_op.h"
#include "tensor/random_tensor.h"

using namespace tessel;

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

/// Uniform in [-1, 1) for floats, [0, 8) for integers; a fresh seed each call.
Tensor rnd(DType dtype, Shape shape) {
  static uint64_t seed = 1;
  return random_tensor(TensorType{dtype, std::move(shape)}, seed++);
}

/// `rnd` scaled and shifted: floats in [offset - scale, offset + scale).
Tensor rnd_scaled(Shape shape, float scale, float offset = 0) {
  Tensor t = rnd(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = t.data_as<float>()[i] * scale + offset;
  return t;
}

Tensor i64(std::vector<int64_t> values, Shape shape) { return Tensor::from_int64s(values, std::move(shape)); }
Tensor i64s(std::vector<int64_t> values) { return Tensor::from_int64s(values, {static_cast<int64_t>(values.size())}); }
Tensor i64_scalar(int64_t v) { return Tensor::from_int64s({v}, {}); }

Tensor i32(std::vector<int32_t> values, Shape shape) {
  Tensor t(DType::Int32, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.data_as<int32_t>()[i] = values[i];
  return t;
}

Tensor f32(std::vector<float> values, Shape shape) {
  Tensor t(DType::Float32, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

Tensor f32_scalar(float v) { return f32({v}, {}); }

Tensor bools(std::vector<int> values, Shape shape) {
  Tensor t(DType::Bool, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.data_as<uint8_t>()[i] = values[i] != 0;
  return t;
}

/// An omitted optional input.
Tensor none() { return Tensor(); }

Attributes attrs(std::initializer_list<std::pair<std::string, AttributeValue>> values) {
  Attributes a;
  for (const auto &[name, value] : values) a.set(name, value);
  return a;
}

struct Case {
  std::string label;
  std::string op;
  std::vector<Tensor> inputs;  // an undefined tensor is an omitted optional input
  Attributes attributes = {};
  int64_t opset = 17;
  size_t num_outputs = 1;
  double tolerance = 1e-6;  // floats: |host - reference| <= tolerance * (1 + |reference|)
};

std::string first_values(const Tensor &t) {
  std::ostringstream os;
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 8); ++i)
    os << (i ? ", " : "")
       << (dtype_is_float(t.dtype()) ? std::to_string(t.element_as_double(i)) : std::to_string(t.element_as_int64(i)));
  return os.str();
}

void check_same(const Tensor &got, const Tensor &want, double tolerance) {
  INFO("host " << got.type().to_string() << " {" << first_values(got) << "}, reference " << want.type().to_string()
               << " {" << first_values(want) << "}");
  REQUIRE(got.type() == want.type());
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool same;
    if (dtype_is_float(want.dtype())) {
      const double g = got.element_as_double(i), w = want.element_as_double(i);
      same = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= tolerance * (1 + std::abs(w));
    } else {
      same = got.element_as_int64(i) == want.element_as_int64(i);
    }
    if (!same && mismatches++ == 0) first = i;
  }
  const int64_t shown = std::max<int64_t>(first, 0);
  INFO("first mismatch at element " << first << ": host "
                                    << (want.numel() ? got.element_as_double(shown) : 0.0) << ", reference "
                                    << (want.numel() ? want.element_as_double(shown) : 0.0));
  CHECK(mismatches == 0);
}

/// Infers the node's output types from the inputs, runs it on the host and through the
/// executor, and compares every output.
void check_case(const Case &c) {
  INFO(c.label << " (" << c.op << ", opset " << c.opset << ")");
  Node node{c.op, c.op + "_node", "", c.attributes};
  std::vector<const Tensor *> inputs;
  std::vector<TensorType> types;
  for (const Tensor &t : c.inputs) {
    inputs.push_back(t.defined() ? &t : nullptr);
    types.push_back(t.defined() ? t.type() : TensorType{});
  }
  const Result<std::vector<TensorType>> inferred = infer_node_types(node, c.opset, types, inputs, c.num_outputs);
  INFO("inference: " << (inferred.ok() ? std::string("ok") : inferred.error().message));
  REQUIRE(inferred.ok());
  const Result<std::vector<Tensor>> host = evaluate_host_op(HostCall{node, c.opset, inputs, inferred.value()});
  INFO("host: " << (host.ok() ? std::string("ok") : host.error().message));
  REQUIRE(host.ok());
  const Result<std::vector<Tensor>> reference = evaluate_constant_node(node, c.opset, inputs, c.num_outputs);
  INFO("reference: " << (reference.ok() ? std::string("ok") : reference.error().message));
  REQUIRE(reference.ok());
  REQUIRE(host.value().size() >= c.num_outputs);
  for (size_t i = 0; i < c.num_outputs; ++i) {
    INFO("output " << i);
    check_same(host.value()[i], reference.value()[i], c.tolerance);
  }
}

void check_cases(const std::vector<Case> &cases) {
  for (const Case &c : cases) {
    SECTION(c.label) { check_case(c); }
  }
}

}  // namespace

TEST_CASE("Host elementwise ops match the executor", "[host_ops]") {
  const DType F = DType::Float32, I64 = DType::Int64, I32 = DType::Int32;
  check_cases({
      {"add broadcasts a column", "Add", {rnd(F, {2, 3, 4}), rnd(F, {3, 1})}},
      {"add of an empty tensor", "Add", {rnd(F, {0, 3}), rnd(F, {3})}},
      {"add of float16 rounds once", "Add", {rnd(DType::Float16, {2, 3}), rnd(DType::Float16, {3})}},
      {"where moves float16 elements", "Where",
       {rnd(DType::Bool, {2, 3}), rnd(DType::Float16, {2, 3}), rnd(DType::Float16, {3})}},
      {"int64 sub is exact beyond 2^53", "Sub",
       {i64({kInt64Max, kInt64Max - 1, 9007199254740993, kInt64Min + 5}, {4}), i64({1, kInt64Max, -2, -5}, {4})}},
      {"int64 mul is exact", "Mul", {i64({3037000499, -3037000499, 123456789}, {3}), i64({3037000499}, {1})}},
      {"mul by a scalar", "Mul", {rnd(F, {4, 5}), f32_scalar(2.5f)}},
      {"integer div truncates toward zero", "Div",
       {i32({-7, 7, -7, 7, 0, -1}, {6}), i32({2, -2, -2, 2, 3, 4}, {6})}},
      {"float div", "Div", {rnd(F, {3, 4}), rnd_scaled({4}, 0.5f, 1.5f)}},
      {"int64 mod takes the divisor's sign", "Mod",
       {i64({-7, 7, -7, 7, 5, -9007199254740993}, {6}), i64({3, -3, -3, 3, 5, 10}, {6})}},
      {"int32 fmod takes the dividend's sign", "Mod",
       {i32({-7, 7, -7, 7}, {4}), i32({3, -3, -3, 3}, {4})}, attrs({{"fmod", int64_t{1}}})},
      {"float fmod", "Mod", {rnd_scaled({2, 5}, 3.0f), rnd_scaled({5}, 0.5f, 1.5f)}, attrs({{"fmod", int64_t{1}}}), 17,
       1, 1e-5},
      {"float pow", "Pow", {rnd_scaled({3, 4}, 0.5f, 1.0f), rnd(F, {4})}},
      {"int64 pow", "Pow", {i64({2, 3, -2, 5}, {4}), i64({10, 3, 3, 0}, {4})}},
      {"float pow with an int64 exponent", "Pow", {rnd(F, {2, 3}), i64({0, 1, 2}, {3})}},
      {"variadic max broadcasts", "Max", {rnd(F, {2, 3}), rnd(F, {3}), rnd(F, {2, 1})}},
      {"int32 min", "Min", {rnd(I32, {4, 2}), rnd(I32, {2})}},
      {"sum of three", "Sum", {rnd(F, {3, 2}), rnd(F, {3, 2}), rnd(F, {2})}},
      {"mean of two", "Mean", {rnd(F, {2, 4}), rnd(F, {1, 4})}},
      {"int64 equal beyond 2^53", "Equal", {i64({9007199254740993, 4, 5}, {3}), i64({9007199254740992, 4, 6}, {3})}},
      {"greater broadcasts", "Greater", {rnd(F, {3, 4}), rnd(F, {4})}},
      {"int32 less-or-equal", "LessOrEqual", {rnd(I32, {2, 5}), rnd(I32, {2, 1})}},
      {"and", "And", {rnd(DType::Bool, {3, 4}), rnd(DType::Bool, {4})}},
      {"xor", "Xor", {rnd(DType::Bool, {6}), rnd(DType::Bool, {6})}},
      {"not", "Not", {bools({1, 0, 0, 1, 1, 0}, {2, 3})}},
      {"where broadcasts all three", "Where", {rnd(DType::Bool, {2, 1, 4}), rnd(F, {3, 4}), rnd(F, {2, 3, 1})}},
      {"exp", "Exp", {rnd_scaled({3, 5}, 4.0f)}},
      {"log", "Log", {rnd_scaled({3, 5}, 0.9f, 1.0f)}},
      {"sqrt", "Sqrt", {rnd_scaled({7}, 2.0f, 2.0f)}},
      {"sigmoid", "Sigmoid", {rnd_scaled({2, 6}, 6.0f)}},
      {"tanh", "Tanh", {rnd_scaled({2, 6}, 3.0f)}, {}, 17, 1, 1e-5},
      {"erf", "Erf", {rnd_scaled({2, 6}, 2.0f)}, {}, 17, 1, 1e-5},
      {"floor", "Floor", {rnd_scaled({8}, 5.0f)}},
      {"round halves to even", "Round", {f32({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 0.49f, -0.51f}, {8})}},
      {"int64 abs", "Abs", {i64({-5, 5, 0, -kInt64Max}, {4})}},
      {"int32 neg", "Neg", {i32({-5, 5, 0, 7}, {4})}},
      {"sign", "Sign", {f32({-2.0f, 0.0f, 3.0f, -0.0f}, {4})}},
      {"relu", "Relu", {rnd(F, {3, 3})}},
      {"reciprocal", "Reciprocal", {rnd_scaled({5}, 0.5f, 1.0f)}},
      {"leaky relu", "LeakyRelu", {rnd(F, {2, 5})}, attrs({{"alpha", 0.2f}})},
      {"hard sigmoid", "HardSigmoid", {rnd_scaled({2, 5}, 4.0f)}, attrs({{"alpha", 0.3f}, {"beta", 0.4f}})},
      {"hard swish", "HardSwish", {rnd_scaled({2, 5}, 5.0f)}},
      {"cast float to int32 truncates", "Cast", {rnd_scaled({2, 5}, 10.0f)}, attrs({{"to", int64_t{6}}})},
      {"cast int64 to float", "Cast", {i64({1, -3, 1 << 20, 9007199254740993}, {4})}, attrs({{"to", int64_t{1}}})},
      {"cast float to bool", "Cast", {f32({0.0f, -0.0f, 0.5f, -2.0f}, {4})}, attrs({{"to", int64_t{9}}})},
      {"cast float to float16", "Cast", {rnd_scaled({6}, 100.0f)}, attrs({{"to", int64_t{10}}})},
      {"cast int64 to int32", "Cast", {i64({5, -5, 1LL << 33}, {3})}, attrs({{"to", int64_t{6}}})},
      {"clip with min and max inputs", "Clip", {rnd(F, {3, 4}), f32_scalar(-0.25f), f32_scalar(0.5f)}, {}, 13},
      {"clip with attributes before opset 11", "Clip", {rnd(F, {3, 4})}, attrs({{"min", -0.5f}, {"max", 0.25f}}), 6},
      {"int64 clip with only a max", "Clip", {rnd(I64, {6}), none(), i64_scalar(3)}, {}, 13},
      {"identity", "Identity", {rnd(I64, {2, 3})}},
  });
}

TEST_CASE("Host shape ops match the executor", "[host_ops]") {
  const DType F = DType::Float32, I64 = DType::Int64;
  check_cases({
      {"shape from an axis", "Shape", {rnd(F, {2, 3, 4})}, attrs({{"start", int64_t{1}}}), 15},
      {"size", "Size", {rnd(F, {2, 3, 4})}},
      {"reshape copies and infers", "Reshape", {rnd(F, {2, 3, 4}), i64s({0, -1})}, {}, 13},
      {"flatten", "Flatten", {rnd(F, {2, 3, 4})}, attrs({{"axis", int64_t{2}}})},
      {"squeeze with an axes input", "Squeeze", {rnd(F, {1, 3, 1, 2}), i64s({-2, 0})}, {}, 13},
      {"unsqueeze with an axes attribute", "Unsqueeze", {rnd(F, {2, 3})},
       attrs({{"axes", std::vector<int64_t>{-1, 0}}}), 11},
      {"concat on a negative axis with an empty piece", "Concat", {rnd(F, {2, 3}), rnd(F, {2, 0}), rnd(F, {2, 2})},
       attrs({{"axis", int64_t{-1}}})},
      {"concat int64 on axis 0", "Concat", {rnd(I64, {1, 3}), rnd(I64, {2, 3})}, attrs({{"axis", int64_t{0}}})},
      {"split by an input", "Split", {rnd(F, {2, 6}), i64s({2, 1, 3})}, attrs({{"axis", int64_t{1}}}), 13, 3},
      {"split by num_outputs, uneven", "Split", {rnd(F, {7, 2})}, attrs({{"num_outputs", int64_t{3}}}), 18, 3},
      {"slice with negative steps and axes", "Slice",
       {rnd(F, {4, 5, 6}), i64s({-1, 1}), i64s({kInt64Min, 100}), i64s({0, -1}), i64s({-1, 2})}, {}, 13},
      {"slice to INT64_MAX", "Slice", {rnd(I64, {3, 8}), i64s({2}), i64s({kInt64Max}), i64s({1})}, {}, 13},
      {"slice with attributes before opset 10", "Slice", {rnd(F, {4, 6})},
       attrs({{"starts", std::vector<int64_t>{1, -4}}, {"ends", std::vector<int64_t>{3, 1000}}}), 9},
      {"transpose", "Transpose", {rnd(F, {2, 3, 4})}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}})},
      {"transpose reverses by default", "Transpose", {rnd(I64, {2, 3, 4})}},
      {"transpose of an empty tensor", "Transpose", {rnd(F, {0, 2, 3})},
       attrs({{"perm", std::vector<int64_t>{2, 0, 1}}})},
      {"expand", "Expand", {rnd(F, {3, 1}), i64s({2, 1, 4})}},
      {"tile", "Tile", {rnd(F, {2, 3}), i64s({2, 3})}},
      {"constant of shape with an int64 value", "ConstantOfShape", {i64s({2, 3})},
       attrs({{"value", i64({7}, {1})}})},
      {"constant of shape, float zeros", "ConstantOfShape", {i64s({4})}},
      {"int64 range", "Range", {i64_scalar(2), i64_scalar(17), i64_scalar(3)}},
      {"float range", "Range", {f32_scalar(0.5f), f32_scalar(3.1f), f32_scalar(0.3f)}},
      {"dropout passes the input and a full mask", "Dropout", {rnd(F, {2, 3})}, {}, 13, 2},
      {"constant pad", "Pad", {rnd(F, {2, 3}), i64s({1, 2, 0, 1}), f32_scalar(1.5f)}, {}, 13},
      {"reflect pad", "Pad", {rnd(F, {3, 4}), i64s({1, 2, 1, 2})}, attrs({{"mode", std::string("reflect")}}), 13},
      {"edge pad", "Pad", {rnd(F, {3, 4}), i64s({0, 3, 2, 1})}, attrs({{"mode", std::string("edge")}}), 13},
  });
}

TEST_CASE("Host index ops match the executor", "[host_ops]") {
  const DType F = DType::Float32;
  check_cases({
      {"gather with negative indices", "Gather", {rnd(F, {3, 4, 2}), i64({-1, 0, 3, -4}, {2, 2})},
       attrs({{"axis", int64_t{1}}})},
      {"gather a scalar index", "Gather", {rnd(F, {3, 4}), i64_scalar(-2)}},
      {"gather with int32 indices on a negative axis", "Gather", {rnd(DType::Int64, {2, 5}), i32({4, 0, 2}, {3})},
       attrs({{"axis", int64_t{-1}}})},
      {"gather with no indices", "Gather", {rnd(F, {3, 4}), i64({}, {0})}},
      {"gather elements", "GatherElements", {rnd(F, {3, 4}), i64({-1, 0, 3, 1, 2, -4}, {2, 3})},
       attrs({{"axis", int64_t{-1}}})},
      {"gather nd", "GatherND", {rnd(F, {3, 4, 2}), i64({2, 1, 0, -1, 1, 3}, {3, 2})}},
      {"gather nd with a batch axis", "GatherND", {rnd(F, {2, 3, 4}), i64({2, 0, 1, 1}, {2, 2, 1})},
       attrs({{"batch_dims", int64_t{1}}})},
      {"scatter elements", "ScatterElements", {rnd(F, {3, 4}), i64({2, 0, -1, 1, 0, 1, 2, 0}, {2, 4}), rnd(F, {2, 4})}},
      {"scatter elements adds duplicates", "ScatterElements",
       {rnd(F, {3, 4}), i64({2, 0, 2, 1, 2, 0, 2, 1}, {2, 4}), rnd(F, {2, 4})},
       attrs({{"axis", int64_t{0}}, {"reduction", std::string("add")}})},
      {"scatter elements keeps the max", "ScatterElements",
       {rnd(DType::Int64, {2, 5}), i64({4, 4, 0, 1, 1, 3}, {2, 3}), rnd(DType::Int64, {2, 3})},
       attrs({{"axis", int64_t{1}}, {"reduction", std::string("max")}})},
      {"scatter nd adds duplicates", "ScatterND", {rnd(F, {4, 3}), i64({1, 3, 1}, {3, 1}), rnd(F, {3, 3})},
       attrs({{"reduction", std::string("add")}})},
      {"one hot", "OneHot", {i64({0, 3, -1, 5, 2, -5}, {2, 3}), i64_scalar(4), f32({0.5f, 2.0f}, {2})},
       attrs({{"axis", int64_t{1}}})},
  });
}

TEST_CASE("Host reductions match the executor", "[host_ops]") {
  const DType F = DType::Float32, I64 = DType::Int64;
  check_cases({
      {"sum over the last axis, axes input", "ReduceSum", {rnd(F, {3, 4, 5}), i64s({-1})},
       attrs({{"keepdims", int64_t{0}}}), 13},
      {"sum over an empty axis", "ReduceSum", {rnd(F, {2, 0, 3}), i64s({1})}, {}, 13},
      {"sum with no axes and noop", "ReduceSum", {rnd(F, {2, 3}), i64({}, {0})},
       attrs({{"noop_with_empty_axes", int64_t{1}}}), 13},
      {"mean over two axes, attribute", "ReduceMean", {rnd(F, {3, 4, 5})},
       attrs({{"axes", std::vector<int64_t>{0, 2}}}), 11},
      {"max over everything", "ReduceMax", {rnd(F, {3, 4, 5})}, {}, 18},
      {"float16 mean accumulates in float32", "ReduceMean", {rnd(DType::Float16, {4, 6}), i64s({1})}, {}, 18},
      {"int64 min, axes input", "ReduceMin", {rnd(I64, {3, 4, 2}), i64s({-2})}, attrs({{"keepdims", int64_t{0}}}), 18},
      {"int64 prod", "ReduceProd", {rnd(I64, {3, 4})}, attrs({{"axes", std::vector<int64_t>{0}}}), 13},
      {"l2", "ReduceL2", {rnd(F, {3, 4}), i64s({1})}, {}, 18},
      {"log-sum-exp", "ReduceLogSumExp", {rnd_scaled({3, 4}, 30.0f)}, attrs({{"axes", std::vector<int64_t>{1}}}), 13},
      {"softmax along one axis", "Softmax", {rnd_scaled({2, 3, 4}, 5.0f)}, attrs({{"axis", int64_t{1}}}), 13},
      {"softmax flattening before opset 13", "Softmax", {rnd_scaled({2, 3, 4}, 5.0f)}, attrs({{"axis", int64_t{1}}}),
       11},
      {"log softmax", "LogSoftmax", {rnd_scaled({3, 5}, 5.0f)}, {}, 13},
      {"hardmax", "Hardmax", {rnd(F, {3, 5})}, {}, 13},
      {"cumsum, exclusive and reversed", "CumSum", {rnd(F, {3, 4}), i64_scalar(-1)},
       attrs({{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}})},
      {"int64 cumsum", "CumSum", {rnd(I64, {4, 3}), i64_scalar(0)}},
      {"argmax without kept axis", "ArgMax", {rnd(F, {3, 4, 2})},
       attrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}})},
      {"argmin picks the last tie", "ArgMin", {rnd(DType::Int32, {4, 6})},
       attrs({{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}})},
  });
}

TEST_CASE("Host matrix products match the executor", "[host_ops]") {
  const DType F = DType::Float32;
  check_cases({
      {"matmul", "MatMul", {rnd(F, {5, 7}), rnd(F, {7, 6})}, {}, 17, 1, 1e-5},
      {"matmul across cache blocks", "MatMul", {rnd(F, {6, 300}), rnd(F, {300, 260})}, {}, 17, 1, 1e-5},
      {"batched matmul broadcasts", "MatMul", {rnd(F, {2, 1, 3, 4}), rnd(F, {3, 4, 5})}, {}, 17, 1, 1e-5},
      {"vector times matrix", "MatMul", {rnd(F, {4}), rnd(F, {2, 4, 3})}, {}, 17, 1, 1e-5},
      {"matrix times vector", "MatMul", {rnd(F, {3, 4}), rnd(F, {4})}, {}, 17, 1, 1e-5},
      {"int64 matmul", "MatMul", {rnd(DType::Int64, {3, 4}), rnd(DType::Int64, {4, 2})}},
      {"float16 matmul", "MatMul", {rnd(DType::Float16, {3, 8}), rnd(DType::Float16, {8, 2})}, {}, 17, 1, 1e-3},
      {"gemm transposed with C per column", "Gemm", {rnd(F, {7, 5}), rnd(F, {6, 7}), rnd(F, {6})},
       attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}), 17, 1, 1e-5},
      {"gemm with a scalar C", "Gemm", {rnd(F, {5, 7}), rnd(F, {7, 6}), f32_scalar(0.25f)}, {}, 17, 1, 1e-5},
      {"gemm without C", "Gemm", {rnd(F, {5, 9}), rnd(F, {4, 9})}, attrs({{"transB", int64_t{1}}}), 17, 1, 1e-5},
  });
}

namespace {

/// The error evaluate_host_op gives for the case (its output types inferred), or "" if it runs.
std::string host_error(const Case &c) {
  Node node{c.op, "bad_" + c.op, "", c.attributes};
  std::vector<const Tensor *> inputs;
  std::vector<TensorType> types;
  for (const Tensor &t : c.inputs) {
    inputs.push_back(&t);
    types.push_back(t.type());
  }
  const auto inferred = infer_node_types(node, c.opset, types, inputs, c.num_outputs);
  REQUIRE(inferred.ok());
  const auto out = evaluate_host_op(HostCall{node, c.opset, inputs, inferred.value()});
  return out.ok() ? std::string() : out.error().message;
}

}  // namespace

TEST_CASE("Host ops refuse an index out of range", "[host_ops]") {
  const Tensor data = rnd(DType::Float32, {3, 2});
  const std::vector<Case> cases = {
      {"gather past the end", "Gather", {data, i64({0, 3}, {2})}},
      {"gather before the start", "Gather", {data, i64({-4, 0}, {2})}},
      {"gather elements", "GatherElements", {data, i64({0, 2}, {1, 2})}, attrs({{"axis", int64_t{1}}})},
      {"gather nd", "GatherND", {data, i64({1, -3}, {1, 2})}},
      {"scatter elements", "ScatterElements", {data, i64({5, 0}, {1, 2}), rnd(DType::Float32, {1, 2})}},
      {"scatter nd", "ScatterND", {data, i64({3}, {1, 1}), rnd(DType::Float32, {1, 2})}},
  };
  for (const Case &c : cases) {
    INFO(c.label);
    const std::string error = host_error(c);
    CHECK(error.find("out of range") != std::string::npos);
    CHECK(error.find("bad_" + c.op) != std::string::npos);  // names the node
  }
}

TEST_CASE("Host ops refuse output types they cannot write", "[host_ops]") {
  const Tensor a = rnd(DType::Float32, {4}), b = rnd(DType::Float32, {4});
  Node node{"Add", "add", "", {}};
  const std::vector<const Tensor *> inputs = {&a, &b};
  const std::vector<TensorType> wrong = {TensorType{DType::Bool, {4}}};
  const auto out = evaluate_host_op(HostCall{node, 17, inputs, wrong});
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().message.find("type") != std::string::npos);
}

TEST_CASE("Host op table lists the families' ops", "[host_ops]") {
  for (const char *op : {"Add", "Where", "Cast", "Clip", "Shape", "Slice", "Concat", "Gather", "ScatterND",
                         "ReduceMean", "Softmax", "ArgMax", "MatMul", "Gemm"})
    CHECK(has_host_implementation(op));
  CHECK_FALSE(has_host_implementation("NoSuchOp"));
}

// Not run by default (shared cores): the box head of Faster R-CNN, timed on one core.
TEST_CASE("Host Gemm of a detection box head is fast", "[.][host_ops][perf]") {
  const Tensor a = rnd(DType::Float32, {150, 12544}), b = rnd(DType::Float32, {1024, 12544});
  const Tensor c = rnd(DType::Float32, {1024});
  Node node{"Gemm", "box_head", "", attrs({{"transB", int64_t{1}}})};
  const std::vector<const Tensor *> inputs = {&a, &b, &c};
  const std::vector<TensorType> types = {TensorType{DType::Float32, {150, 1024}}};
  const auto start = std::chrono::steady_clock::now();
  const auto out = evaluate_host_op(HostCall{node, 17, inputs, types});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(out.ok());
  WARN("150 x 12544 x 1024 Gemm: " << seconds << " s");
  CHECK(seconds < 1.0);
}

namespace {

/// NonMaxSuppression as the spec reads, every candidate against every kept box: the
/// reference for the host op's pruned search.
std::vector<int64_t> brute_force_nms(const std::vector<float> &boxes, const std::vector<float> &scores, int64_t classes,
                                     int64_t count, int64_t max_per_class, float iou_threshold) {
  std::vector<int64_t> selected;
  for (int64_t c = 0; c < classes; ++c) {
    std::vector<int64_t> order(count);
    for (int64_t i = 0; i < count; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return scores[c * count + a] > scores[c * count + b]; });
    std::vector<int64_t> kept;
    for (int64_t i : order) {
      if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
      auto corner = [&](int64_t box, int k) { return static_cast<double>(boxes[box * 4 + k]); };
      bool suppressed = false;
      for (int64_t k : kept) {
        const double ay1 = std::min(corner(i, 0), corner(i, 2)), ay2 = std::max(corner(i, 0), corner(i, 2));
        const double ax1 = std::min(corner(i, 1), corner(i, 3)), ax2 = std::max(corner(i, 1), corner(i, 3));
        const double by1 = std::min(corner(k, 0), corner(k, 2)), by2 = std::max(corner(k, 0), corner(k, 2));
        const double bx1 = std::min(corner(k, 1), corner(k, 3)), bx2 = std::max(corner(k, 1), corner(k, 3));
        const double h = std::min(ay2, by2) - std::max(ay1, by1), w = std::min(ax2, bx2) - std::max(ax1, bx1);
        const double area_a = (ay2 - ay1) * (ax2 - ax1), area_b = (by2 - by1) * (bx2 - bx1);
        double iou = 0;
        if (h > 0 && w > 0 && area_a > 0 && area_b > 0) iou = h * w / (area_a + area_b - h * w);
        suppressed = suppressed || iou > iou_threshold;
      }
      if (suppressed) continue;
      kept.push_back(i);
      selected.insert(selected.end(), {0, c, i});
    }
  }
  return selected;
}

}  // namespace

TEST_CASE("Host NonMaxSuppression's pruned search equals the brute-force reading of the spec", "[host_ops]") {
  // Clustered boxes (many overlaps), boxes offset per class as detectors do, ties in score,
  // degenerate and flipped boxes, thresholds from negative to one.
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    const int64_t classes = 3, count = 400;
    const Tensor noise = random_tensor(TensorType{DType::Float32, {count * 8}, true}, seed);
    std::vector<float> boxes(count * 4), scores(classes * count);
    for (int64_t i = 0; i < count; ++i) {
      const float cluster = static_cast<float>(i % 7) * 30.0f + static_cast<float>(seed % 2) * 1000.0f * (i % 3);
      const float y = cluster + 10 * noise.data_as<float>()[i * 8], x = cluster + 10 * noise.data_as<float>()[i * 8 + 1];
      const float h = 20 * std::fabs(noise.data_as<float>()[i * 8 + 2]), w = 20 * std::fabs(noise.data_as<float>()[i * 8 + 3]);
      const bool flipped = i % 5 == 0, degenerate = i % 11 == 0;
      boxes[i * 4 + 0] = flipped ? y + h : y;
      boxes[i * 4 + 1] = flipped ? x + w : x;
      boxes[i * 4 + 2] = flipped ? y : y + h;
      boxes[i * 4 + 3] = degenerate ? x : (flipped ? x : x + w);
    }
    for (int64_t i = 0; i < classes * count; ++i)
      scores[i] = std::round(noise.data_as<float>()[(i % count) * 8 + 4 + i / count] * 8) / 8;  // ties
    for (float threshold : {-0.5f, 0.0f, 0.3f, 0.7f, 1.0f}) {
      Tensor boxes_tensor(DType::Float32, {1, count, 4}), scores_tensor(DType::Float32, {1, classes, count});
      std::copy(boxes.begin(), boxes.end(), boxes_tensor.data_as<float>());
      std::copy(scores.begin(), scores.end(), scores_tensor.data_as<float>());
      const Tensor max_per_class = Tensor::from_int64s({seed % 2 ? 50 : 1000}, {1});
      const Tensor iou = Tensor::scalar(DType::Float32, threshold);
      Node node{"NonMaxSuppression", "nms", "", {}};
      const std::vector<const Tensor *> inputs = {&boxes_tensor, &scores_tensor, &max_per_class, &iou};
      const std::vector<TensorType> types = {TensorType{DType::Int64, {kUnknownDim, 3}, true}};
      auto got = evaluate_host_op(HostCall{node, 13, inputs, types});
      REQUIRE(got.ok());
      const std::vector<int64_t> expected =
          brute_force_nms(boxes, scores, classes, count, seed % 2 ? 50 : 1000, threshold);
      INFO("seed " << seed << ", threshold " << threshold);
      CHECK(got.value()[0].to_int64_vector() == expected);
    }
  }
}
