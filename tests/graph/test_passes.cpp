// Tests of the graph optimizer's passes: each pass on small hand-built graphs (what it
// removes and that the numbers stay the same), the pass manager, and every pass alone and
// all together over the ONNX conformance models.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "executor/constant_evaluator.h"
#include "graph/infer/shape_inference.h"
#include "graph/onnx/onnx_import.h"
#include "graph/onnx/tensor_proto.h"
#include "graph/passes/eliminate_common_subexpressions.h"
#include "graph/passes/eliminate_dead_code.h"
#include "graph/passes/fold_batch_norm.h"
#include "graph/passes/fold_bias.h"
#include "graph/passes/pass_manager.h"
#include "graph/passes/simplify_algebra.h"
#include "tests/conformance/conformance_data.h"
#include "tests/graph/graph_builder.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

/// Builds graphs by tensor name; a name's tensor is created on first mention.
Attributes attrs(std::initializer_list<std::pair<std::string, AttributeValue>> list) {
  Attributes a;
  for (const auto &[name, value] : list) a.set(name, value);
  return a;
}

Tensor ints(const std::vector<int64_t> &values) {
  return Tensor::from_int64s(values, {static_cast<int64_t>(values.size())});
}

Tensor random_tensor(Shape shape, std::mt19937 &rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

Tensor filled(Shape shape, float value) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = value;
  return t;
}


/// Runs the given passes through the pass manager (types inferred before and after each).
Graph optimized(Graph g, std::vector<GraphPass> passes) {
  auto out = run_passes(std::move(g), passes);
  INFO((out.ok() ? std::string() : out.error().message));
  REQUIRE(out.ok());
  return std::move(out.value());
}

GraphPass pass(const std::string &name, Result<Graph> (*fn)(Graph)) { return {name, fn}; }

GraphPass folding_pass() {
  return {"fold_constants", [](Graph g) { return fold_constants(std::move(g), make_constant_evaluator()); }};
}

std::vector<std::string> output_names(const Graph &g) {
  std::vector<std::string> names;
  for (int t : g.outputs) names.push_back(g.tensors[t].name);
  return names;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// fold_constants

TEST_CASE("fold_constants turns a Shape-Gather-Unsqueeze-Concat chain into a Reshape constant", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {2, 3, 4}})
      .constant("zero", Tensor::scalar(DType::Int64, 0))
      .constant("axes", ints({0}))
      .constant("minus_one", ints({-1}))
      .node("Shape", {"x"}, {"shape"})
      .node("Gather", {"shape", "zero"}, {"batch"}, attrs({{"axis", int64_t{0}}}))
      .node("Unsqueeze", {"batch", "axes"}, {"batch1"})
      .node("Concat", {"batch1", "minus_one"}, {"target"}, attrs({{"axis", int64_t{0}}}))
      .node("Reshape", {"x", "target"}, {"flat"})
      .node("Constant", {}, {"three"}, attrs({{"value", filled({1}, 3.0f)}}))
      .node("Add", {"flat", "three"}, {"y"})
      .output("y");
  Graph folded = optimized(b.g, {folding_pass()});
  CHECK(folded.nodes.size() == 2);
  CHECK(count_ops(folded, "Reshape") == 1);
  CHECK(count_ops(folded, "Add") == 1);
  const int target = folded.find_tensor("target");
  REQUIRE(target != kNoTensor);
  REQUIRE(folded.tensors[target].constant);
  CHECK(folded.tensors[target].constant->to_int64_vector() == std::vector<int64_t>{2, -1});
  CHECK(folded.tensors[folded.find_tensor("three")].constant);

  std::mt19937 rng(1);
  Tensor x = random_tensor({2, 3, 4}, rng);
  Tensor want = run_graph(b.g, {x})[0], got = run_graph(folded, {x})[0];
  CHECK(got.shape() == Shape{2, 12});
  CHECK(max_abs_diff(got, want) == 0);
}

/// The exporter's packed-projection split (nn.MultiheadAttention): the first third of x's
/// last axis, its size computed from x's Shape; `tag` names this layer's tensors.
void add_shape_sliced_third(Builder &b, const std::string &x, const std::string &tag) {
  b.node("Shape", {x}, {tag + "_shape"})
      .node("Gather", {tag + "_shape", "minus_one"}, {tag + "_last"}, attrs({{"axis", int64_t{0}}}))
      .node("Add", {tag + "_last", "two"}, {tag + "_plus2"})
      .node("Div", {tag + "_plus2", "three_i"}, {tag + "_third"})
      .node("Slice", {x, "zero1", tag + "_third", "minus_one"}, {tag + "_q"});
}

TEST_CASE("static inference and fold_constants see through Shape arithmetic layer after layer", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {1, 4, 12}})
      .constant("minus_one", ints({-1}))
      .constant("zero1", ints({0}))
      .constant("two", ints({2}))
      .constant("three_i", ints({3}));
  add_shape_sliced_third(b, "x", "l0");
  b.node("Relu", {"l0_q"}, {"l0_out"});
  add_shape_sliced_third(b, "l0_out", "l1");  // Shape of a tensor only folding makes static
  b.node("Shape", {"l1_q"}, {"l1_q_shape"}).output("l1_q").output("l1_q_shape");

  // Before folding the second layer's shapes are unknown, but Shape still gives int64.
  auto typed = infer_shapes(b.g);
  INFO((typed.ok() ? std::string() : typed.error().message));
  REQUIRE(typed.ok());
  CHECK(typed->tensors[typed->find_tensor("l1_shape")].type.dtype == DType::Int64);
  CHECK(typed->tensors[typed->find_tensor("l1_plus2")].type.dtype == DType::Int64);

  Graph folded = optimized(b.g, {folding_pass()});
  CHECK(count_ops(folded, "Shape") == 0);
  const int q_shape = folded.find_tensor("l1_q_shape");
  REQUIRE(folded.tensors[q_shape].constant);
  CHECK(folded.tensors[q_shape].constant->to_int64_vector() == std::vector<int64_t>{1, 4, 2});
  std::mt19937 rng(3);
  Tensor x = random_tensor({1, 4, 12}, rng);
  CHECK(max_abs_diff(run_graph(folded, {x})[0], run_graph(b.g, {x})[0]) == 0);
}

TEST_CASE("fold_constants leaves outputs over 16 MiB and failed evaluations as nodes", "[passes]") {
  Builder b;
  const int64_t too_many = (16 << 20) / 4 + 1;  // float32 elements just over the limit
  b.input("x", {DType::Float32, {4}})
      .constant("big_shape", ints({too_many}))
      .constant("small_shape", ints({4}))
      .node("ConstantOfShape", {"big_shape"}, {"big"})
      .node("ConstantOfShape", {"small_shape"}, {"small"})
      .node("Add", {"x", "small"}, {"y"})
      .output("y")
      .output("big");
  Graph folded = optimized(b.g, {folding_pass()});
  CHECK(count_ops(folded, "ConstantOfShape") == 1);
  CHECK(folded.tensor_producer[folded.find_tensor("big")] >= 0);
  CHECK(folded.tensors[folded.find_tensor("small")].constant);

  // An evaluator that fails (as a kernel that does not compile would) keeps the node.
  int calls = 0;
  ConstantEvaluator failing = [&](const Node &, int64_t, const std::vector<const Tensor *> &, size_t) {
    ++calls;
    return Result<std::vector<Tensor>>(make_error("no kernel"));
  };
  auto kept = fold_constants(b.g, failing);
  REQUIRE(kept.ok());
  CHECK(calls == 1);  // only the small one was worth evaluating
  CHECK(count_ops(kept.value(), "ConstantOfShape") == 2);
}

TEST_CASE("fold_constants folds a constant graph output and keeps its name", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {3}})
      .constant("a", filled({3}, 2.0f))
      .constant("c", filled({3}, 5.0f))
      .node("Mul", {"a", "c"}, {"product"})
      .node("Relu", {"x"}, {"y"})
      .output("y")
      .output("product");
  Graph folded = optimized(b.g, {folding_pass()});
  CHECK(folded.nodes.size() == 1);
  CHECK(output_names(folded) == std::vector<std::string>{"y", "product"});
  auto out = run_graph(folded, {filled({3}, -1.0f)});
  CHECK(out[1].element_as_double(2) == 10.0);
  CHECK(out[0].element_as_double(0) == 0.0);
}

// ---------------------------------------------------------------------------------------------
// eliminate_dead_code

TEST_CASE("eliminate_dead_code removes unread nodes but keeps what a body reads by name", "[passes]") {
  // The then-branch reads `negated` from the enclosing graph without listing it as an input.
  auto branch = [](const std::string &captured, const std::string &out) {
    Builder body;
    body.node("Identity", {captured}, {out}).output(out);
    return std::make_shared<const Graph>(body.g);
  };
  Builder b;
  b.input("x", {DType::Float32, {2}})
      .input("cond", {DType::Bool, {}})
      .node("Neg", {"x"}, {"negated"})
      .node("Relu", {"x"}, {"unused"})
      .node("If", {"cond"}, {"y"},
            attrs({{"then_branch", branch("negated", "then_out")}, {"else_branch", branch("x", "else_out")}}))
      .output("y");
  auto pruned = eliminate_dead_code(b.g);
  REQUIRE(pruned.ok());
  CHECK(count_ops(pruned.value(), "Relu") == 0);
  CHECK(count_ops(pruned.value(), "Neg") == 1);
  Tensor x(DType::Float32, {2});
  x.data_as<float>()[0] = 1.5f;
  auto out = run_graph(pruned.value(), {x, Tensor::scalar(DType::Bool, 1)});
  CHECK(out[0].element_as_double(0) == -1.5);
}

// ---------------------------------------------------------------------------------------------
// eliminate_common_subexpressions

TEST_CASE("eliminate_common_subexpressions merges equal nodes and equal constants, transitively", "[passes]") {
  Tensor c = filled({4}, 0.0f);
  for (int i = 0; i < 4; ++i) c.data_as<float>()[i] = static_cast<float>(i + 1);
  Builder b;
  b.input("x", {DType::Float32, {4}})
      .constant("c1", c)
      .constant("c2", c.clone())
      .node("Relu", {"x"}, {"r1"})
      .node("Relu", {"x"}, {"r2"})
      .node("Add", {"r1", "r2"}, {"s"})
      .node("Mul", {"s", "c1"}, {"m1"})
      .node("Mul", {"s", "c2"}, {"m2"})  // equal once c2 is c1
      .node("Add", {"m1", "m2"}, {"y"})
      .output("y");
  Graph merged = optimized(b.g, {pass("eliminate_common_subexpressions", eliminate_common_subexpressions)});
  CHECK(count_ops(merged, "Relu") == 1);
  CHECK(count_ops(merged, "Mul") == 1);
  CHECK(count_ops(merged, "Add") == 2);
  CHECK(merged.find_tensor("c2") == kNoTensor);
  Tensor x(DType::Float32, {4});
  const float xs[] = {-1, 2, -3, 4};
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = xs[i];
  Tensor y = run_graph(merged, {x})[0];
  const double want[] = {0, 16, 0, 64};  // (relu(x) * 2) * c * 2
  for (int i = 0; i < 4; ++i) CHECK(y.element_as_double(i) == want[i]);
}

TEST_CASE("eliminate_common_subexpressions keeps graph outputs' names", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {3}})
      .node("Relu", {"x"}, {"inner"})
      .node("Neg", {"inner"}, {"negated"})
      .node("Relu", {"x"}, {"relu_out"})   // duplicate of `inner`, but a graph output
      .node("Sigmoid", {"x"}, {"s1"})
      .node("Sigmoid", {"x"}, {"s2"})      // both graph outputs: cannot share a tensor
      .output("negated")
      .output("relu_out")
      .output("s1")
      .output("s2");
  Graph merged = optimized(b.g, {pass("eliminate_common_subexpressions", eliminate_common_subexpressions)});
  CHECK(count_ops(merged, "Relu") == 1);
  CHECK(count_ops(merged, "Sigmoid") == 2);
  CHECK(output_names(merged) == output_names(b.g));
  Tensor x = filled({3}, 2.0f);
  auto out = run_graph(merged, {x});
  CHECK(out[0].element_as_double(0) == -2.0);
  CHECK(out[1].element_as_double(0) == 2.0);
}

// ---------------------------------------------------------------------------------------------
// simplify_algebra

TEST_CASE("simplify_algebra removes Identity, inference Dropout, same-type Cast and no-op Reshape", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {2, 3}})
      .constant("same_shape", ints({2, 3}))
      .node("Identity", {"x"}, {"i"})
      .node("Dropout", {"i"}, {"d", ""})
      .node("Cast", {"d"}, {"c"}, attrs({{"to", int64_t{1}}}))
      .node("Reshape", {"c", "same_shape"}, {"r"})
      .node("Flatten", {"r"}, {"f"}, attrs({{"axis", int64_t{1}}}))
      .node("Relu", {"f"}, {"y"})
      .node("Identity", {"y"}, {"out"})  // a graph output: Relu must write `out` itself
      .output("out");
  Graph simple = optimized(b.g, {pass("simplify_algebra", simplify_algebra)});
  REQUIRE(simple.nodes.size() == 1);
  CHECK(simple.nodes[0].op_type == "Relu");
  CHECK(simple.tensors[simple.node_inputs[0][0]].name == "x");
  CHECK(output_names(simple) == std::vector<std::string>{"out"});
  std::mt19937 rng(2);
  Tensor x = random_tensor({2, 3}, rng);
  CHECK(max_abs_diff(run_graph(simple, {x})[0], run_graph(b.g, {x})[0]) == 0);
}

TEST_CASE("simplify_algebra keeps a Dropout whose mask is read and a Cast that converts", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {2}})
      .node("Dropout", {"x"}, {"d", "mask"})
      .node("Cast", {"d"}, {"c"}, attrs({{"to", int64_t{7}}}))
      .output("c")
      .output("mask");
  Graph simple = optimized(b.g, {pass("simplify_algebra", simplify_algebra)});
  CHECK(simple.nodes.size() == 2);
}

TEST_CASE("simplify_algebra merges Reshape chains, spelling out dims the outer one copied", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {2, 3, 4}})
      .constant("s1", ints({6, 4}))
      .constant("s2", ints({3, 0, -1}))  // the 0 copies dim 1 of [6,4]: 4, not x's 3
      .node("Reshape", {"x", "s1"}, {"r1"})
      .node("Reshape", {"r1", "s2"}, {"r2"})
      .node("Relu", {"r2"}, {"y"})
      .output("y");
  Graph simple = optimized(b.g, {pass("simplify_algebra", simplify_algebra)});
  CHECK(count_ops(simple, "Reshape") == 1);
  std::mt19937 rng(3);
  Tensor x = random_tensor({2, 3, 4}, rng);
  Tensor got = run_graph(simple, {x})[0];
  CHECK(got.shape() == Shape{3, 4, 2});
  CHECK(max_abs_diff(got, run_graph(b.g, {x})[0]) == 0);
}

TEST_CASE("simplify_algebra composes Transposes and removes identity permutations", "[passes]") {
  std::mt19937 rng(4);
  Tensor x = random_tensor({2, 3, 4}, rng);
  SECTION("inverse permutations cancel") {
    Builder b;
    b.input("x", {DType::Float32, {2, 3, 4}})
        .node("Transpose", {"x"}, {"t1"}, attrs({{"perm", std::vector<int64_t>{1, 2, 0}}}))
        .node("Transpose", {"t1"}, {"t2"}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}))
        .node("Relu", {"t2"}, {"y"})
        .output("y");
    Graph simple = optimized(b.g, {pass("simplify_algebra", simplify_algebra)});
    CHECK(simple.nodes.size() == 1);
    CHECK(max_abs_diff(run_graph(simple, {x})[0], run_graph(b.g, {x})[0]) == 0);
  }
  SECTION("other permutations compose into one") {
    Builder b;
    b.input("x", {DType::Float32, {2, 3, 4}})
        .node("Transpose", {"x"}, {"t1"}, attrs({{"perm", std::vector<int64_t>{1, 0, 2}}}))
        .node("Transpose", {"t1"}, {"y"}, attrs({{"perm", std::vector<int64_t>{0, 2, 1}}}))
        .output("y");
    Graph simple = optimized(b.g, {pass("simplify_algebra", simplify_algebra)});
    REQUIRE(simple.nodes.size() == 1);
    CHECK(simple.nodes[0].attributes.get_ints("perm") == std::vector<int64_t>{1, 2, 0});
    Tensor got = run_graph(simple, {x})[0];
    CHECK(got.shape() == Shape{3, 4, 2});
    CHECK(max_abs_diff(got, run_graph(b.g, {x})[0]) == 0);
  }
}

TEST_CASE("simplify_algebra drops x*1, x+0 and x-0 only when broadcasting keeps x's shape", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {2, 3}})
      .input("column", {DType::Float32, {2, 1}})
      .constant("ones", filled({3}, 1.0f))
      .constant("zeros", filled({1, 1}, 0.0f))
      .constant("wide_ones", filled({1, 3}, 1.0f))
      .node("Mul", {"x", "ones"}, {"a"})
      .node("Add", {"zeros", "a"}, {"b"})
      .node("Sub", {"b", "zeros"}, {"c"})
      .node("Sub", {"zeros", "c"}, {"negated"})     // 0 - x is not x
      .node("Mul", {"column", "wide_ones"}, {"wide"})  // [2,1] * [1,3] widens
      .output("negated")
      .output("wide");
  Graph simple = optimized(b.g, {pass("simplify_algebra", simplify_algebra)});
  CHECK(simple.nodes.size() == 2);
  CHECK(count_ops(simple, "Sub") == 1);
  CHECK(count_ops(simple, "Mul") == 1);
  std::mt19937 rng(5);
  Tensor x = random_tensor({2, 3}, rng), column = random_tensor({2, 1}, rng);
  auto got = run_graph(simple, {x, column}), want = run_graph(b.g, {x, column});
  CHECK(max_abs_diff(got[0], want[0]) == 0);
  CHECK(got[1].shape() == Shape{2, 3});
  CHECK(max_abs_diff(got[1], want[1]) == 0);
}

TEST_CASE("simplify_algebra turns Pow(x, 2) into x * x and drops Pow(x, 1), not a widening Pow", "[passes]") {
  Builder b;
  b.input("x", {DType::Float32, {2, 3}})
      .constant("two", filled({1}, 2.0f))
      .constant("three", filled({}, 3.0f))
      .constant("one", filled({}, 1.0f))
      .constant("wide_two", filled({4, 1, 1}, 2.0f))
      .node("Pow", {"x", "two"}, {"squared"})
      .node("Pow", {"squared", "one"}, {"same"})
      .node("Pow", {"x", "wide_two"}, {"wide"})  // [2,3] ^ [4,1,1] widens to [4,2,3]
      .node("Pow", {"x", "three"}, {"cubed"})
      .output("same")
      .output("wide")
      .output("cubed");
  Graph simple = optimized(b.g, {pass("simplify_algebra", simplify_algebra)});
  CHECK(count_ops(simple, "Mul") == 3);
  CHECK(count_ops(simple, "Pow") == 1);
  std::mt19937 rng(7);
  Tensor x = random_tensor({2, 3}, rng);
  auto got = run_graph(simple, {x}), want = run_graph(b.g, {x});
  // x * x is exact; Halide's pow() is within an ulp or so of it.
  for (int64_t i = 0; i < x.numel(); ++i) CHECK(got[0].data_as<float>()[i] == x.data_as<float>()[i] * x.data_as<float>()[i]);
  CHECK(max_abs_diff(got[0], want[0]) < 1e-6);
  CHECK(got[1].shape() == Shape{4, 2, 3});
  CHECK(max_abs_diff(got[1], want[1]) == 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data_as<float>()[i];
    CHECK(got[2].data_as<float>()[i] == (v * v) * v);
  }
  CHECK(max_abs_diff(got[2], want[2]) < 1e-5);
}

// ---------------------------------------------------------------------------------------------
// fold_batch_norm

namespace {
Builder conv_bn_graph(std::mt19937 &rng, bool conv_bias, int64_t training_mode = 0) {
  Builder b;
  b.input("x", {DType::Float32, {1, 2, 5, 5}})
      .constant("w", random_tensor({3, 2, 3, 3}, rng))
      .constant("scale", random_tensor({3}, rng, 0.5f, 1.5f))
      .constant("shift", random_tensor({3}, rng))
      .constant("mean", random_tensor({3}, rng))
      .constant("var", random_tensor({3}, rng, 0.5f, 1.5f));
  std::vector<std::string> conv_inputs = {"x", "w"};
  if (conv_bias) {
    b.constant("bias", random_tensor({3}, rng));
    conv_inputs.push_back("bias");
  }
  b.node("Conv", conv_inputs, {"conv_out"}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}))
      .node("BatchNormalization", {"conv_out", "scale", "shift", "mean", "var"}, {"y"},
            attrs({{"epsilon", 1e-3f}, {"training_mode", training_mode}}))
      .output("y");
  return b;
}
}  // namespace

TEST_CASE("fold_batch_norm folds BN into the conv's weights and bias", "[passes]") {
  std::mt19937 rng(6);
  for (bool conv_bias : {false, true}) {
    INFO("conv bias: " << conv_bias);
    Builder b = conv_bn_graph(rng, conv_bias);
    Graph folded = optimized(b.g, {pass("fold_batch_norm", fold_batch_norm)});
    CHECK(count_ops(folded, "BatchNormalization") == 0);
    REQUIRE(folded.nodes.size() == 1);
    CHECK(folded.node_inputs[0].size() == 3);
    CHECK(output_names(folded) == std::vector<std::string>{"y"});
    Tensor x = random_tensor({1, 2, 5, 5}, rng);
    CHECK(max_abs_diff(run_graph(folded, {x})[0], run_graph(b.g, {x})[0]) < 1e-5);
  }
}

TEST_CASE("fold_batch_norm leaves a BN whose conv output has another reader, or in training mode", "[passes]") {
  std::mt19937 rng(7);
  SECTION("another reader") {
    Builder b = conv_bn_graph(rng, true);
    b.node("Relu", {"conv_out"}, {"other"}).output("other");
    auto folded = fold_batch_norm(b.g);
    REQUIRE(folded.ok());
    CHECK(count_ops(folded.value(), "BatchNormalization") == 1);
  }
  SECTION("training mode") {
    auto folded = fold_batch_norm(conv_bn_graph(rng, false, 1).g);
    REQUIRE(folded.ok());
    CHECK(count_ops(folded.value(), "BatchNormalization") == 1);
  }
}

// ---------------------------------------------------------------------------------------------
// fold_bias

TEST_CASE("fold_bias moves a per-channel Add into the conv's bias", "[passes]") {
  std::mt19937 rng(8);
  for (Shape bias_shape : {Shape{3, 1, 1}, Shape{1, 3, 1, 1}}) {
    INFO("bias shape " << shape_to_string(bias_shape));
    Builder b;
    b.input("x", {DType::Float32, {1, 2, 5, 5}})
        .constant("w", random_tensor({3, 2, 3, 3}, rng))
        .constant("c", random_tensor(bias_shape, rng))
        .node("Conv", {"x", "w"}, {"conv_out"})
        .node("Add", {"conv_out", "c"}, {"y"})
        .output("y");
    Graph folded = optimized(b.g, {pass("fold_bias", fold_bias)});
    REQUIRE(folded.nodes.size() == 1);
    CHECK(folded.nodes[0].op_type == "Conv");
    CHECK(folded.node_inputs[0].size() == 3);
    Tensor x = random_tensor({1, 2, 5, 5}, rng);
    CHECK(max_abs_diff(run_graph(folded, {x})[0], run_graph(b.g, {x})[0]) < 1e-5);
  }
  SECTION("an Add along the last axis is not a channel bias") {
    Builder b;
    b.input("x", {DType::Float32, {1, 2, 5, 5}})
        .constant("w", random_tensor({3, 2, 3, 3}, rng))
        .constant("c", random_tensor({3}, rng))
        .node("Conv", {"x", "w"}, {"conv_out"})  // [1,3,3,3]: c broadcasts along width
        .node("Add", {"conv_out", "c"}, {"y"})
        .output("y");
    Graph kept = optimized(b.g, {pass("fold_bias", fold_bias)});
    CHECK(kept.nodes.size() == 2);
  }
}

TEST_CASE("fold_bias turns a 2-D MatMul plus a bias vector into Gemm", "[passes]") {
  std::mt19937 rng(9);
  Builder b;
  b.input("a", {DType::Float32, {4, 5}})
      .input("batched", {DType::Float32, {2, 4, 5}})
      .constant("w", random_tensor({5, 3}, rng))
      .constant("bias", random_tensor({3}, rng))
      .node("MatMul", {"a", "w"}, {"mm"})
      .node("Add", {"bias", "mm"}, {"y"})
      .node("MatMul", {"batched", "w"}, {"mm3"})  // 3-D: stays MatMul + Add
      .node("Add", {"mm3", "bias"}, {"y3"})
      .output("y")
      .output("y3");
  Graph folded = optimized(b.g, {pass("fold_bias", fold_bias)});
  CHECK(count_ops(folded, "Gemm") == 1);
  CHECK(count_ops(folded, "MatMul") == 1);
  CHECK(count_ops(folded, "Add") == 1);
  Tensor a = random_tensor({4, 5}, rng), batched = random_tensor({2, 4, 5}, rng);
  auto got = run_graph(folded, {a, batched}), want = run_graph(b.g, {a, batched});
  CHECK(max_abs_diff(got[0], want[0]) < 1e-5);
  CHECK(max_abs_diff(got[1], want[1]) == 0);
}

// ---------------------------------------------------------------------------------------------
// The pass manager

TEST_CASE("run_passes prints after each pass, skips by name and rejects unknown names", "[passes]") {
  std::mt19937 rng(10);
  Builder b = conv_bn_graph(rng, false);
  b.node("Identity", {"y"}, {"z"});
  b.g.outputs = {b.tensor("z")};
  const auto passes = default_passes(make_constant_evaluator());
  CHECK(pass_order_text(passes) ==
        "fold_constants -> simplify_algebra -> eliminate_common_subexpressions -> fold_batch_norm -> fold_bias -> "
        "prune_conv_taps -> eliminate_dead_code");

  std::ostringstream log;
  PassOptions options;
  options.print_after_each = &log;
  options.skip = {"fold_batch_norm"};
  auto out = run_passes(b.g, passes, options);
  REQUIRE(out.ok());
  CHECK(count_ops(out.value(), "BatchNormalization") == 1);
  CHECK(count_ops(out.value(), "Identity") == 0);
  CHECK_THAT(log.str(), Catch::Contains("--- after simplify_algebra") && Catch::Contains("--- after eliminate_dead_code"));
  CHECK_THAT(log.str(), !Catch::Contains("--- after fold_batch_norm"));

  options.skip = {"fold_batchnorm"};
  auto typo = run_passes(b.g, passes, options);
  REQUIRE_FALSE(typo.ok());
  CHECK_THAT(typo.error().message, Catch::Contains("fold_batchnorm") && Catch::Contains("no such pass"));
}

TEST_CASE("run_passes reports the pass that failed or changed the graph's outputs", "[passes][error]") {
  Builder b;
  b.input("x", {DType::Float32, {2}}).node("Relu", {"x"}, {"y"}).output("y");
  GraphPass failing{"always_fails", [](Graph) { return Result<Graph>(make_error("bad input")); }};
  auto failed = run_passes(b.g, {failing});
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().message, Catch::Contains("always_fails") && Catch::Contains("bad input"));

  GraphPass renaming{"renames_output", [](Graph g) {
                       g.tensors[g.outputs[0]].name = "renamed";
                       return Result<Graph>(std::move(g));
                     }};
  auto renamed = run_passes(b.g, {renaming});
  REQUIRE_FALSE(renamed.ok());
  CHECK_THAT(renamed.error().message, Catch::Contains("renames_output") && Catch::Contains("outputs"));

  Builder unsupported;
  unsupported.input("x", {DType::Float32, {2}}).node("NoSuchOp", {"x"}, {"y"}).output("y");
  auto rejected = run_passes(unsupported.g, default_passes(make_constant_evaluator()));
  REQUIRE_FALSE(rejected.ok());
  CHECK_THAT(rejected.error().message, Catch::Contains("NoSuchOp"));
}

// ---------------------------------------------------------------------------------------------
// Every pass, alone and together, over the ONNX conformance models

namespace {

using tessel::testing::file_exists;
using tessel::testing::list_dir;

struct DataSet {
  std::vector<Tensor> inputs, expected;
};

/// Empty when the outputs match the reference at the ONNX backend tolerance (rtol 1e-3,
/// atol 1e-7, NaN equals NaN), else what differs.
std::string mismatch(const std::vector<Tensor> &got, const std::vector<Tensor> &want) {
  if (got.size() != want.size()) return std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor &g = got[o], &w = want[o];
    const std::string label = "output " + std::to_string(o);
    if (g.dtype() != w.dtype() || g.shape() != w.shape())
      return label + " is " + g.type().to_string() + ", expected " + w.type().to_string();
    for (int64_t i = 0; i < w.numel(); ++i) {
      if (!dtype_is_float(w.dtype())) {
        if (g.element_as_int64(i) != w.element_as_int64(i)) return label + " element " + std::to_string(i) + " differs";
        continue;
      }
      const double a = g.element_as_double(i), b = w.element_as_double(i);
      if ((std::isnan(a) && std::isnan(b)) || (std::isinf(b) && a == b)) continue;
      if (!(std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b)))
        return label + " element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(b);
    }
  }
  return "";
}

/// Empty when every data set's outputs match, else why not.
std::string check_graph(const Graph &graph, const std::vector<DataSet> &sets) {
  GraphExecutor executor(std::make_shared<const Graph>(graph));
  for (const DataSet &set : sets) {
    auto out = executor.run(set.inputs);
    if (!out.ok()) return out.error().message;
    std::string diff = mismatch(out.value(), set.expected);
    if (!diff.empty()) return diff;
  }
  return "";
}

/// The model's data sets, or nothing when one cannot be read.
std::vector<DataSet> read_data_sets(const std::string &dir) {
  std::vector<DataSet> sets;
  for (const std::string &set : list_dir(dir, "test_data_set_")) {
    DataSet data;
    const std::string base = dir + "/" + set + "/";
    for (int i = 0; file_exists(base + "input_" + std::to_string(i) + ".pb"); ++i) {
      auto t = read_tensor_pb_file(base + "input_" + std::to_string(i) + ".pb");
      if (!t.ok()) return {};
      data.inputs.push_back(t.value());
    }
    for (int i = 0; file_exists(base + "output_" + std::to_string(i) + ".pb"); ++i) {
      auto t = read_tensor_pb_file(base + "output_" + std::to_string(i) + ".pb");
      if (!t.ok()) return {};
      data.expected.push_back(t.value());
    }
    sets.push_back(std::move(data));
  }
  return sets;
}

}  // namespace

TEST_CASE("every pass alone and all together keep the conformance models' outputs", "[passes][conformance]") {
  const std::string root = "/usr/share/libonnx-testdata/data";
  if (!file_exists(root)) {
    WARN("no libonnx-testdata at " << root);
    return;
  }
  const std::vector<GraphPass> all = default_passes(make_constant_evaluator());
  std::vector<std::pair<std::string, std::vector<GraphPass>>> configurations;
  for (const GraphPass &p : all) configurations.push_back({p.name, {p}});
  configurations.push_back({"all passes", all});

  int models = 0, checked = 0, changed = 0;
  std::vector<std::string> failures;
  for (const std::string folder : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const std::string &test : list_dir(root + "/" + folder)) {
      const std::string dir = root + "/" + folder + "/" + test;
      auto graph = import_onnx_file(dir + "/model.onnx");
      if (!graph.ok() || !check_supported_ops(graph.value()).ok()) continue;
      const std::vector<DataSet> sets = read_data_sets(dir);
      if (sets.empty()) continue;
      // Only models that pass without passes can tell whether a pass broke them.
      if (!check_graph(graph.value(), sets).empty()) continue;
      ++models;
      for (const auto &[label, passes] : configurations) {
        auto rewritten = run_passes(graph.value(), passes);
        std::string why = rewritten.ok() ? check_graph(rewritten.value(), sets) : rewritten.error().message;
        ++checked;
        // Counted so the log shows the passes had something to do, not just that nothing broke.
        if (rewritten.ok() && (rewritten->nodes.size() != graph->nodes.size() ||
                               rewritten->tensors.size() != graph->tensors.size()))
          ++changed;
        if (!why.empty()) failures.push_back(folder + "/" + test + " with " + label + ": " + why);
      }
    }
  }
  std::string report;
  for (const std::string &f : failures) report += f + "\n";
  INFO(report);
  std::printf("passes over conformance models: %d models, %d runs (%d changed the graph), %zu failures\n", models,
              checked, changed, failures.size());
  CHECK(models > 700);
  CHECK(failures.empty());
}
