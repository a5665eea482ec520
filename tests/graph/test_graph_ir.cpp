#include <catch2/catch.hpp>

#include "graph/ir/graph.h"

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

namespace {
/// x -> Relu -> a -> Neg -> b (output); x -> Sigmoid -> dead (unused)
Graph small_graph() {
  Graph g;
  g.name = "small";
  int x = g.add_tensor({"x", {DType::Float32, {4}}, std::nullopt});
  int a = g.add_tensor({"a", {}, std::nullopt});
  int b = g.add_tensor({"b", {}, std::nullopt});
  int dead = g.add_tensor({"dead", {}, std::nullopt});
  g.inputs = {x};
  g.outputs = {b};
  g.add_node({"Relu", "relu", "", {}}, {x}, {a});
  g.add_node({"Neg", "neg", "", {}}, {a}, {b});
  g.add_node({"Sigmoid", "sig", "", {}}, {x}, {dead});
  return g;
}
}  // namespace

TEST_CASE("consumers lists the readers of each tensor", "[graph]") {
  Graph g = small_graph();
  auto readers = g.consumers();
  CHECK(readers[g.find_tensor("x")] == std::vector<int>{0, 2});
  CHECK(readers[g.find_tensor("b")].empty());
}

TEST_CASE("dead nodes are removed and ids renumbered", "[graph]") {
  Graph g = small_graph().without_dead_nodes();
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.find_tensor("dead") == kNoTensor);
  CHECK(g.tensors[g.outputs[0]].name == "b");
  CHECK(g.tensor_producer[g.outputs[0]] == 1);
  CHECK(g.nodes[g.tensor_producer[g.outputs[0]]].op_type == "Neg");
}

TEST_CASE("replace_uses rewires node inputs and graph outputs", "[graph]") {
  Graph g = small_graph();
  const int x = g.find_tensor("x"), a = g.find_tensor("a"), b = g.find_tensor("b");
  g.replace_uses(a, x);  // Neg now reads x directly
  CHECK(g.node_inputs[1] == std::vector<int>{x});
  g.replace_uses(b, a);
  CHECK(g.outputs == std::vector<int>{a});
  Graph pruned = g.without_dead_nodes();
  REQUIRE(pruned.nodes.size() == 1);
  CHECK(pruned.nodes[0].op_type == "Relu");
}

TEST_CASE("a cycle is reported with a node on it", "[graph][error]") {
  Graph g;
  int a = g.add_tensor({"a", {}, std::nullopt});
  int b = g.add_tensor({"b", {}, std::nullopt});
  g.add_node({"Relu", "first", "", {}}, {b}, {a});
  g.add_node({"Relu", "second", "", {}}, {a}, {b});
  CHECK_THROWS_WITH(g.topological_order(), Catch::Contains("cycle") && Catch::Contains("first"));
}

TEST_CASE("the printed graph lists nodes with types", "[graph]") {
  Graph g = small_graph();
  std::string text = print_graph(g);
  CHECK_THAT(text, Catch::Contains("input  %x:float32[4]"));
  CHECK_THAT(text, Catch::Contains("= Neg[neg](%a"));
}

TEST_CASE("graphs are values: a copy is independent", "[graph]") {
  Graph g = small_graph();
  Graph copy = g;
  copy.nodes[0].op_type = "Tanh";
  copy.replace_uses(copy.find_tensor("a"), copy.find_tensor("x"));
  CHECK(g.nodes[0].op_type == "Relu");
  CHECK(g.node_inputs[1] == std::vector<int>{g.find_tensor("a")});
}

TEST_CASE("dead-code removal keeps values an If body reads by name", "[graph]") {
  // The body reads "hidden" from the enclosing graph; nothing else does.
  auto body = std::make_shared<Graph>();
  int captured = body->add_tensor({"hidden", {DType::Float32, {2}}, std::nullopt});
  int body_out = body->add_tensor({"body_out", {}, std::nullopt});
  body->add_node({"Relu", "inner", "", {}}, {captured}, {body_out});
  body->outputs = {body_out};

  Graph g;
  int x = g.add_tensor({"x", {DType::Float32, {2}}, std::nullopt});
  int cond = g.add_tensor({"cond", {DType::Bool, {}}, std::nullopt});
  int hidden = g.add_tensor({"hidden", {}, std::nullopt});
  int y = g.add_tensor({"y", {}, std::nullopt});
  g.inputs = {x, cond};
  g.outputs = {y};
  g.add_node({"Neg", "make_hidden", "", {}}, {x}, {hidden});
  Attributes branches;
  branches.set("then_branch", std::shared_ptr<const Graph>(body));
  branches.set("else_branch", std::shared_ptr<const Graph>(body));
  g.add_node({"If", "if", "", branches}, {cond}, {y});
  Graph pruned = g.without_dead_nodes();
  CHECK(pruned.nodes.size() == 2);
  CHECK(pruned.find_tensor("hidden") != kNoTensor);
}
