#include <catch2/catch.hpp>

#include "base/fnv_hash.h"
#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"

using namespace tessel;

namespace {

/// Builds graphs node by node with named tensors.
struct GraphBuilder {
  Graph g;
  int tensor(const std::string &name, Shape shape = {1, 8, 8, 8}) {
    int id = g.find_tensor(name);
    return id != kNoTensor ? id : g.add_tensor({name, {DType::Float32, shape}, std::nullopt});
  }
  int weight(const std::string &name, Shape shape) {
    int id = tensor(name, shape);
    g.tensors[id].constant = Tensor(DType::Float32, shape);
    return id;
  }
  void node(const std::string &op, const std::string &name, std::vector<std::string> ins, std::string out,
            Attributes attrs = {}) {
    std::vector<int> in_ids;
    for (const auto &i : ins) in_ids.push_back(tensor(i));
    g.add_node({op, name, "", attrs}, in_ids, {tensor(out)});
  }
  std::vector<std::string> group_names(const FusedGroup &group) const {
    std::vector<std::string> names;
    for (int n : group.nodes) names.push_back(g.nodes[n].name);
    return names;
  }
};

Attributes conv3x3() {
  Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  return a;
}

/// x -> conv1 -> relu1 -> conv2 -> add(relu1 path? no: + x) -> relu2
GraphBuilder residual_block() {
  GraphBuilder b;
  b.g.opset = 17;
  b.g.inputs = {b.tensor("x")};
  b.weight("w1", {8, 8, 3, 3});
  b.weight("w2", {8, 8, 3, 3});
  b.node("Conv", "conv1", {"x", "w1"}, "c1", conv3x3());
  b.node("Relu", "relu1", {"c1"}, "r1");
  b.node("Conv", "conv2", {"r1", "w2"}, "c2", conv3x3());
  b.node("Add", "add", {"c2", "x"}, "a");
  b.node("Relu", "relu2", {"a"}, "y");
  b.g.outputs = {b.tensor("y")};
  return b;
}

}  // namespace

TEST_CASE("post-dominators of a residual block", "[fuse]") {
  GraphBuilder b = residual_block();
  auto ipdom = immediate_post_dominators(b.g);
  // x feeds conv1 and add, but x is an input, not a node. conv1 -> relu1 -> conv2 -> add -> relu2.
  CHECK(ipdom[0] == 1);
  CHECK(ipdom[2] == 3);
  CHECK(ipdom[4] == -1);
}

TEST_CASE("a conv absorbs its activation and a residual add", "[fuse]") {
  GraphBuilder b = residual_block();
  auto groups = partition_graph(b.g);
  REQUIRE(groups.size() == 2);
  CHECK(b.group_names(groups[0]) == std::vector<std::string>{"conv1", "relu1"});
  CHECK(b.group_names(groups[1]) == std::vector<std::string>{"conv2", "add", "relu2"});
  CHECK(b.g.nodes[groups[1].anchor].name == "conv2");
  CHECK(groups[1].pattern == OpPattern::OutElementwiseFusable);
}

TEST_CASE("a conv whose output has a non-elementwise second reader stays alone", "[fuse]") {
  GraphBuilder b;
  b.g.opset = 17;
  b.g.inputs = {b.tensor("x")};
  b.weight("w", {8, 8, 3, 3});
  b.node("Conv", "conv", {"x", "w"}, "c", conv3x3());
  b.node("Relu", "relu", {"c"}, "r");
  Attributes axes;
  axes.set("axes", std::vector<int64_t>{1});
  b.node("ReduceMax", "reduce", {"c"}, "m", axes);
  b.g.outputs = {b.tensor("r"), b.tensor("m")};
  auto groups = partition_graph(b.g);
  CHECK(groups.size() == 3);
}

TEST_CASE("elementwise producers fuse into a reduction", "[fuse]") {
  GraphBuilder b;
  b.g.opset = 17;
  b.g.inputs = {b.tensor("x")};
  b.node("Exp", "exp", {"x"}, "e");
  b.node("Mul", "mul", {"e", "x"}, "m");
  Attributes axes;
  axes.set("axes", std::vector<int64_t>{1});
  b.node("ReduceSum", "sum", {"m"}, "s", axes);
  b.g.outputs = {b.tensor("s")};
  auto groups = partition_graph(b.g);
  REQUIRE(groups.size() == 1);
  CHECK(b.g.nodes[groups[0].anchor].name == "sum");
}

TEST_CASE("views and opaque ops are never fused", "[fuse]") {
  GraphBuilder b;
  b.g.opset = 17;
  b.g.inputs = {b.tensor("x")};
  b.weight("shape", {2});
  b.node("Relu", "relu", {"x"}, "r");
  b.node("Reshape", "reshape", {"r", "shape"}, "v");
  b.node("Sigmoid", "sig", {"v"}, "y");
  b.g.outputs = {b.tensor("y")};
  auto groups = partition_graph(b.g);
  CHECK(groups.size() == 3);
}

TEST_CASE("identical subgraphs share a workload key; different shapes do not", "[fuse]") {
  GraphBuilder a = residual_block(), b = residual_block();
  // Rename everything in b: keys must not see names.
  for (auto &t : b.g.tensors) t.name += "_renamed";
  for (auto &n : b.g.nodes) n.name += "_renamed";
  auto ga = partition_graph(a.g), gb = partition_graph(b.g);
  REQUIRE(ga.size() == gb.size());
  CHECK(workload_key(a.g, ga[1]) == workload_key(b.g, gb[1]));
  CHECK(workload_key(a.g, ga[0]) != workload_key(a.g, ga[1]));  // conv+relu vs conv+add+relu

  GraphBuilder wide = residual_block();
  for (auto &t : wide.g.tensors)
    if (t.type.shape == Shape{1, 8, 8, 8}) t.type.shape = {1, 8, 16, 16};
  auto gw = partition_graph(wide.g);
  CHECK(workload_key(wide.g, gw[1]) != workload_key(a.g, ga[1]));
}

TEST_CASE("workload keys keep the hash every tuning database is keyed by", "[fuse]") {
  // FNV-1a 64 of "abc" from the historical basis 1469598103934665603 (computed independently).
  CHECK(workload_key_of_text("abc") == "e16801510db89efd");
  // Schedules and artifact files use the standard basis.
  CHECK(fnv1a64_hex(std::string("abc")) == "e71fa2190541574b");
}
