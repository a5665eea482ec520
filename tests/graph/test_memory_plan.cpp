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

namespace {

/// Two convs of x concatenated along `axis`, read by a third conv (and, with `reread`, the
/// first conv's output also read after the Concat); x is [batch,8,8,8].
Graph two_convs_concatenated(int64_t batch, bool concat_graph_input = false, bool reread = false, int64_t side = 8) {
  Graph g;
  g.opset = 17;
  const Shape in_shape = {batch, 8, side, side};
  const int x = g.add_tensor({"x", {DType::Float32, in_shape}, std::nullopt});
  g.inputs = {x};
  auto conv = [&](const std::string &name, int input, int64_t in_channels, int64_t out_channels) {
    const Shape w_shape = {out_channels, in_channels, 1, 1};
    const int w = g.add_tensor({name + "_w", {DType::Float32, w_shape}, Tensor(DType::Float32, w_shape)});
    const int out = g.add_tensor({name, {DType::Float32, {batch, out_channels, side, side}}, std::nullopt});
    g.add_node({"Conv", name + "_conv", "", {}}, {input, w}, {out});
    return out;
  };
  const int a = conv("a", x, 8, 8);
  const int b = concat_graph_input ? x : conv("b", x, 8, 8);
  const int c = g.add_tensor({"c", {DType::Float32, {batch, 16, side, side}}, std::nullopt});
  Attributes axis;
  axis.set("axis", int64_t{1});
  g.add_node({"Concat", "concat", "", axis}, {a, b}, {c});
  const int y = conv("y", c, 16, 8);
  g.outputs = {y};
  if (reread) {
    const int z = g.add_tensor({"z", {DType::Float32, {batch, 8, side, side}}, std::nullopt});
    g.add_node({"Add", "reread", "", {}}, {y, a}, {z});
    g.outputs = {z};
  }
  return g;
}

MemoryPlanOptions every_group_writes_anywhere(const std::vector<FusedGroup> &groups) {
  return MemoryPlanOptions{std::vector<bool>(groups.size(), true)};
}

}  // namespace

TEST_CASE("a Concat of batch 1 is done in place: its inputs are computed into its output", "[memory_plan]") {
  for (bool reread : {false, true}) {
    Graph g = two_convs_concatenated(1, false, reread);
    auto groups = partition_graph(g);
    const MemoryPlan plan = plan_memory(g, groups, every_group_writes_anywhere(groups));
    INFO("reread " << reread);
    CHECK(plan.concats_in_place == 1);
    CHECK(plan.concat_in_place[2]);  // the Concat node
    const int64_t a = plan.arena_offset[g.find_tensor("a")];
    CHECK(plan.arena_offset[g.find_tensor("c")] == a);
    CHECK(plan.arena_offset[g.find_tensor("b")] == a + kBytes);
    // The Concat's bytes are all there is: a and b need none of their own.
    CHECK(plan.arena_bytes == 2 * kBytes);
    // Without the option (the executor's plan), the Concat copies.
    const MemoryPlan copying = plan_memory(g, groups);
    CHECK(copying.concats_in_place == 0);
    CHECK(copying.arena_bytes == 4 * kBytes);  // a, b and c alive at once
  }
}

TEST_CASE("a Concat stays a copy when its inputs cannot be its slices", "[memory_plan]") {
  SECTION("batch 2: each input is two runs of the output's bytes") {
    Graph g = two_convs_concatenated(2);
    auto groups = partition_graph(g);
    CHECK(plan_memory(g, groups, every_group_writes_anywhere(groups)).concats_in_place == 0);
  }
  SECTION("the second input would start off the arena's 64-byte alignment (8x3x3 floats before it)") {
    Graph g = two_convs_concatenated(1, false, false, 3);
    auto groups = partition_graph(g);
    CHECK(plan_memory(g, groups, every_group_writes_anywhere(groups)).concats_in_place == 0);
  }
  SECTION("an input is the graph's input, which the caller owns") {
    Graph g = two_convs_concatenated(1, true);
    auto groups = partition_graph(g);
    CHECK(plan_memory(g, groups, every_group_writes_anywhere(groups)).concats_in_place == 0);
  }
  SECTION("a producer that cannot write into another tensor's bytes (a host step)") {
    Graph g = two_convs_concatenated(1);
    auto groups = partition_graph(g);
    MemoryPlanOptions options = every_group_writes_anywhere(groups);
    options.writes_anywhere[0] = false;
    CHECK(plan_memory(g, groups, options).concats_in_place == 0);
  }
}
