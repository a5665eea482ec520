#include <catch2/catch.hpp>

#include "schedule/schedule_ir.h"
#include "schedule/schedule_tree.h"
#include "tests/support/schedule_selfcheck.h"

using namespace tessel;

namespace {

Schedule parse_ok(const std::string &text) {
  Result<Schedule> s = parse_schedule(text);
  INFO(text);
  if (!s) FAIL(s.error().message);
  return s.value();
}

/// The canonical schedule text of a header plus these step lines.
std::string schedule_text(const std::vector<std::string> &steps) {
  std::string text = "tessel-schedule v1\n";
  for (const std::string &s : steps) text += s + "\n";
  return text;
}

/// A schedule with every kind of step, optional fields present and absent, every tail,
/// GPU axis and memory.
Schedule every_kind_of_step() {
  Schedule s;
  // Named stages: GCC 12 warns falsely about nested temporaries inside these initializers.
  const StageRef a{"a", -1};
  const StageRef acc{"acc", -1};
  const StageRef acc_u0{"acc", 0};
  const StageRef acc_u1{"acc", 1};
  const StageRef b_u12{"b", 12};
  const StageRef conv_u0{"conv", 0};
  const StageRef out{"out", -1};
  const StageRef out_u2{"out", 2};
  const StageRef out_u3{"out", 3};
  const StageRef sum_u1{"sum", 1};
  auto add = [&s](ScheduleStep step) { s.steps.push_back(std::move(step)); };
  add(SplitStep{conv_u0, "x", "x_o", "x_i", 16, TailStrategy::RoundUp});
  add(SplitStep{out, "y", "y_o", "y_i", 4, TailStrategy::Auto});
  add(SplitStep{a, "y", "y_o", "y_i", 3, TailStrategy::Guard});
  add(SplitStep{b_u12, "r$x", "ro", "ri", 7, TailStrategy::ShiftInwards});
  add(ReorderStep{out, {"x_i", "y_i", "x_o", "y_o"}});
  add(FuseStep{out, "x_o", "y_o", "tile"});
  add(TileStep{acc_u1, "x", "y", "xo", "yo", "xi", "yi", 32, 8, TailStrategy::Guard});
  add(VectorizeStep{out, "x_i", 16});
  add(VectorizeStep{out, "x_i", std::nullopt});
  add(UnrollStep{acc, "y", 4});
  add(UnrollStep{acc, "y", std::nullopt});
  add(ParallelStep{out, "tile", 8});
  add(ParallelStep{out, "tile", std::nullopt});
  add(BindStep{out, "x_o", GpuAxis::Block, 0});
  add(BindStep{out, "x_i", GpuAxis::Thread, 1});
  add(BindStep{out_u2, "l", GpuAxis::Lane, 2});
  add(ComputeAtStep{"acc", out, "tile"});
  add(ComputeAtStep{"pad", conv_u0, "y"});
  add(StoreAtStep{"acc", out_u3, "y_o"});
  add(ComputeInlineStep{"relu"});
  add(ComputeRootStep{"pad"});
  add(StoreInStep{"acc", MemoryKind::Register});
  add(StoreInStep{"acc", MemoryKind::Stack});
  add(StoreInStep{"acc", MemoryKind::Heap});
  add(StoreInStep{"acc", MemoryKind::GpuShared});
  add(RfactorStep{acc_u0, "acc_part", {{"k$x", "u"}}});
  add(RfactorStep{sum_u1, "sum_part", {{"r$x", "u"}, {"r$y", "v"}}});
  add(CacheInputsStep{acc_u0, "k_o"});
  add(CacheInputsStep{acc_u0, "k_o", 4});
  add(CacheInputsStep{acc_u0, "k_o", 1, 4});
  return s;
}

const char *const kEveryKindText = R"(tessel-schedule v1
split conv.u0 x x_o x_i 16 round_up
split out y y_o y_i 4 auto
split a y y_o y_i 3 guard
split b.u12 r$x ro ri 7 shift_inwards
reorder out x_i y_i x_o y_o
fuse out x_o y_o tile
tile acc.u1 x y xo yo xi yi 32 8 guard
vectorize out x_i 16
vectorize out x_i
unroll acc y 4
unroll acc y
parallel out tile 8
parallel out tile
bind out x_o gpu_block 0
bind out x_i gpu_thread 1
bind out.u2 l gpu_lane 2
compute_at acc out tile
compute_at pad conv.u0 y
store_at acc out.u3 y_o
compute_inline relu
compute_root pad
store_in acc register
store_in acc stack
store_in acc heap
store_in acc gpu_shared
rfactor acc.u0 acc_part k$x:u
rfactor sum.u1 sum_part r$x:u r$y:v
cache_inputs acc.u0 k_o
cache_inputs acc.u0 k_o 4
cache_inputs acc.u0 k_o 1 4
)";

/// The tiled matmul schedule of DESIGN.md's hand schedule: 32x8 tiles of out run in
/// parallel, vectorized 16 wide; acc lives in the tile, its update has k outermost and the
/// 2 x 8 vectors of the tile unrolled inside.
const std::vector<std::string> kTiledMatmul = {
    "tile out j i j_o i_o j_i i_i 32 8 auto",
    "fuse out j_o i_o tile",
    "parallel out tile",
    "vectorize out j_i 16",
    "compute_at acc out tile",
    "vectorize acc j 16",
    "unroll acc i",
    "split acc.u0 j j_o j_v 16 auto",
    "reorder acc.u0 j_v j_o i k$x",
    "vectorize acc.u0 j_v",
    "unroll acc.u0 j_o",
    "unroll acc.u0 i",
};

/// A 3x3 convolution over a padded input, then a ReLU output:
///   pad(x, y, ci) -> conv(x, y, co) [pure init; update over r$x, r$y, r$z reads pad] -> relu.
ComputeDesc conv_desc() {
  const int64_t W = 56, H = 56, C = 64, K = 64;
  FuncDesc pad;
  pad.name = "pad";
  pad.pure_axes = {{"x", W + 2}, {"y", H + 2}, {"ci", C}};
  pad.stages = {StageDesc{-1, pad.pure_axes, {}}};
  pad.consumers = {"conv"};
  FuncDesc conv;
  conv.name = "conv";
  conv.pure_axes = {{"x", W}, {"y", H}, {"co", K}};
  conv.stages = {StageDesc{-1, conv.pure_axes, {}},
                 StageDesc{0, {{"r$x", 3, true}, {"r$y", 3, true}, {"r$z", C, true}, {"x", W}, {"y", H}, {"co", K}},
                           {"pad"}}};
  conv.consumers = {"relu"};
  conv.inlinable = false;
  FuncDesc relu;
  relu.name = "relu";
  relu.pure_axes = conv.pure_axes;
  relu.stages = {StageDesc{-1, relu.pure_axes, {"conv"}}};
  relu.is_output = true;
  return ComputeDesc{{pad, conv, relu}};
}

/// The tree's nodes of one kind, in depth-first order.
std::vector<const ScheduleNode *> nodes_of(const ScheduleTree &tree, ScheduleNodeKind kind) {
  std::vector<const ScheduleNode *> found;
  std::vector<int> todo{0};
  while (!todo.empty()) {
    int n = todo.back();
    todo.pop_back();
    if (tree.nodes[n].kind == kind) found.push_back(&tree.nodes[n]);
    for (auto it = tree.nodes[n].children.rbegin(); it != tree.nodes[n].children.rend(); ++it) todo.push_back(*it);
  }
  return found;
}

const ScheduleNode &loop_node(const ScheduleTree &tree, const std::string &func, int update, const std::string &var) {
  for (const ScheduleNode *n : nodes_of(tree, ScheduleNodeKind::Loop))
    if (n->func == func && n->update == update && n->var == var) return *n;
  FAIL("no loop " << func << "." << update << "." << var << " in\n" << tree.to_text());
  throw;
}

const ScheduleNode &compute_node(const ScheduleTree &tree, const std::string &func, int update) {
  for (const ScheduleNode *n : nodes_of(tree, ScheduleNodeKind::Compute))
    if (n->func == func && n->update == update) return *n;
  FAIL("no compute node " << func << "." << update << " in\n" << tree.to_text());
  throw;
}

/// The error validate_and_replay gives for these steps over `desc`.
std::string replay_error(const ComputeDesc &desc, const std::vector<std::string> &steps) {
  Result<ScheduleTree> tree = validate_and_replay(desc, parse_ok(schedule_text(steps)));
  if (tree) FAIL("expected an error, got the tree\n" << tree->to_text());
  return tree.error().message;
}

ScheduleTree replay_ok(const ComputeDesc &desc, const std::vector<std::string> &steps) {
  Result<ScheduleTree> tree = validate_and_replay(desc, parse_ok(schedule_text(steps)));
  if (!tree) FAIL(tree.error().message);
  return tree.value();
}

}  // namespace

// ---- text ----

TEST_CASE("schedule text round-trips every kind of step", "[schedule]") {
  const Schedule s = every_kind_of_step();
  CHECK(to_text(s) == kEveryKindText);
  CHECK(parse_ok(to_text(s)) == s);
  CHECK(to_text(parse_ok(kEveryKindText)) == kEveryKindText);
  const std::string tiled = schedule_text(kTiledMatmul);
  CHECK(to_text(parse_ok(tiled)) == tiled);
  // Each step on its own line too.
  for (const ScheduleStep &step : s.steps) {
    Result<ScheduleStep> back = parse_step(to_text(step));
    REQUIRE(back);
    CHECK(back.value() == step);
  }
}

TEST_CASE("schedule text: comments, blank lines and spacing are not canonical but parse", "[schedule]") {
  const Schedule s = parse_ok("tessel-schedule v1\r\n# tiles\n\n  split   out x  x_o x_i 8 guard\r\nunroll out x_i\n");
  CHECK(to_text(s) == "tessel-schedule v1\nsplit out x x_o x_i 8 guard\nunroll out x_i\n");
  CHECK(to_text(parse_ok("tessel-schedule v1")) == "tessel-schedule v1\n");
  CHECK(Schedule{} != s);
}

TEST_CASE("schedule parse errors name the line and what is wrong", "[schedule]") {
  struct Case {
    std::string text, expected;
  };
  const std::string v1 = "tessel-schedule v1\n";
  const std::vector<Case> cases = {
      {"", "line 1: empty text"},
      {"split out x a b 4 auto\n", "line 1: expected the version line"},
      {"tessel-schedule v2\n", "line 1: unsupported schedule version '2'"},
      {v1 + "split out x x_o x_i 16\n", "line 2: split takes split STAGE VAR OUTER INNER FACTOR TAIL (got 5"},
      {v1 + "unroll out x\n\n# fine so far\nfrobnicate out x\n", "line 5: unknown step 'frobnicate'"},
      {v1 + "split out x x_o x_i sixteen auto\n", "line 2: split: factor 'sixteen' is not an integer"},
      {v1 + "split out x x_o x_i 99999999999999999999 auto\n", "factor '99999999999999999999' is not an integer"},
      {v1 + "split out x x_o x_i 16 sideways\n", "tail strategy 'sideways' is not auto, guard, shift_inwards or round_up"},
      {v1 + "vectorize out.u x\n", "stage 'out.u' is not FUNC or FUNC.uK"},
      {v1 + "vectorize out.x1 x\n", "stage 'out.x1' is not FUNC or FUNC.uK"},
      {v1 + "vectorize out.u01 x\n", "stage 'out.u01' is not FUNC or FUNC.uK"},
      {v1 + "vectorize out x 16 32\n", "vectorize takes vectorize STAGE VAR [WIDTH]"},
      {v1 + "vectorize out 9x\n", "var '9x' is not a valid name"},
      {v1 + "reorder out x\n", "reorder takes reorder STAGE VAR VAR..."},
      {v1 + "bind out x gpu_block 3\n", "GPU index 3 is not 0, 1 or 2"},
      {v1 + "bind out x gpu_warp 0\n", "GPU axis 'gpu_warp' is not gpu_block, gpu_thread or gpu_lane"},
      {v1 + "store_in acc disk\n", "memory 'disk' is not register, stack, heap or gpu_shared"},
      {v1 + "rfactor acc.u0 part k\n", "'k' is not RVAR:VAR"},
      {v1 + "cache_inputs acc.u0 k_o 0\n", "warps 0 is not in 1..32"},
      {v1 + "cache_inputs acc.u0 k_o 1 3\n", "load vector 3 is not 1, 2 or 4"},
      {v1 + "cache_inputs acc.u0 k_o 1 4 2\n", "cache_inputs takes cache_inputs STAGE VAR [WARPS [VECTOR]]"},
      {v1 + "rfactor acc.u0 part k:\n", "'k:' is not RVAR:VAR with valid names"},
      {v1 + "compute_at acc out.u0\n", "compute_at takes compute_at FUNC CONSUMER_STAGE VAR"},
      {v1 + "split out x x-o x_i 4 auto\n", "outer var 'x-o' is not a valid name"},
  };
  for (const Case &c : cases) {
    INFO(c.text);
    Result<Schedule> s = parse_schedule(c.text);
    REQUIRE_FALSE(s);
    CHECK_THAT(s.error().message, Catch::Contains(c.expected));
  }
}

TEST_CASE("schedule hash is FNV-1a 64 of the canonical text", "[schedule]") {
  const Schedule s = parse_ok(schedule_text(kTiledMatmul));
  const std::string hash = schedule_hash(s);
  CHECK(hash.size() == 16);
  CHECK(hash.find_first_not_of("0123456789abcdef") == std::string::npos);
  // Golden value on purpose: tuning records are keyed by this hash, so any change of the
  // canonical text or of the hash function must fail here (and bump the schedule version).
  CHECK(hash == "b8389dad77cddd83");
  CHECK(schedule_hash(Schedule{}) == "3ba14281360fc170");
  // The same steps give the same hash however the text was spaced; one factor changes it.
  CHECK(schedule_hash(parse_ok("tessel-schedule v1\n# c\n" + schedule_text(kTiledMatmul).substr(19))) == hash);
  Schedule other = s;
  std::get<TileStep>(other.steps[0]).y_factor = 16;
  CHECK(schedule_hash(other) != hash);
}

// ---- replay and the tree ----

TEST_CASE("replay of a tiled matmul builds the expected tree", "[schedule]") {
  const ScheduleTree tree = replay_ok(matmul_compute_desc(256, 256, 1024), kTiledMatmul);
  const std::string expected = R"(parallel for out.tile in 0..256
  realize acc [32x8 f32, 1 KiB, auto]
  unrolled for acc.i in 0..8
    for acc.j in 0..2
      vectorized for acc.j_vec in 0..16
        compute acc (65536 points)
  for acc.u0.k$x in 0..1024
    unrolled for acc.u0.i in 0..8
      unrolled for acc.u0.j_o in 0..2
        vectorized for acc.u0.j_v in 0..16
          compute acc.u0 (67108864 points)
  for out.i_i in 0..8
    for out.j_i in 0..2
      vectorized for out.j_i_vec in 0..16
        compute out (65536 points)
)";
  CHECK(tree.to_text() == expected);

  // The same as data.
  const ScheduleNode &tile = loop_node(tree, "out", -1, "tile");
  CHECK(tile.extent == 256);
  CHECK(tile.loop_kind == LoopKind::Parallel);
  CHECK(tile.depth == 0);
  const ScheduleNode &k = loop_node(tree, "acc", 0, "k$x");
  CHECK(k.reduction);
  CHECK(k.depth == 1);
  CHECK(k.extent == 1024);
  const ScheduleNode &jv = loop_node(tree, "acc", 0, "j_v");
  CHECK(jv.loop_kind == LoopKind::Vectorized);
  CHECK(jv.depth == 4);
  CHECK(loop_node(tree, "acc", 0, "i").loop_kind == LoopKind::Unrolled);
  CHECK(compute_node(tree, "acc", 0).executions == 256LL * 256 * 1024);
  CHECK(compute_node(tree, "acc", 0).depth == 5);
  CHECK(compute_node(tree, "out", -1).executions == 256 * 256);
  const std::vector<const ScheduleNode *> realizes = nodes_of(tree, ScheduleNodeKind::Realize);
  REQUIRE(realizes.size() == 1);
  CHECK(realizes[0]->func == "acc");
  CHECK(realizes[0]->region == std::vector<int64_t>{32, 8});
  CHECK(realizes[0]->bytes == 32 * 8 * 4);
  CHECK(realizes[0]->depth == 1);
  CHECK_FALSE(realizes[0]->memory.has_value());
  // acc's realize node is the first child of the tile loop, before acc's loops and out's.
  REQUIRE(tree.root().children.size() == 1);
  CHECK(tree.nodes[tile.children.at(0)].kind == ScheduleNodeKind::Realize);
}

TEST_CASE("replay without steps: updates at root, outputs at root", "[schedule]") {
  const ScheduleTree tree = replay_ok(matmul_compute_desc(64, 32, 16), {});
  CHECK(tree.to_text() == R"(realize acc [32x64 f32, 8 KiB, auto]
for acc.i in 0..64
  for acc.j in 0..32
    compute acc (2048 points)
for acc.u0.i in 0..64
  for acc.u0.j in 0..32
    for acc.u0.k$x in 0..16
      compute acc.u0 (32768 points)
for out.i in 0..64
  for out.j in 0..32
    compute out (2048 points)
)");
}

TEST_CASE("replay of a conv: pad inlined by default, then computed per row of the update", "[schedule]") {
  const ComputeDesc conv = conv_desc();
  // Default: pad is inlined into the stage that reads it.
  const ScheduleTree plain = replay_ok(conv, {});
  CHECK(compute_node(plain, "conv", 0).inlined == std::vector<std::string>{"pad"});
  CHECK(compute_node(plain, "conv", -1).inlined.empty());
  CHECK_THAT(plain.to_text(), Catch::Contains("compute conv.u0 (115605504 points, inlines pad)"));

  // Hand schedule: conv per output row of relu, x vectorized 16 with the edge rounded up,
  // 4 output channels unrolled; pad computed per row of conv's update.
  const ScheduleTree tree = replay_ok(
      conv, {"split relu co co_o co_i 4 auto", "reorder relu x co_i y co_o", "parallel relu co_o",
             "vectorize relu x 16", "compute_at conv relu y", "split conv.u0 x x_o x_v 16 round_up",
             "split conv.u0 co co_o co_i 4 auto", "reorder conv.u0 x_v co_i x_o r$x r$y r$z y co_o",
             "vectorize conv.u0 x_v", "unroll conv.u0 co_i", "compute_at pad conv.u0 y", "store_in pad stack"});
  INFO(tree.to_text());
  // relu: co_o (16, parallel) > y (56) > [conv] > co_i > x (4) > x_vec (16).
  const ScheduleNode &co_o = loop_node(tree, "relu", -1, "co_o");
  CHECK(co_o.extent == 16);
  CHECK(co_o.loop_kind == LoopKind::Parallel);
  CHECK(co_o.depth == 0);
  CHECK(loop_node(tree, "relu", -1, "x").extent == 4);
  CHECK(loop_node(tree, "relu", -1, "x_vec").loop_kind == LoopKind::Vectorized);
  // conv at relu's y: one row of 56 x 4 channels per iteration.
  const ScheduleNode &cy = loop_node(tree, "conv", 0, "y");
  CHECK(cy.extent == 1);
  CHECK(cy.depth == 3);
  CHECK(loop_node(tree, "conv", 0, "co_o").extent == 1);
  CHECK(loop_node(tree, "conv", 0, "co_i").loop_kind == LoopKind::Unrolled);
  CHECK(loop_node(tree, "conv", 0, "x_o").extent == 4);
  CHECK(loop_node(tree, "conv", 0, "x_v").extent == 16);
  CHECK(loop_node(tree, "conv", 0, "r$z").extent == 64);
  CHECK(loop_node(tree, "conv", -1, "x").extent == 56);
  // pad: computed inside conv.u0's y loop, below relu; one row of conv's x, all channels.
  const ScheduleNode &pad_compute = compute_node(tree, "pad", -1);
  CHECK(pad_compute.depth == 7);
  const std::vector<const ScheduleNode *> realizes = nodes_of(tree, ScheduleNodeKind::Realize);
  REQUIRE(realizes.size() == 2);
  CHECK(realizes[0]->func == "conv");
  CHECK(realizes[0]->region == std::vector<int64_t>{56, 1, 4});
  CHECK(realizes[1]->func == "pad");
  CHECK(realizes[1]->region == std::vector<int64_t>{56, 1, 64});
  CHECK(realizes[1]->memory == MemoryKind::Stack);
  CHECK(realizes[1]->depth == 4);
  CHECK_THAT(tree.to_text(), Catch::Contains("realize pad [56x1x64 f32, 14 KiB, stack]"));
  CHECK(compute_node(tree, "conv", 0).executions == 16LL * 56 * 4 * 64 * 3 * 3 * 4 * 16);
}

TEST_CASE("replay: without stage reads every stage of a consumer counts as a reader", "[schedule]") {
  ComputeDesc conv = conv_desc();
  for (FuncDesc &f : conv.funcs)
    for (StageDesc &st : f.stages) st.reads.clear();
  // conv's pure stage might read pad too, and it does not run inside conv.u0's loops.
  CHECK_THAT(replay_error(conv, {"compute_at pad conv.u0 y"}),
             Catch::Contains("'pad' is also read by stage conv, which does not run inside loop conv.u0.y"));
  // Inlined, pad shows up in both stages of conv.
  const ScheduleTree tree = replay_ok(conv, {});
  CHECK(compute_node(tree, "conv", -1).inlined == std::vector<std::string>{"pad"});
  CHECK(compute_node(tree, "conv", 0).inlined == std::vector<std::string>{"pad"});
}

TEST_CASE("replay of rfactor makes a new func and frees its var for parallel and vectorize", "[schedule]") {
  const ScheduleTree tree = replay_ok(
      matmul_compute_desc(64, 64, 1024),
      {"split acc.u0 k$x k_o k_i 128 auto", "rfactor acc.u0 acc_part k_o:u", "parallel acc_part.u0 u",
       "vectorize acc_part.u0 j 16", "vectorize acc_part j 16"});
  INFO(tree.to_text());
  const ScheduleNode &u = loop_node(tree, "acc_part", 0, "u");
  CHECK(u.extent == 8);
  CHECK(u.loop_kind == LoopKind::Parallel);
  CHECK_FALSE(u.reduction);
  CHECK(loop_node(tree, "acc_part", 0, "k_i").extent == 128);
  CHECK(loop_node(tree, "acc_part", -1, "u").extent == 8);
  // acc now folds 8 partial sums per element.
  CHECK(loop_node(tree, "acc", 0, "k_o").extent == 8);
  CHECK(loop_node(tree, "acc", 0, "k_o").reduction);
  CHECK(compute_node(tree, "acc", 0).executions == 64 * 64 * 8);
  const std::vector<const ScheduleNode *> realizes = nodes_of(tree, ScheduleNodeKind::Realize);
  REQUIRE(realizes.size() == 2);
  CHECK(realizes[0]->func == "acc_part");  // before its consumer
  CHECK(realizes[0]->region == std::vector<int64_t>{64, 64, 8});
}

TEST_CASE("replay rejects every kind of invalid step with its line and reason", "[schedule]") {
  const ComputeDesc mm = matmul_compute_desc(256, 256, 1024);
  const ComputeDesc conv = conv_desc();
  struct Case {
    const ComputeDesc &desc;
    std::vector<std::string> steps;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {mm, {"split nope j a b 4 auto"}, "line 2 (split nope j a b 4 auto): unknown func 'nope'"},
      {mm, {"unroll out i", "split acc.u3 j a b 4 auto"}, "line 3 (split acc.u3 j a b 4 auto): func 'acc' has no update 3"},
      {mm, {"split out z a b 4 auto"}, "stage out has no loop 'z' (loops, innermost first: j, i)"},
      {mm, {"split out j a b 0 auto"}, "split factor 0 is < 1"},
      {mm, {"unroll out j -2"}, "split factor -2 is < 1"},
      {mm, {"vectorize acc.u0 k$x"}, "vectorizing reduction var 'k$x' may race"},
      {mm, {"vectorize acc.u0 k$x 8"}, "vectorizing reduction var 'k$x' may race"},
      {mm, {"parallel acc.u0 k$x"}, "running reduction var 'k$x' in parallel may race"},
      {mm, {"split acc.u0 k$x k_o k_i 4 auto", "parallel acc.u0 k_o"}, "running reduction var 'k_o' in parallel"},
      {mm, {"bind acc.u0 k$x gpu_block 0"}, "binding reduction var 'k$x' to GPU gpu_block may race"},
      {mm, {"compute_inline acc"}, "'acc' has update definitions and cannot be inlined"},
      {mm, {"compute_inline out"}, "output 'out' cannot be inlined"},
      {mm, {"compute_at out acc j"}, "output 'out' is always computed and stored at root"},
      {conv, {"compute_at conv pad x"}, "'pad' does not read 'conv', directly or through other funcs"},
      {mm, {"compute_at acc acc.u0 j"}, "compute_at of 'acc' at its own loop"},
      {mm, {"compute_at acc out nope"}, "line 2 (compute_at acc out nope): compute_at: stage out has no loop 'nope' after all steps"},
      {mm, {"compute_at acc out j", "split out j j_o j_i 16 auto"}, "line 2 (compute_at acc out j): compute_at: stage out has no loop 'j'"},
      {mm, {"reorder out j i j"}, "reorder lists 'j' twice"},
      {mm, {"vectorize out j 128"}, "vectorize width 128 of 'j' is larger than 64 lanes"},
      {mm, {"vectorize out j"}, "line 2 (vectorize out j): out: vectorized loop 'j' has 256 lanes where it is computed"},
      {mm, {"split out j a a 4 auto"}, "split makes two loops named 'a'"},
      {mm, {"split out j i j_i 4 auto"}, "var name 'i' is already used in stage out"},
      {mm, {"split out j j_o j_i 4 auto", "split out i j_o q 4 auto"}, "line 3 (split out i j_o q 4 auto): var name 'j_o' is already used"},
      {mm, {"tile out j i t t j_i i_i 4 4 auto"}, "var name 't' is already used"},
      {mm, {"vectorize out j 16", "vectorize out j 2"}, "var name 'j_vec' is already used"},
      {mm, {"fuse out j i i"}, "var name 'i' is already used"},
      {mm, {"fuse acc.u0 k$x j kj", "vectorize acc.u0 kj 8"}, "vectorizing reduction var 'kj' may race"},
      {mm, {"fuse out j j jj"}, "fuse of 'j' with itself"},
      {mm, {"tile out j j a b c d 4 4 auto"}, "tile of 'j' with itself"},
      {mm, {"split acc.u0 j a b 4 shift_inwards"}, "shift_inwards is not legal in an update definition"},
      {mm, {"split acc.u0 k$x a b 3 round_up"}, "round_up on reduction var 'k$x' would change the reduction"},
      {mm, {"split out j a b 48 round_up"}, "rounds up past the output's end"},
      {mm, {"split out j a b 512 auto"}, "shifts inwards past the output's start"},
      {mm, {"vectorize out j 16", "split out j_vec a b 4 auto"}, "loop 'j_vec' is already vectorized"},
      {mm, {"unroll out j 4", "unroll out j_unroll"}, "loop 'j_unroll' is already unrolled"},
      {mm, {"rfactor acc part k$x:u"}, "rfactor needs an update stage (FUNC.uK), got 'acc'"},
      {mm, {"rfactor acc.u0 part j:u"}, "rfactor of 'j', which is not a reduction var"},
      {mm, {"rfactor acc.u0 out k$x:u"}, "func 'out' already exists"},
      {mm, {"rfactor acc.u0 part k$x:i"}, "rfactor's new var 'i' is already used in acc.u0"},
      {mm, {"split acc.u0 k$x k_o k_i 4 auto", "rfactor acc.u0 part k_o:u k_i:u"}, "rfactor names new var 'u' twice"},
      {mm, {"split acc.u0 j j_o j_i 4 auto", "rfactor acc.u0 part k$x:u"}, "rfactor after splitting, fusing or annotating pure loops"},
      {mm, {"store_in out stack"}, "output 'out' lives in the caller's buffer"},
      {conv, {"store_in pad stack"}, "line 2 (store_in pad stack): store_in: 'pad' is inlined, so it has no storage"},
      {conv, {"store_at pad conv.u0 y"}, "store_at: 'pad' is inlined, so it has no storage to place"},
      // pad is read by conv's update only, which is not inside conv's pure stage.
      {conv, {"compute_at pad conv y"}, "compute_at: 'pad' is also read by stage conv.u0, which does not run inside loop conv.y"},
      {conv, {"compute_at pad relu y"}, "compute_at: 'pad' is also read by stage conv.u0, which does not run inside loop relu.y"},
      {mm, {"split out j j_o j_i 32 auto", "compute_at acc out j_o", "store_at acc out j_i"}, "store_at: 'acc' is computed at loop out.j_o, which is not inside its storage loop out.j_i"},
      {mm, {"store_at acc out i"}, "store_at: 'acc' is computed at root, which is not inside its storage loop out.i"},
      {mm, {"parallel out j", "compute_at acc out j", "store_at acc out i"}, "store_at: 'acc' is stored outside parallel loop 'j' but computed inside it (a race)"},
      {mm, {"split out j j_o j_i 16 auto", "bind out j_i gpu_thread 0", "bind out j_o gpu_thread 0"}, "line 4 (bind out j_o gpu_thread 0): out: gpu_thread loop 'j_o' has index 0 but Halide numbers gpu_thread loops 0, 1, 2 from the innermost outward, so it would be 1"},
      {mm, {"bind out j gpu_block 0", "bind out i gpu_thread 0"}, "line 2 (bind out j gpu_block 0): out: gpu_block loop 'j' must be outside the loops bound to finer GPU levels"},
      {mm, {"split out j j_o j_i 16 auto", "bind out j_o gpu_thread 0", "bind out j_i gpu_block 0"}, "gpu_block loop 'j_i' must be outside the loops bound to finer GPU levels"},
      {mm, {"bind out j gpu_thread 0", "bind out i gpu_thread 1"}, "GPU threads per block reach 65536 at loop 'i' (at most 1024)"},
      {mm, {"bind out j gpu_lane 0"}, "gpu_lane loop 'j' has extent 256 > 32 (one warp)"},
  };
  for (const Case &c : cases) {
    INFO(schedule_text(c.steps));
    CHECK_THAT(replay_error(c.desc, c.steps), Catch::Contains(c.expected));
  }
}

TEST_CASE("replay rejects inconsistent compute descs and schedule versions", "[schedule]") {
  ComputeDesc twice = matmul_compute_desc(8, 8, 8);
  twice.funcs.push_back(twice.funcs[0]);
  Result<ScheduleTree> tree = validate_and_replay(twice, Schedule{});
  REQUIRE_FALSE(tree);
  CHECK_THAT(tree.error().message, Catch::Contains("func 'acc' appears twice"));

  ComputeDesc unknown = matmul_compute_desc(8, 8, 8);
  unknown.funcs[1].consumers = {"ghost"};
  tree = validate_and_replay(unknown, Schedule{});
  REQUIRE_FALSE(tree);
  CHECK_THAT(tree.error().message, Catch::Contains("'out' lists unknown consumer 'ghost'"));

  Schedule v2;
  v2.version = 2;
  tree = validate_and_replay(matmul_compute_desc(8, 8, 8), v2);
  REQUIRE_FALSE(tree);
  CHECK_THAT(tree.error().message, Catch::Contains("version 2 is not supported"));
}

TEST_CASE("replay accepts legal placements and GPU binding", "[schedule]") {
  const ComputeDesc mm = matmul_compute_desc(256, 256, 1024);
  // store outside the compute loop, neither parallel.
  ScheduleTree tree = replay_ok(mm, {"split out j j_o j_i 32 auto", "compute_at acc out j_o", "store_at acc out i"});
  const std::vector<const ScheduleNode *> realizes = nodes_of(tree, ScheduleNodeKind::Realize);
  REQUIRE(realizes.size() == 1);
  CHECK(realizes[0]->depth == 1);
  CHECK(realizes[0]->region == std::vector<int64_t>{256, 1});
  // GPU: blocks over tiles, threads inside, indices from the innermost outward.
  tree = replay_ok(mm, {"tile out j i j_o i_o j_i i_i 16 16 auto", "bind out j_o gpu_block 0", "bind out i_o gpu_block 1",
                        "bind out j_i gpu_thread 0", "bind out i_i gpu_thread 1", "compute_at acc out j_o",
                        "store_in acc gpu_shared"});
  CHECK(loop_node(tree, "out", -1, "i_o").gpu_index == 1);
  CHECK(loop_node(tree, "out", -1, "i_o").loop_kind == LoopKind::GpuBlock);
  CHECK_THAT(tree.to_text(), Catch::Contains("gpu_block.y for out.i_o in 0..16"));
  CHECK_THAT(tree.to_text(), Catch::Contains("gpu_thread.x for out.j_i in 0..16"));
  CHECK_THAT(tree.to_text(), Catch::Contains("realize acc [16x16 f32, 1 KiB, gpu_shared]"));
}

// ---- applying onto Halide ----

TEST_CASE("apply: a tiled matmul schedule runs and matches the naive product", "[schedule]") {
  const Schedule s = parse_ok(schedule_text(kTiledMatmul));
  REQUIRE(validate_and_replay(matmul_compute_desc(128, 96, 64), s));
  Result<std::string> nest = lower_matmul_with_schedule(128, 96, 64, s);
  if (!nest) FAIL(nest.error().message);
  INFO(nest.value());
  CHECK_THAT(nest.value(), Catch::Contains("parallel"));
  CHECK_THAT(nest.value(), Catch::Contains("vectorized"));
  CHECK_THAT(nest.value(), Catch::Contains("unrolled"));
  CHECK_THAT(nest.value(), Catch::Contains("j.j_i.j_i_vec"));
}

TEST_CASE("apply: sizes that tiles do not divide, the default schedule and rfactor", "[schedule]") {
  const std::vector<std::vector<std::string>> schedules = {
      {},
      {"tile out j i j_o i_o j_i i_i 32 8 auto", "parallel out i_o", "compute_at acc out j_o", "vectorize acc j 8",
       "split acc.u0 k$x k_o k_i 4 guard", "reorder acc.u0 j k_i i k_o", "vectorize acc.u0 j 8", "unroll acc.u0 k_i"},
      {"split acc.u0 k$x k_o k_i 8 auto", "rfactor acc.u0 acc_part k_o:u", "parallel acc_part.u0 u",
       "vectorize acc_part.u0 j 8", "compute_root acc_part"},
      {"fuse out j i ji", "parallel out ji 64", "split acc.u0 i i_o i_i 2 round_up", "unroll acc.u0 i_i"},
      {"fuse acc.u0 k$x j kj", "reorder acc.u0 i kj"},
  };
  // Producers compute whole tiles, and a vectorized update var rounds up (Halide's auto tail
  // there): tiles of out shift inwards and n = 72 is a multiple of 8, because reading the
  // input matrices past their end is something only Halide's bounds checks see.
  for (const auto &steps : schedules) {
    const Schedule s = parse_ok(schedule_text(steps));
    INFO(to_text(s));
    CHECK(validate_and_replay(matmul_compute_desc(50, 72, 33), s));
    Result<std::string> nest = lower_matmul_with_schedule(50, 72, 33, s);
    if (!nest) FAIL(nest.error().message);
  }
}

TEST_CASE("apply: invalid schedules are Errors from both the replay and Halide", "[schedule]") {
  struct Case {
    std::vector<std::string> steps;
    std::string apply_error;  // what apply_schedule (or lowering) says
  };
  const std::vector<Case> cases = {
      {{"split out z a b 4 auto"}, "line 2 (split out z a b 4 auto): stage out has no loop 'z'"},
      {{"unroll out i", "split acc.u2 j a b 4 auto"}, "line 3 (split acc.u2 j a b 4 auto): func 'acc' has no update 2"},
      {{"split out j a b 0 auto"}, "factor 0 is out of range"},
      {{"vectorize acc.u0 k$x"}, "line 2 (vectorize acc.u0 k$x): Halide: "},
      {{"parallel acc.u0 k$x"}, "Halide: In schedule for "},
      {{"reorder out j i j"}, "Halide: In schedule for "},
      {{"split acc.u0 j a b 4 shift_inwards"}, "Halide: When splitting Var j ShiftInwards is not a legal tail strategy"},
      {{"compute_inline acc"}, "'acc' has update definitions and cannot be inlined"},
      {{"compute_at acc out nope"}, "line 2 (compute_at acc out nope): stage out has no loop 'nope' after all steps"},
      {{"rfactor acc.u0 out k$x:u"}, "func 'out' already exists"},
      // Only lowering finds this one: Halide reports it as an Error, not a crash.
      {{"split out j j_o j_i 32 auto", "compute_at acc out j_o", "store_at acc out j_i"}, "Halide: "},
  };
  for (const Case &c : cases) {
    const Schedule s = parse_ok(schedule_text(c.steps));
    INFO(to_text(s));
    CHECK_FALSE(validate_and_replay(matmul_compute_desc(64, 64, 16), s));
    Result<std::string> nest = lower_matmul_with_schedule(64, 64, 16, s);
    REQUIRE_FALSE(nest);
    CHECK_THAT(nest.error().message, Catch::Contains(c.apply_error));
  }
}
