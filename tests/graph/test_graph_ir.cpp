#include <catch2/catch.hpp>

#include "graph/graph.h"

using namespace tessel;

TEST_CASE("topological order puts producers before consumers", "[graph]") {
  Graph g;
  int a = g.add_tensor({"a", {DType::Float32, {2}}, std::nullopt});
  int b = g.add_tensor({"b", {DType::Float32, {2}}, std::nullopt});
  int c = g.add_tensor({"c", {DType::Float32, {2}}, std::nullopt});
  g.inputs = {a};
  g.outputs = {c};
  Node second{"Relu", "second", "", {}};
  Node first{"Neg", "first", "", {}};
  g.add_node(second, {b}, {c});  // added before its producer on purpose
  g.add_node(first, {a}, {b});
  auto order = g.topological_order();
  REQUIRE(order == std::vector<int>{1, 0});
}
