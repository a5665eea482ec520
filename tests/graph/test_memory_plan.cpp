#include <catch2/catch.hpp>

#include "graph/fusion/memory_plan.h"

using namespace tessel;

namespace {

const Shape kShape = {1, 8, 8, 8};
const int64_t kBytes = 8 * 8 * 8 * 4;

/// x -> op0 -> t0 -> op1 -> t1 ... -> y, every tensor [1,8,8,8] float32; weights added for Conv.
Graph chain(const std::vector<std::string> &ops) {
  Graph g;
  g.opset = 17;
  int prev = g.add_tensor({"x", {DType::Float32, kShape}, std::nullopt});
  g.inputs = {prev};
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<int> ins{prev};
    Attributes attrs;
    if (ops[i] == "Conv") {
      int w = g.add_tensor({"w" + std::to_string(i), {DType::Float32, {8, 8, 1, 1}}, Tensor(DType::Float32, {8, 8, 1, 1})});
      ins.push_back(w);
    }
    if (ops[i] == "Reshape") {
      int s = g.add_tensor({"s" + std::to_string(i), {DType::Int64, {4}}, Tensor::from_int64s({1, 8, 8, 8}, {4})});
      ins.push_back(s);
    }
    const bool last = i + 1 == ops.size();
    int out = g.add_tensor({last ? "y" : "t" + std::to_string(i), {DType::Float32, kShape}, std::nullopt});
    g.add_node({ops[i], ops[i] + std::to_string(i), "", attrs}, ins, {out});
    prev = out;
  }
  g.outputs = {prev};
  return g;
}

}  // namespace

TEST_CASE("tensors with disjoint lifetimes share arena bytes", "[memory_plan]") {
  Graph g = chain({"Conv", "Conv", "Conv", "Conv"});
  auto groups = partition_graph(g);
  REQUIRE(groups.size() == 4);
  MemoryPlan plan = plan_memory(g, groups);
  // t0 lives [0,1], t1 [1,2], t2 [2,3]: two buffers suffice, t0 and t2 share one.
  CHECK(plan.unshared_bytes == 3 * kBytes);
  CHECK(plan.arena_bytes == 2 * kBytes);
  CHECK(plan.arena_offset[g.find_tensor("t0")] == plan.arena_offset[g.find_tensor("t2")]);
  CHECK(plan.arena_offset[g.find_tensor("t0")] != plan.arena_offset[g.find_tensor("t1")]);
  // Inputs, outputs and weights are not in the arena.
  CHECK(plan.arena_offset[g.find_tensor("x")] == MemoryPlan::kNotInArena);
  CHECK(plan.arena_offset[g.find_tensor("y")] == MemoryPlan::kNotInArena);
  CHECK(plan.arena_offset[g.find_tensor("w0")] == MemoryPlan::kNotInArena);
}

TEST_CASE("a view aliases its input instead of taking a buffer", "[memory_plan]") {
  Graph g = chain({"Conv", "Reshape", "Conv"});
  MemoryPlan plan = plan_memory(g, partition_graph(g));
  CHECK(plan.views == 1);
  CHECK(plan.alias_of[g.find_tensor("t1")] == g.find_tensor("t0"));
  CHECK(plan.arena_offset[g.find_tensor("t1")] == plan.arena_offset[g.find_tensor("t0")]);
  CHECK(plan.arena_bytes == kBytes);
}

TEST_CASE("an elementwise group writes in place over an input that dies there", "[memory_plan]") {
  // Softmax is not fusable, so Exp forms its own elementwise group between two of them.
  Graph g = chain({"Softmax", "Exp", "Softmax"});
  auto groups = partition_graph(g);
  REQUIRE(groups.size() == 3);
  MemoryPlan plan = plan_memory(g, groups);
  CHECK(plan.in_place == 1);
  CHECK(plan.arena_offset[g.find_tensor("t1")] == plan.arena_offset[g.find_tensor("t0")]);
  CHECK(plan.arena_bytes == kBytes);
}
