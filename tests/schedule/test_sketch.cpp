// Sketch rules, the sampler and mutation: every sampled or mutated schedule must replay and
// stay inside its Funcs' regions, and (matmul, conv) compute the right numbers in Halide.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "schedule/schedule_tree.h"
#include "search/cpu/mutation.h"
#include "search/cpu/sampler.h"
#include "search/cpu/sketch.h"
#include "search/cpu/unrolled_body.h"
#include "search/cpu/sketch_schedule.h"
#include "search/exact_cover.h"
#include "tests/support/schedule_selfcheck.h"
#include "tests/support/schedule_selfcheck_conv.h"

using namespace tessel;

namespace {

const CpuTargetDesc kTarget = avx512_target(2);

AxisDesc pure(const std::string &name, int64_t extent) { return AxisDesc{name, extent, false}; }
AxisDesc rvar(const std::string &name, int64_t extent) { return AxisDesc{name, extent, true}; }

/// A convolution as the lead builds it: pad (inlinable) -> acc (anchor, init + update over
/// the given rvars then x, y, c, n) -> out (epilogue, output).
ComputeDesc conv_desc(int64_t out_w, int64_t out_h, int64_t out_c, int64_t in_w, int64_t in_h, int64_t in_c,
                      const std::vector<AxisDesc> &rvars) {
  const std::vector<AxisDesc> axes = {pure("x", out_w), pure("y", out_h), pure("c", out_c), pure("n", 1)};
  FuncDesc pad;
  pad.name = "pad";
  pad.pure_axes = {pure("x", in_w), pure("y", in_h), pure("c", in_c), pure("n", 1)};
  pad.stages = {StageDesc{-1, pad.pure_axes, {}}};
  pad.consumers = {"acc"};
  FuncDesc acc;
  acc.name = "acc";
  acc.pure_axes = axes;
  std::vector<AxisDesc> update = rvars;
  update.insert(update.end(), axes.begin(), axes.end());
  acc.stages = {StageDesc{-1, axes, {}}, StageDesc{0, update, {"pad"}}};
  acc.consumers = {"out"};
  acc.inlinable = false;
  FuncDesc out;
  out.name = "out";
  out.pure_axes = axes;
  out.stages = {StageDesc{-1, axes, {"acc"}}};
  out.is_output = true;
  return ComputeDesc{{pad, acc, out}};
}

ComputeDesc conv3x3_desc() {
  return conv_desc(56, 56, 64, 58, 58, 64, {rvar("kx", 3), rvar("ky", 3), rvar("ic", 64)});
}
ComputeDesc conv1x1_desc() { return conv_desc(56, 56, 64, 56, 56, 64, {rvar("ic", 64)}); }
ComputeDesc strided_conv_desc() {
  return conv_desc(28, 28, 128, 58, 58, 64, {rvar("kx", 3), rvar("ky", 3), rvar("ic", 64)});
}
ComputeDesc depthwise_conv_desc() { return conv_desc(56, 56, 64, 58, 58, 64, {rvar("kx", 3), rvar("ky", 3)}); }

/// conv_desc's 3x3 convolution over a weight blocked by 16 output channels (compute_conv.cpp):
/// the accumulator's axes are c_lane (16), x, y, c_block, n.
ComputeDesc blocked_conv_desc(int64_t width = 14, int64_t channels = 64) {
  ComputeDesc desc = conv_desc(width, width, channels, width + 2, width + 2, 64,
                               {rvar("kx", 3), rvar("ky", 3), rvar("ic", 64)});
  FuncDesc &acc = desc.funcs[1];
  acc.pure_axes = {pure("c_lane", 16), pure("x", width), pure("y", width), pure("c_block", channels / 16),
                   pure("n", 1)};
  std::vector<AxisDesc> update = {rvar("kx", 3), rvar("ky", 3), rvar("ic", 64)};
  update.insert(update.end(), acc.pure_axes.begin(), acc.pure_axes.end());
  acc.stages = {StageDesc{-1, acc.pure_axes, {}}, StageDesc{0, update, {"pad"}}};
  return desc;
}

/// out(x, y, c, n) = max(a + b, 0) with the sum an inlinable intermediate.
ComputeDesc elementwise_desc() {
  const std::vector<AxisDesc> axes = {pure("x", 56), pure("y", 56), pure("c", 64), pure("n", 1)};
  FuncDesc sum;
  sum.name = "sum";
  sum.pure_axes = axes;
  sum.stages = {StageDesc{-1, axes, {}}};
  sum.consumers = {"out"};
  FuncDesc out;
  out.name = "out";
  out.pure_axes = axes;
  out.stages = {StageDesc{-1, axes, {"sum"}}};
  out.is_output = true;
  return ComputeDesc{{sum, out}};
}

/// A long 1-D elementwise output (odd length).
ComputeDesc vector_desc() {
  FuncDesc out;
  out.name = "out";
  out.pure_axes = {pure("i", 1000003)};
  out.stages = {StageDesc{-1, out.pure_axes, {}}};
  out.is_output = true;
  return ComputeDesc{{out}};
}

/// sum(c) += in(rvars..., c) for `channels` channels, then a pure output reading it.
ComputeDesc channel_sum_desc(int64_t channels, std::vector<AxisDesc> rvars) {
  FuncDesc sum;
  sum.name = "sum";
  sum.pure_axes = {pure("c", channels)};
  rvars.push_back(pure("c", channels));
  sum.stages = {StageDesc{-1, sum.pure_axes, {}}, StageDesc{0, rvars, {}}};
  sum.consumers = {"out"};
  sum.inlinable = false;
  FuncDesc out;
  out.name = "out";
  out.pure_axes = sum.pure_axes;
  out.stages = {StageDesc{-1, out.pure_axes, {"sum"}}};
  out.is_output = true;
  return ComputeDesc{{sum, out}};
}

/// sum(c) += in(r, c) over r = 65536, out(c) = sum(c) / 65536: 16 outputs, a big reduction.
ComputeDesc reduction_desc() { return channel_sum_desc(16, {rvar("r$x", 65536)}); }

/// Global pooling: sum(c) += in(r.x, r.y, c) over 56 x 56 for 64 channels (two rvars).
ComputeDesc global_pool_desc() { return channel_sum_desc(64, {rvar("r$x", 56), rvar("r$y", 56)}); }

/// Softmax-like: a row max (root reduction, not an anchor: other axes than the output's),
/// then out(x, r) = exp(in(x, r) - max(r)).
ComputeDesc softmax_desc() {
  FuncDesc row_max;
  row_max.name = "row_max";
  row_max.pure_axes = {pure("r", 384)};
  row_max.stages = {StageDesc{-1, row_max.pure_axes, {}}, StageDesc{0, {rvar("k$x", 1000), pure("r", 384)}, {}}};
  row_max.consumers = {"out"};
  row_max.inlinable = false;
  FuncDesc out;
  out.name = "out";
  out.pure_axes = {pure("x", 1000), pure("r", 384)};
  out.stages = {StageDesc{-1, out.pure_axes, {"row_max"}}};
  out.is_output = true;
  return ComputeDesc{{row_max, out}};
}

struct NamedDesc {
  std::string name;
  ComputeDesc desc;
  size_t min_distinct = 50;  ///< of 200 samples: few parameters give few schedules
};

std::vector<NamedDesc> all_descs() {
  return {{"matmul 512^3", matmul_compute_desc(512, 512, 512)},
          {"matmul 197x83x61", matmul_compute_desc(197, 83, 61)},
          {"matmul 4x16x4096", matmul_compute_desc(4, 16, 4096)},
          {"conv 3x3", conv3x3_desc()},
          {"conv 1x1", conv1x1_desc()},
          {"conv 3x3 stride 2", strided_conv_desc()},
          {"depthwise conv", depthwise_conv_desc()},
          {"conv 3x3, blocked weight", blocked_conv_desc()},
          {"conv 3x3, blocked weight, 7x7x512", blocked_conv_desc(7, 512)},
          {"elementwise", elementwise_desc(), 8},
          {"elementwise 1-D", vector_desc(), 8},
          {"reduction", reduction_desc()},
          {"global pool", global_pool_desc()},
          {"softmax-like", softmax_desc(), 8}};
}

std::vector<std::string> sketch_names(const ComputeDesc &desc) {
  std::vector<std::string> names;
  for (const Sketch &s : generate_sketches(desc, kTarget)) names.push_back(s.name);
  return names;
}

void require_valid(const ComputeDesc &desc, const Schedule &schedule) {
  Result<ScheduleTree> tree = validate_exact_cover(desc, schedule);
  INFO(to_text(schedule));
  if (!tree) FAIL(tree.error().message);
}

/// Sampled schedules of `desc`, `per_sketch` from each of its sketches (seeded).
std::vector<Schedule> samples_per_sketch(const ComputeDesc &desc, int per_sketch, uint64_t seed,
                                         SamplerStats *stats = nullptr) {
  std::mt19937_64 rng(seed);
  std::vector<Schedule> schedules;
  for (const Sketch &sketch : generate_sketches(desc, kTarget))
    for (int i = 0; i < per_sketch; ++i) schedules.push_back(sample_schedule(desc, sketch, kTarget, rng, stats));
  return schedules;
}

std::string errors_of_matmul_runs(int64_t m, int64_t n, int64_t k, const std::vector<Schedule> &schedules,
                                       int &correct) {
  correct = 0;
  std::string errors;
  for (const Schedule &s : schedules) {
    Result<std::string> nest = lower_matmul_with_schedule(m, n, k, s);
    if (nest)
      ++correct;
    else
      errors += nest.error().message + "\n" + to_text(s) + "\n";
  }
  return errors;
}

std::string errors_of_conv_runs(const ConvCheckShape &shape, const std::vector<Schedule> &schedules, int &correct) {
  correct = 0;
  std::string errors;
  for (const Schedule &s : schedules) {
    Result<std::string> nest = lower_conv_with_schedule(shape, s);
    if (nest)
      ++correct;
    else
      errors += nest.error().message + "\n" + to_text(s) + "\n";
  }
  return errors;
}

}  // namespace

// ---- sketches ----

TEST_CASE("sketches follow the task's structure, not its op", "[sketch]") {
  CHECK(sketch_names(matmul_compute_desc(512, 512, 512)) == std::vector<std::string>{"tile", "tile_srsrs"});
  CHECK(sketch_names(conv3x3_desc()) == std::vector<std::string>{"tile", "tile_srsrs"});
  CHECK(sketch_names(elementwise_desc()) == std::vector<std::string>{"injective"});
  // Little pure parallelism, a big reduction: rfactor joins.
  CHECK(sketch_names(matmul_compute_desc(4, 16, 4096)) == std::vector<std::string>{"tile", "tile_srsrs", "rfactor"});
  CHECK(sketch_names(reduction_desc()) == std::vector<std::string>{"tile", "tile_srsrs", "rfactor"});
  CHECK(sketch_names(softmax_desc()) == std::vector<std::string>{"injective"});

  const std::vector<Sketch> conv = generate_sketches(conv3x3_desc(), kTarget);
  REQUIRE(conv[0].plan("pad")->rule == FuncRule::Inline);
  CHECK(conv[0].plan("acc")->rule == FuncRule::TiledAnchor);
  CHECK(conv[0].plan("acc")->partner == "out");
  CHECK(conv[0].plan("out")->rule == FuncRule::TiledOutput);
  CHECK(conv[1].plan("acc")->rule == FuncRule::TiledAnchorMultiLevel);
  REQUIRE(conv[0].param("out.tile.x"));
  CHECK(conv[0].param("out.tile.x")->kind == ParamKind::TileSize);
  CHECK(conv[0].param("acc.reduce.ic")->values == divisors(64));
  CHECK(conv[0].param("acc.vector")->values == std::vector<int64_t>{1, 16, 8, 4});
  CHECK(conv[1].param("acc.inner.c"));
  CHECK_FALSE(conv[0].param("acc.inner.c"));
  CHECK_THAT(conv[0].to_text(), Catch::Contains("acc: tiled_anchor (out)"));

  const std::vector<Sketch> softmax = generate_sketches(softmax_desc(), kTarget);
  CHECK(softmax[0].plan("row_max")->rule == FuncRule::Root);
  CHECK(softmax[0].plan("out")->rule == FuncRule::InjectiveOutput);
  const std::vector<Sketch> reduction = generate_sketches(reduction_desc(), kTarget);
  CHECK(reduction[2].plan("sum")->rule == FuncRule::RootRfactor);
  CHECK(reduction[2].plan("out")->rule == FuncRule::InjectiveOutput);
  // AVX2 has half the lanes.
  CHECK(generate_sketches(conv3x3_desc(), avx2_target())[0].param("acc.vector")->values ==
        std::vector<int64_t>{1, 8, 4});
}

TEST_CASE("anchors: the reduction an output reads, with the output's axes", "[sketch]") {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(find_anchors(matmul_compute_desc(8, 8, 8)) == Pairs{{"out", "acc"}});
  CHECK(find_anchors(conv3x3_desc()) == Pairs{{"out", "acc"}});
  CHECK(find_anchors(elementwise_desc()).empty());
  CHECK(find_anchors(softmax_desc()).empty());
  // Read by a second Func too: computing it at the output's tile would starve that one.
  ComputeDesc shared = matmul_compute_desc(8, 8, 8);
  FuncDesc other = shared.funcs[1];
  other.name = "other";
  shared.funcs.push_back(other);
  shared.funcs[0].consumers = {"out", "other"};
  CHECK(find_anchors(shared).empty());
}

TEST_CASE("anchors: an accumulator that blocks one output axis into lanes and blocks", "[sketch]") {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  const ComputeDesc desc = blocked_conv_desc();
  CHECK(find_anchors(desc) == Pairs{{"out", "acc"}});
  const FuncDesc &out = *desc.find("out"), &acc = *desc.find("acc");
  const std::vector<AxisLink> links = link_axes(out, acc).value();
  REQUIRE(links.size() == 5);
  CHECK((links[0].kind == AxisLink::Kind::Lane && links[0].out_axis == 2 && links[0].lanes == 16));
  CHECK((links[1].kind == AxisLink::Kind::Same && links[1].out_axis == 0));
  CHECK((links[3].kind == AxisLink::Kind::Block && links[3].out_axis == 2));
  // Regions map axis by axis; a tile of channels must be whole blocks and tile the axis.
  CHECK(anchor_region(out, acc, {7, 14, 32, 1}) == std::vector<int64_t>{16, 7, 14, 2, 1});
  CHECK(anchor_region(out, acc, {14, 14, 64, 1}) == std::vector<int64_t>{16, 14, 14, 4, 1});
  CHECK_FALSE(anchor_region(out, acc, {7, 14, 24, 1}));
  CHECK_FALSE(anchor_region(out, acc, {7, 14, 48, 1}));  // 48 does not tile 64
  // Only whole-block tiles are offered for the blocked axis.
  CHECK(generate_sketches(desc, kTarget)[0].param("out.tile.c")->values == std::vector<int64_t>{16, 32, 64});
  // Lanes that do not multiply up to the axis, or a reordered axis, are no anchor.
  ComputeDesc wrong = desc;
  wrong.funcs[1].pure_axes[3].extent = 3;
  CHECK(find_anchors(wrong).empty());
  ComputeDesc reordered = blocked_conv_desc();
  std::swap(reordered.funcs[1].pure_axes[1], reordered.funcs[1].pure_axes[2]);
  CHECK(find_anchors(reordered).empty());
}

TEST_CASE("samples of a blocked anchor vectorize its lanes", "[sketch]") {
  const ComputeDesc conv = blocked_conv_desc(7, 512);
  for (const Schedule &s : samples_per_sketch(conv, 50, 5)) {
    const ScheduleTree tree = validate_and_replay(conv, s).value();
    int64_t vectorized_lanes = 0, unrolled = 1;
    for (const ScheduleNode &n : tree.nodes) {
      if (n.kind != ScheduleNodeKind::Loop || n.func != "acc" || n.update != 0) continue;
      if (n.loop_kind == LoopKind::Vectorized) vectorized_lanes = n.extent;
      if (n.loop_kind == LoopKind::Unrolled && !n.reduction) unrolled *= n.extent;
    }
    INFO(to_text(s) << tree.to_text());
    CHECK_THAT(to_text(s), Catch::Contains("vectorize acc.u0 c_lane"));
    CHECK((vectorized_lanes == 4 || vectorized_lanes == 8 || vectorized_lanes == 16));
    CHECK(unrolled <= kTarget.accumulator_budget());
  }
}

// ---- the default schedule ----

TEST_CASE("default schedule: the hand matmul schedule's shape", "[sketch]") {
  const ComputeDesc mm = matmul_compute_desc(512, 512, 512);
  const Schedule s = default_cpu_schedule(mm, kTarget);
  require_valid(mm, s);
  // 32 x 8 tiles (2 vectors x 8 rows), rows innermost among the tiles, all fused in one
  // parallel loop; the accumulator per tile with its register tile unrolled.
  CHECK(to_text(s) == R"(tessel-schedule v1
split out j j_o j_i 32 shift_inwards
split out i i_o i_i 8 shift_inwards
reorder out j_i i_i i_o j_o
fuse out i_o j_o i_o_j_o
parallel out i_o_j_o
vectorize out j_i 16
compute_at acc out i_o_j_o
vectorize acc j 16
unroll acc j
vectorize acc.u0 j 16
reorder acc.u0 j_vec j i k$x
unroll acc.u0 j
unroll acc.u0 i
)");
  const ScheduleTree tree = validate_and_replay(mm, s).value();
  CHECK_THAT(tree.to_text(), Catch::Contains("parallel for out.i_o_j_o in 0..1024"));
  CHECK_THAT(tree.to_text(), Catch::Contains("realize acc [32x8 f32, 1 KiB, auto]"));

  // Every task has one, and it is valid.
  for (const NamedDesc &d : all_descs()) {
    INFO(d.name);
    require_valid(d.desc, default_cpu_schedule(d.desc, kTarget));
    require_valid(d.desc, default_cpu_schedule(d.desc, avx2_target()));
  }
  // AVX2: 8-lane vectors, and 2 x 6 accumulators fit in 12 of its 16 registers.
  const Schedule avx2 = default_cpu_schedule(mm, avx2_target());
  CHECK_THAT(to_text(avx2), Catch::Contains("split out j j_o j_i 16 shift_inwards"));
  CHECK_THAT(to_text(avx2), Catch::Contains("split out i i_o i_i 6 shift_inwards"));
}

TEST_CASE("default schedule: a blocked conv on a small map streams its weights once", "[sketch]") {
  // 512 channels on a 3x3 map (ResNet-18's last convs at 96x96): one tile covers the map,
  // so the accumulator holds every position of its channels and the input channels' loop
  // is split, its outer part outside the tile's remainder: each weight chunk is read from
  // memory once and re-read from cache for the remaining rows.
  const ComputeDesc small = blocked_conv_desc(3, 512);
  const Schedule s = default_cpu_schedule(small, kTarget);
  require_valid(small, s);
  const std::string nest = validate_and_replay(small, s).value().to_text();
  INFO(to_text(s) << nest);
  CHECK_THAT(nest, Catch::Contains("realize acc [16x3x3x"));
  const size_t outer_ic = nest.find("for acc.u0.ic_o"), rows = nest.find("acc.u0.y");
  REQUIRE(outer_ic != std::string::npos);
  REQUIRE(rows != std::string::npos);
  CHECK(outer_ic < rows);
  // Larger maps keep tiles of one row: the weights of a few channels stay in cache there.
  const ComputeDesc large = blocked_conv_desc(14, 64);
  const std::string large_nest = validate_and_replay(large, default_cpu_schedule(large, kTarget)).value().to_text();
  INFO(large_nest);
  CHECK_THAT(large_nest, !Catch::Contains("acc.u0.ic_o"));
  // The search draws both: some samples of the small map take it whole, some do not.
  int whole = 0, rows_only = 0;
  for (const Schedule &sample : samples_per_sketch(small, 40, 11)) {
    const std::string text = validate_and_replay(small, sample).value().to_text();
    (text.find("realize acc [16x3x3x") != std::string::npos ? whole : rows_only) += 1;
  }
  CHECK(whole > 0);
  CHECK(rows_only > 0);
}

// ---- sampling ----

TEST_CASE("samples of every task replay and stay inside their regions", "[sketch]") {
  for (const CpuTargetDesc &target : {avx512_target(2), avx2_target(2), avx512_target(16)})
  for (const NamedDesc &d : all_descs()) {
    INFO(d.name << ", " << target.vector_bits << " bits, " << target.threads << " threads");
    SamplerStats stats;
    std::mt19937_64 rng(42);
    const std::vector<Schedule> schedules = sample_schedules(d.desc, target, 200, rng, &stats);
    REQUIRE(schedules.size() == 200);
    int failures = 0;
    std::string first;
    for (const Schedule &s : schedules) {
      Result<ScheduleTree> tree = validate_exact_cover(d.desc, s);
      if (!tree && first.empty()) first = tree.error().message + "\n" + to_text(s);
      failures += !tree;
    }
    INFO(first);
    CHECK(failures == 0);
    INFO(stats.last_rejection);
    CHECK(stats.fallbacks == 0);
    CHECK(stats.first_try_rate() >= 0.99);
    // Many different schedules, not one repeated.
    std::set<std::string> distinct;
    for (const Schedule &s : schedules) distinct.insert(to_text(s));
    CHECK(distinct.size() >= d.min_distinct);
  }
}

TEST_CASE("samples are deterministic for a seed", "[sketch]") {
  for (const NamedDesc &d : all_descs()) {
    INFO(d.name);
    std::mt19937_64 a(7), b(7), c(8);
    const std::vector<Schedule> first = sample_schedules(d.desc, kTarget, 20, a);
    CHECK(first == sample_schedules(d.desc, kTarget, 20, b));
    CHECK(first != sample_schedules(d.desc, kTarget, 20, c));
  }
}

TEST_CASE("samples use the sketch's structure: anchors at the tile, register tiles in budget", "[sketch]") {
  const ComputeDesc conv = conv3x3_desc();
  for (const Schedule &s : samples_per_sketch(conv, 100, 3)) {
    const ScheduleTree tree = validate_and_replay(conv, s).value();
    int64_t vectorized_lanes = 1, unrolled = 1;
    bool anchor_realized_inside_loop = false;
    for (const ScheduleNode &n : tree.nodes) {
      if (n.kind == ScheduleNodeKind::Realize && n.func == "acc") anchor_realized_inside_loop = n.depth > 0;
      if (n.kind != ScheduleNodeKind::Loop || n.func != "acc" || n.update != 0) continue;
      if (n.loop_kind == LoopKind::Vectorized) vectorized_lanes = n.extent;
      if (n.loop_kind == LoopKind::Unrolled && !n.reduction) unrolled *= n.extent;
    }
    INFO(to_text(s) << tree.to_text());
    CHECK(anchor_realized_inside_loop);
    CHECK(vectorized_lanes <= 16);
    // Accumulators: unrolled pure loops (vector count x rows) within the register budget.
    CHECK(unrolled <= kTarget.accumulator_budget());
    CHECK_THAT(to_text(s), Catch::Contains("parallel out"));
  }
}

TEST_CASE("sampled choices: the anchor's region is what the replay says", "[sketch]") {
  const ComputeDesc conv = strided_conv_desc();
  std::mt19937_64 rng(11);
  for (const Sketch &sketch : generate_sketches(conv, kTarget))
    for (int i = 0; i < 50; ++i) {
      const SketchChoices choices = sample_choices(conv, sketch, kTarget, rng);
      Result<Schedule> s = build_sketch_schedule(conv, sketch, kTarget, choices);
      INFO(to_text(choices));
      REQUIRE(s);
      const ScheduleTree tree = validate_and_replay(conv, *s).value();
      for (const ScheduleNode &n : tree.nodes)
        if (n.kind == ScheduleNodeKind::Realize && n.func == "acc")
          CHECK(n.region == layout_tiled_output(*conv.find("out"), "acc", choices).anchor_region);
    }
}

TEST_CASE("build_sketch_schedule rejects values that break the sketch's constraints", "[sketch]") {
  const ComputeDesc mm = matmul_compute_desc(64, 64, 64);
  const Sketch sketch = generate_sketches(mm, kTarget)[0];
  SketchChoices choices = default_choices(mm, sketch, kTarget);
  REQUIRE(build_sketch_schedule(mm, sketch, kTarget, choices));
  SketchChoices bad = choices;
  bad["acc.register.i"] = 3;  // the tile has 8 rows
  Result<Schedule> s = build_sketch_schedule(mm, sketch, kTarget, bad);
  REQUIRE_FALSE(s);
  CHECK_THAT(s.error().message, Catch::Contains("acc.register.i = 3 does not divide the anchor's region (8)"));
  bad = choices;
  bad["acc.reduce.k$x"] = 5;
  s = build_sketch_schedule(mm, sketch, kTarget, bad);
  REQUIRE_FALSE(s);
  CHECK_THAT(s.error().message, Catch::Contains("acc.reduce.k$x = 5 does not divide 64"));
}

// ---- exact cover ----

TEST_CASE("exact cover: a register split that rounds the tile up is found and repaired", "[sketch]") {
  const ComputeDesc mm = matmul_compute_desc(64, 64, 64);
  Schedule s = parse_schedule(
                   "tessel-schedule v1\n"
                   "split out i i_o i_i 8 shift_inwards\n"
                   "compute_at acc out i_o\n"
                   "split acc.u0 i i_m i_r 3 round_up\n"
                   "vectorize acc.u0 j 24\n")
                   .value();
  REQUIRE(validate_and_replay(mm, s));  // the replay alone accepts it
  Result<ScheduleTree> checked = validate_exact_cover(mm, s);
  REQUIRE_FALSE(checked);
  CHECK_THAT(checked.error().message,
             Catch::Contains("line 4 (split acc.u0 i i_m i_r 3 round_up): split by 3 rounds a loop of 8 up"));
  Result<Schedule> repaired = repair_exact_cover(mm, s);
  REQUIRE(repaired);
  CHECK(to_text(*repaired) ==
        "tessel-schedule v1\nsplit out i i_o i_i 8 shift_inwards\ncompute_at acc out i_o\n"
        "split acc.u0 i i_m i_r 2 round_up\nvectorize acc.u0 j 16\n");
  require_valid(mm, *repaired);
  CHECK(lower_matmul_with_schedule(64, 64, 64, *repaired));
}

TEST_CASE("replay: a tile split again by a width that does not divide it still covers the tile", "[sketch]") {
  // out's 24-wide tile runs as two 16-wide vectors shifted inwards: acc computes 24, not 32
  // (schedule_tree.cpp multiplied the pieces' extents before).
  const ComputeDesc mm = matmul_compute_desc(64, 96, 16);
  const Schedule s = parse_schedule(
                         "tessel-schedule v1\n"
                         "split out j j_o j_i 24 shift_inwards\n"
                         "reorder out j_i i j_o\n"
                         "vectorize out j_i 16\n"
                         "compute_at acc out j_o\n"
                         "split acc.u0 i i_o i_i 8 round_up\n")
                         .value();
  const ScheduleTree tree = validate_and_replay(mm, s).value();
  CHECK_THAT(tree.to_text(), Catch::Contains("realize acc [24x64 f32"));
  CHECK(lower_matmul_with_schedule(64, 96, 16, s));
}

// ---- mutation ----

TEST_CASE("mutation returns valid schedules that differ in a choice", "[sketch]") {
  for (const NamedDesc &d : all_descs()) {
    INFO(d.name);
    std::mt19937_64 rng(5);
    int mutated = 0, failed = 0;
    std::string first_failure;
    for (const Schedule &s : samples_per_sketch(d.desc, 20, 9)) {
      Result<Schedule> m = mutate_schedule(d.desc, s, kTarget, rng);
      if (!m) {
        ++failed;
        if (first_failure.empty()) first_failure = m.error().message + "\n" + to_text(s);
        continue;
      }
      ++mutated;
      CHECK(*m != s);
      require_valid(d.desc, *m);
      // And again from the mutant, through text as a database would keep it.
      Result<Schedule> again = mutate_schedule(d.desc, parse_schedule(to_text(*m)).value(), kTarget, rng);
      if (again) require_valid(d.desc, *again);
    }
    INFO(first_failure);
    CHECK(failed <= mutated / 20);
  }
}

TEST_CASE("mutation from a kept tree is mutation from a replay, and returns the child's tree", "[sketch]") {
  for (const NamedDesc &d : all_descs()) {
    INFO(d.name);
    std::mt19937_64 replaying(8), keeping(8);
    for (const Schedule &s : samples_per_sketch(d.desc, 10, 4)) {
      Result<Schedule> replayed = mutate_schedule(d.desc, s, kTarget, replaying);
      Result<ScheduleTree> tree = validate_and_replay(d.desc, s);
      REQUIRE(tree.ok());
      Result<CoveredSchedule> kept = mutate_replayed_schedule(d.desc, s, tree.value(), kTarget, keeping);
      REQUIRE(replayed.ok() == kept.ok());
      if (!kept) continue;
      CHECK(kept->schedule == *replayed);
      // The tree that comes with the child is the child's own replay.
      CHECK(kept->tree.to_text() == validate_and_replay(d.desc, kept->schedule).value().to_text());
    }
  }
}

namespace {

std::set<std::string> lines_of(const Schedule &s) {
  std::set<std::string> lines;
  const std::string text = to_text(s);
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.insert(text.substr(start, end - start));
  return lines;
}

}  // namespace

TEST_CASE("mutation covers each kind of choice", "[sketch]") {
  const ComputeDesc mm = matmul_compute_desc(512, 512, 512);
  const Schedule base = default_cpu_schedule(mm, kTarget);
  const std::set<std::string> base_lines = lines_of(base);
  std::mt19937_64 rng(1);
  std::set<std::string> changed;  // the kinds of step whose lines a mutant added or dropped
  for (int i = 0; i < 300; ++i) {
    Result<Schedule> m = mutate_schedule(mm, base, kTarget, rng);
    REQUIRE(m);
    const std::set<std::string> lines = lines_of(*m);
    for (const std::set<std::string> *from : {&lines, &base_lines})
      for (const std::string &line : *from)
        if (!(from == &lines ? base_lines : lines).count(line)) changed.insert(line.substr(0, line.find(' ')));
    // The register tile (unrolled pure loops of acc.u0) stays within the budget.
    int64_t tile = 1;
    const ScheduleTree tree = validate_and_replay(mm, *m).value();
    for (const ScheduleNode &n : tree.nodes)
      if (n.kind == ScheduleNodeKind::Loop && n.func == "acc" && n.update == 0 && n.loop_kind == LoopKind::Unrolled &&
          !n.reduction)
        tile *= n.extent;
    CHECK(tile <= kTarget.accumulator_budget());
  }
  CHECK(changed == std::set<std::string>{"split", "vectorize", "unroll", "fuse", "parallel", "compute_at"});
}

TEST_CASE("unrolled body: the vector statements one compute unrolls to", "[sketch]") {
  // acc.u0's j tile (32 lanes: two AVX-512 vectors) x 8 rows x 16 k, all unrolled.
  const ComputeDesc mm = matmul_compute_desc(64, 64, 64);
  const Schedule big = parse_schedule(
                           "tessel-schedule v1\n"
                           "split acc.u0 j j_o j_i 32 auto\n"
                           "split acc.u0 i i_o i_i 8 auto\n"
                           "split acc.u0 k$x k_o k_i 16 auto\n"
                           "reorder acc.u0 j_i i_i k_i j_o i_o k_o\n"
                           "vectorize acc.u0 j_i\n"
                           "unroll acc.u0 i_i\n"
                           "unroll acc.u0 k_i\n")
                           .value();
  const ScheduleTree tree = validate_and_replay(mm, big).value();
  CHECK(unrolled_body_vectors(tree, avx512_target()) == 2 * 8 * 16);
  CHECK(unrolled_body_vectors(tree, avx2_target()) == 4 * 8 * 16);
  CHECK(check_unrolled_body(tree, avx512_target()).ok());
  Result<void> refused = check_unrolled_body(tree, avx2_target());
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("512 vector statements (the cap is 256)"));
  const Schedule plain = parse_schedule("tessel-schedule v1\n").value();
  CHECK(unrolled_body_vectors(validate_and_replay(mm, plain).value(), avx2_target()) == 1);
}

TEST_CASE("samples and mutants of a 7x7 stem conv stay within the unrolling cap", "[sketch]") {
  // ResNet's stem: 3 input channels, a 7x7 kernel. Unrolling kx, ky and ic around a register
  // tile made bodies of thousands of vectors that took seconds to compile.
  const ComputeDesc stem = conv_desc(48, 48, 64, 102, 102, 3, {rvar("kx", 7), rvar("ky", 7), rvar("ic", 3)});
  const CpuTargetDesc target = avx2_target(2);
  std::mt19937_64 rng(11);
  std::vector<Schedule> schedules = sample_schedules(stem, target, 200, rng);
  for (int round = 0; round < 3; ++round) {
    const size_t count = schedules.size();
    for (size_t i = 0; i < count; ++i)
      if (Result<Schedule> mutant = mutate_schedule(stem, schedules[i], target, rng)) schedules.push_back(*mutant);
  }
  int64_t largest = 0;
  for (const Schedule &s : schedules) {
    const ScheduleTree tree = validate_and_replay(stem, s).value();
    largest = std::max(largest, unrolled_body_vectors(tree, target));
  }
  CHECK(largest <= kMaxUnrolledBodyVectors);
  CHECK(largest > 16);  // the cap leaves real register tiles with unrolled taps
}

TEST_CASE("mutation of a schedule that does not replay is an error", "[sketch]") {
  std::mt19937_64 rng(1);
  const Schedule broken = parse_schedule("tessel-schedule v1\nsplit out nope a b 4 auto\n").value();
  Result<Schedule> m = mutate_schedule(matmul_compute_desc(8, 8, 8), broken, kTarget, rng);
  REQUIRE_FALSE(m);
  CHECK_THAT(m.error().message, Catch::Contains("the schedule to mutate does not replay"));
}

// ---- Halide: the real proof ----

namespace {

void check_matmul_samples(int64_t m, int64_t n, int64_t k, int per_sketch, uint64_t seed) {
  std::vector<Schedule> schedules = samples_per_sketch(matmul_compute_desc(m, n, k), per_sketch, seed);
  // Mutants too.
  std::mt19937_64 rng(seed);
  const size_t sampled = schedules.size();
  for (size_t i = 0; i < sampled; i += 4) {
    Result<Schedule> mutant = mutate_schedule(matmul_compute_desc(m, n, k), schedules[i], kTarget, rng);
    if (mutant) schedules.push_back(*mutant);
  }
  int correct = 0;
  const std::string error = errors_of_matmul_runs(m, n, k, schedules, correct);
  INFO(error);
  CHECK(correct == static_cast<int>(schedules.size()));
}

void check_conv_samples(const ConvCheckShape &shape, int per_sketch, uint64_t seed) {
  const ComputeDesc desc = conv_check_desc(shape);
  std::vector<Schedule> schedules = samples_per_sketch(desc, per_sketch, seed);
  std::mt19937_64 rng(seed);
  const size_t sampled = schedules.size();
  for (size_t i = 0; i < sampled; i += 4) {
    Result<Schedule> mutant = mutate_schedule(desc, schedules[i], kTarget, rng);
    if (mutant) schedules.push_back(*mutant);
  }
  schedules.push_back(default_cpu_schedule(desc, kTarget));
  int correct = 0;
  const std::string error = errors_of_conv_runs(shape, schedules, correct);
  INFO(error);
  CHECK(correct == static_cast<int>(schedules.size()));
}

}  // namespace

TEST_CASE("Halide: sampled matmul schedules compute the product", "[sketch]") {
  check_matmul_samples(512, 512, 512, 5, 1);
  check_matmul_samples(197, 83, 61, 5, 2);
  check_matmul_samples(4, 16, 4096, 3, 3);  // rfactor too
  CHECK(lower_matmul_with_schedule(197, 83, 61, default_cpu_schedule(matmul_compute_desc(197, 83, 61), kTarget)));
}

TEST_CASE("Halide: sampled conv schedules compute the convolution", "[sketch]") {
  ConvCheckShape conv3x3;  // 1x64x56x56 -> 64, 3x3, pad 1
  check_conv_samples(conv3x3, 5, 1);
  ConvCheckShape odd;
  odd.in_channels = 12;
  odd.out_channels = 20;
  odd.height = 19;
  odd.width = 23;
  odd.stride = 2;
  check_conv_samples(odd, 5, 2);
  ConvCheckShape depthwise;
  depthwise.in_channels = 32;
  depthwise.height = depthwise.width = 30;
  depthwise.depthwise = true;
  check_conv_samples(depthwise, 3, 3);
}

TEST_CASE("Halide: 200 sampled matmul schedules each (slow)", "[sketch_slow][.slow]") {
  check_matmul_samples(512, 512, 512, 100, 11);
  check_matmul_samples(197, 83, 61, 100, 12);
}

TEST_CASE("Halide: 50 sampled schedules of each conv (slow)", "[sketch_slow][.slow]") {
  ConvCheckShape conv3x3;
  check_conv_samples(conv3x3, 25, 21);
  ConvCheckShape pointwise;
  pointwise.kernel = 1;
  pointwise.pad = 0;
  check_conv_samples(pointwise, 25, 22);
  ConvCheckShape strided;
  strided.out_channels = 128;
  strided.stride = 2;
  check_conv_samples(strided, 25, 23);
  ConvCheckShape depthwise;
  depthwise.depthwise = true;
  check_conv_samples(depthwise, 25, 24);
}
