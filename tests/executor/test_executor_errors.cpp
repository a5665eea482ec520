#include <catch2/catch.hpp>

#include "executor/graph_executor.h"
#include "executor/model_inputs.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

TEST_CASE("an elementwise graph runs and computes the right values", "[executor]") {
  Graph g = single_node_graph("Add", {{DType::Float32, {2, 2}}, {DType::Float32, {2}}});
  auto out = run_graph(g, {float_tensor({2, 2}, {1, 2, 3, 4}), float_tensor({2}, {10, 20})});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == Shape{2, 2});
  CHECK(out[0].data_as<float>()[0] == 11);
  CHECK(out[0].data_as<float>()[3] == 24);
}

TEST_CASE("wrong input count, dtype and shape are errors naming the input", "[executor][error]") {
  Graph g = single_node_graph("Relu", {{DType::Float32, {2, 3}}});
  GraphExecutor executor(std::make_shared<const Graph>(g));
  auto none = executor.run(std::vector<Tensor>{});
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("in0"));
  auto wrong_dtype = executor.run({Tensor(DType::Int32, {2, 3})});
  REQUIRE_FALSE(wrong_dtype.ok());
  CHECK_THAT(wrong_dtype.error().message, Catch::Contains("in0") && Catch::Contains("float32"));
  auto wrong_shape = executor.run({Tensor(DType::Float32, {3, 2})});
  REQUIRE_FALSE(wrong_shape.ok());
  CHECK_THAT(wrong_shape.error().message, Catch::Contains("[2,3]") && Catch::Contains("[3,2]"));
}

TEST_CASE("a shape mismatch inside the graph names the node", "[executor][error]") {
  Graph g = single_node_graph("Add", {{DType::Float32, {kUnknownDim}}, {DType::Float32, {kUnknownDim}}});
  GraphExecutor executor(std::make_shared<const Graph>(g));
  auto out = executor.run({Tensor(DType::Float32, {3}), Tensor(DType::Float32, {4})});
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message, Catch::Contains("Add_node"));
}

TEST_CASE("binding inputs by name reports unknown, repeated and missing names", "[executor][error]") {
  Graph g = single_node_graph("Add", {{DType::Float32, {2}}, {DType::Float32, {2}}});
  Tensor t(DType::Float32, {2});
  auto unknown = bind_inputs(g, {{"nope", t}, {"in1", t}});
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.error().message, Catch::Contains("nope") && Catch::Contains("in0, in1"));
  auto twice = bind_inputs(g, {{"in0", t}, {"in0", t}});
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(twice.error().message, Catch::Contains("twice"));
  auto missing = bind_inputs(g, {{"in1", t}});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("missing input 'in0'"));
  auto ok = bind_inputs(g, {{"in1", t}, {"", t}});
  CHECK(ok.ok());
}

TEST_CASE("random inputs are seeded and never all zero", "[executor]") {
  Tensor a = random_tensor({DType::Float32, {64}}, 7), b = random_tensor({DType::Float32, {64}}, 7);
  bool any_nonzero = false;
  for (int i = 0; i < 64; ++i) {
    CHECK(a.data_as<float>()[i] == b.data_as<float>()[i]);
    any_nonzero |= a.data_as<float>()[i] != 0;
  }
  CHECK(any_nonzero);
}
