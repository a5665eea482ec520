// Schedule features and the XGBoost cost model: fixed-length finite features that tell
// schedules apart, a model that learns a known ranking, saves and loads, and ranks real
// measured matmul schedules it has not seen (about 10 s: 60 compiles and timings).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "graph/fusion/fuse.h"
#include "schedule/schedule_tree.h"
#include "search/cpu/sampler.h"
#include "tests/support/schedule_selfcheck.h"
#include "tests/support/schedule_selfcheck_conv.h"
#include "tests/support/task_test_util.h"
#include "tuner/benchmark_problems.h"
#include "tuner/xgb_cost_model.h"
#include "tuner/features.h"
#include "tuner/ranking_metrics.h"
#include "tuner/schedule_benchmark.h"

using namespace tessel;

namespace {

std::vector<float> features_of(const ComputeDesc &compute, const Schedule &schedule) {
  auto tree = validate_and_replay(compute, schedule);
  INFO(to_text(schedule) << (tree.ok() ? std::string() : tree.error().message));
  REQUIRE(tree.ok());
  return schedule_features(compute, tree.value());
}

float slot(const std::vector<float> &features, const std::string &name) {
  const std::vector<std::string> &names = feature_names();
  const auto it = std::find(names.begin(), names.end(), name);
  INFO("feature " << name);
  REQUIRE(it != names.end());
  return features[static_cast<size_t>(it - names.begin())];
}

Schedule parse(const std::string &text) {
  auto schedule = parse_schedule(text);
  INFO((schedule.ok() ? std::string() : schedule.error().message));
  REQUIRE(schedule.ok());
  return schedule.value();
}

std::string temporary_path(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("tessel_test_" + name)).string();
}

/// Samples whose throughput is a known function of features 0..2 (the rest is noise),
/// with a per-workload scale the normalization must remove. Always positive (at least 1).
std::vector<CostSample> synthetic_samples(const std::string &workload, int count, double scale, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> value(0.0f, 4.0f);
  std::vector<CostSample> samples;
  for (int i = 0; i < count; ++i) {
    CostSample s;
    s.workload_key = workload;
    s.features.resize(24);
    for (float &f : s.features) f = value(rng);
    const double f0 = s.features[0], f1 = s.features[1], f2 = s.features[2];
    s.throughput = scale * (13.0 + 2.0 * f0 + f1 * f1 - 0.75 * f0 * f2 + (f1 > 2.0f ? 3.0 : 0.0));
    samples.push_back(std::move(s));
  }
  return samples;
}

std::vector<double> as_doubles(const std::vector<float> &v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("feature vectors have one fixed length, finite values and named slots", "[cost_model]") {
  REQUIRE(static_cast<int>(feature_names().size()) == feature_count());
  REQUIRE(feature_count() == kTaskFeatureCount + 3 * stage_feature_count());
  const std::set<std::string> unique(feature_names().begin(), feature_names().end());
  CHECK(unique.size() == feature_names().size());

  const ComputeDesc matmul = matmul_compute_desc(256, 256, 256);
  const ComputeDesc conv = conv_check_desc(ConvCheckShape{});
  std::mt19937_64 rng(11);
  for (const ComputeDesc *compute : {&matmul, &conv}) {
    for (const Schedule &schedule : sample_schedules(*compute, avx512_target(), 24, rng)) {
      const std::vector<float> f = features_of(*compute, schedule);
      REQUIRE(static_cast<int>(f.size()) == feature_count());
      for (size_t i = 0; i < f.size(); ++i) {
        INFO(feature_names()[i] << " of\n" << to_text(schedule));
        REQUIRE(std::isfinite(f[i]));
      }
    }
    // Tessel's defaults (no steps) are a schedule too.
    CHECK(static_cast<int>(features_of(*compute, Schedule{}).size()) == feature_count());
  }
}

TEST_CASE("features of reductions, rfactor and injective tasks are finite", "[cost_model]") {
  using testing::GraphBuilder;
  GraphBuilder softmax("softmax");
  const auto softmax_graph =
      softmax.finish({softmax.node("Softmax", {softmax.input("x", DType::Float32, {64, 1000})})});
  GraphBuilder reduce("reduce");
  const int x = reduce.input("x", DType::Float32, {8, 8192});
  const int axes = reduce.g.add_tensor({"axes", TensorType{DType::Int64, {1}, true}, Tensor::from_int64s({1}, {1})});
  const auto reduce_graph = reduce.finish({reduce.node("ReduceSum", {x, axes})});
  GraphBuilder transpose("transpose");
  Attributes perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  const auto transpose_graph =
      transpose.finish({transpose.node("Transpose", {transpose.input("x", DType::Float32, {256, 384})}, perm)});
  std::mt19937_64 rng(23);
  for (const auto &graph : {softmax_graph, reduce_graph, transpose_graph}) {
    const Task task = testing::largest_task(graph);
    std::set<std::string> texts;
    std::set<std::vector<float>> distinct;
    for (const Schedule &schedule : sample_schedules(task.compute, avx512_target(), 12, rng)) {
      texts.insert(to_text(schedule));
      const std::vector<float> f = features_of(task.compute, schedule);
      REQUIRE(static_cast<int>(f.size()) == feature_count());
      for (size_t i = 0; i < f.size(); ++i) {
        INFO(graph->name << ": " << feature_names()[i] << " of\n" << to_text(schedule));
        REQUIRE(std::isfinite(f[i]));
      }
      distinct.insert(f);
    }
    // A task whose reduction keeps its built-in schedule has a one-schedule space.
    INFO(graph->name << ": " << texts.size() << " distinct schedules");
    CHECK(distinct.size() * 10 >= texts.size() * 9);
  }
}

TEST_CASE("features read loop kinds, register tiles and footprints off the tree", "[cost_model]") {
  const ComputeDesc matmul = matmul_compute_desc(256, 256, 256);
  // 128x32 output tiles over 2 threads, the accumulator per tile, a 4x(4x16) register tile.
  const Schedule schedule = parse(R"(tessel-schedule v1
split out j j_o j_i 128 shift_inwards
split out i i_o i_i 32 shift_inwards
reorder out j_i i_i i_o j_o
parallel out j_o
vectorize out j_i 16
compute_at acc out i_o
vectorize acc j 16
split acc.u0 j j_m j_r 64 round_up
vectorize acc.u0 j_r 16
split acc.u0 i i_m i_r 4 round_up
reorder acc.u0 j_r_vec j_r i_r k$x j_m i_m
unroll acc.u0 j_r
unroll acc.u0 i_r
)");
  const std::vector<float> f = features_of(matmul, schedule);
  const auto log2p1 = [](double x) { return static_cast<float>(std::log2(1 + x)); };
  CHECK(slot(f, "task.stage_count") == 3);
  CHECK(slot(f, "task.output_points") == Approx(log2p1(256.0 * 256)));
  CHECK(slot(f, "task.reduction_points") == Approx(log2p1(256)));
  // The anchor is the accumulator's update: 256^3 executions, 2 FLOPs each.
  CHECK(slot(f, "anchor.is_update") == 1);
  CHECK(slot(f, "anchor.executions") == Approx(log2p1(256.0 * 256 * 256)));
  CHECK(slot(f, "anchor.flops") == Approx(log2p1(2.0 * 256 * 256 * 256)));
  CHECK(slot(f, "anchor.recompute_ratio") == Approx(1));
  CHECK(slot(f, "anchor.parallel_product") == Approx(log2p1(2)));
  CHECK(slot(f, "anchor.thread_balance") == Approx(1));
  CHECK(slot(f, "anchor.vector_width") == Approx(log2p1(16)));
  CHECK(slot(f, "anchor.vector_contiguous") == 1);
  CHECK(slot(f, "anchor.unroll_product") == Approx(log2p1(16)));
  CHECK(slot(f, "anchor.loops_in_reduction") == 3);
  CHECK(slot(f, "anchor.register_tile_points") == Approx(log2p1(4 * 4 * 16)));
  CHECK(slot(f, "anchor.register_tile_vectors") == Approx(log2p1(16)));
  CHECK(slot(f, "anchor.register_tile_unrolled") == 1);
  CHECK(slot(f, "anchor.innermost_reduction_extent") == Approx(log2p1(256)));
  CHECK(slot(f, "anchor.accumulator_reuse") == Approx(log2p1(256)));   // j_m (pure) encloses k
  CHECK(slot(f, "anchor.register_tile_axis0") == Approx(log2p1(64)));  // j: 4 x 16 lanes
  CHECK(slot(f, "anchor.register_tile_axis1") == Approx(log2p1(4)));   // i
  CHECK(slot(f, "anchor.register_tile_axis2") == 0);
  CHECK(slot(f, "anchor.block_axis0") == Approx(log2p1(128)));
  CHECK(slot(f, "anchor.block_axis1") == Approx(log2p1(32)));
  CHECK(slot(f, "anchor.gpu_loops") == 0);
  // The accumulator lives per 128x32 tile, allocated 2 x 8 times inside the parallel loop.
  CHECK(slot(f, "anchor.realize_bytes") == Approx(log2p1(128 * 32 * 4)));
  CHECK(slot(f, "anchor.realize_count") == Approx(log2p1(16)));
  CHECK(slot(f, "anchor.realize_in_parallel") == 1);
  CHECK(slot(f, "anchor.memory_auto") == 1);
  // Innermost loop: one 16-float vector of the accumulator, one cache line; A and B: 17 floats.
  CHECK(slot(f, "anchor.inner1.own_bytes") == Approx(log2p1(64)));
  CHECK(slot(f, "anchor.inner1.own_lines") == Approx(log2p1(1)));
  CHECK(slot(f, "anchor.inner1.operand_bytes") == Approx(log2p1(17 * 4)));
  // The k loop around the register tile: 4x64 accumulators, 256 x (64 + 4) operand elements.
  CHECK(slot(f, "anchor.reduction_body.own_bytes") == Approx(log2p1(4 * 64 * 4)));
  CHECK(slot(f, "anchor.reduction_body.operand_bytes") == Approx(log2p1(256.0 * (64 + 4) * 4)));
  // The update's own nest covers the tile: 128x32 accumulators, 256 x (128 + 32) operands.
  CHECK(slot(f, "anchor.own_nest.own_bytes") == Approx(log2p1(128 * 32 * 4)));
  CHECK(slot(f, "anchor.own_nest.operand_bytes") == Approx(log2p1(256.0 * (128 + 32) * 4)));
  // The other stages: the accumulator's initial value and the output copy.
  CHECK(slot(f, "rest_sum.is_output") == 1);
  CHECK(slot(f, "rest_max.executions") == Approx(log2p1(256.0 * 256)));
}

TEST_CASE("features differ between schedules that differ", "[cost_model]") {
  const ComputeDesc matmul = matmul_compute_desc(256, 256, 256);
  const ComputeDesc conv = conv_check_desc(ConvCheckShape{});
  std::mt19937_64 rng(5);
  for (const ComputeDesc *compute : {&matmul, &conv}) {
    std::set<std::string> texts;
    std::set<std::vector<float>> vectors;
    for (const Schedule &schedule : sample_schedules(*compute, avx512_target(), 40, rng))
      if (texts.insert(to_text(schedule)).second) vectors.insert(features_of(*compute, schedule));
    INFO(texts.size() << " distinct schedules, " << vectors.size() << " distinct feature vectors");
    CHECK(vectors.size() * 10 >= texts.size() * 9);
    CHECK(features_of(*compute, default_cpu_schedule(*compute, avx512_target())) != features_of(*compute, Schedule{}));
  }
}

TEST_CASE("ranking metrics", "[cost_model]") {
  CHECK(pairwise_ranking_accuracy({1, 2, 3}, {10, 20, 30}) == 1.0);
  CHECK(pairwise_ranking_accuracy({3, 2, 1}, {10, 20, 30}) == 0.0);
  CHECK(pairwise_ranking_accuracy({1, 1, 1}, {10, 20, 30}) == 0.5);
  CHECK(pairwise_ranking_accuracy({1, 3, 2}, {10, 20, 30}) == Approx(2.0 / 3));
  CHECK(pairwise_ranking_accuracy({1, 2}, {5, 5}) == 0.5);
  CHECK(spearman_correlation({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1));
  CHECK(spearman_correlation({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1));
  CHECK(spearman_correlation({1, 1, 1}, {1, 2, 3}) == 0);
}

TEST_CASE("throughputs are normalized per workload", "[cost_model]") {
  const std::vector<CostSample> samples = {{"a", {1}, 10},   {"b", {1}, 3000}, {"a", {1}, 5},
                                           {"b", {1}, 1000}, {"c", {1}, 0},    {"a", {1}, 0}};
  const std::vector<float> labels = normalized_throughputs(samples);
  REQUIRE(labels.size() == samples.size());
  CHECK(labels[0] == Approx(1));
  CHECK(labels[1] == Approx(1));
  CHECK(labels[2] == Approx(0.5));
  CHECK(labels[3] == Approx(1.0 / 3));
  CHECK(labels[4] == 0);  // a workload where everything failed
  CHECK(labels[5] == 0);
}

TEST_CASE("an untrained cost model scores every row 0", "[cost_model]") {
  XgbCostModel model;
  CHECK_FALSE(model.trained());
  CHECK(model.feature_width() == 0);
  auto scores = model.predict({{1, 2, 3}, {4, 5, 6}});
  REQUIRE(scores.ok());
  CHECK(scores.value() == std::vector<float>{0, 0});
  auto saved = model.save(temporary_path("untrained.json"));
  REQUIRE_FALSE(saved.ok());
  CHECK(saved.error().message.find("untrained") != std::string::npos);
}

TEST_CASE("cost model training rejects inconsistent samples", "[cost_model]") {
  XgbCostModel model;
  CHECK(model.train({}).error().message.find("no samples") != std::string::npos);
  auto widths = model.train({{"a", {1, 2}, 1}, {"a", {1, 2, 3}, 2}});
  REQUIRE_FALSE(widths.ok());
  CHECK(widths.error().message.find("sample 1 has 3 features") != std::string::npos);
  auto negative = model.train({{"a", {1, 2}, 1}, {"a", {1, 3}, -2}});
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().message.find("throughput -2") != std::string::npos);
  auto nan = model.train({{"a", {1, 2}, std::nan("")}});
  REQUIRE_FALSE(nan.ok());
  CHECK_FALSE(model.trained());
}

TEST_CASE("the cost model learns a known ranking across workloads", "[cost_model]") {
  std::mt19937_64 rng(42);
  std::vector<CostSample> train;
  for (const auto &[key, scale] : {std::pair<const char *, double>{"w1", 1.0}, {"w2", 250.0}, {"w3", 0.01}}) {
    std::vector<CostSample> part = synthetic_samples(key, 150, scale, rng);
    train.insert(train.end(), part.begin(), part.end());
  }
  const std::vector<CostSample> held_out = synthetic_samples("w4", 120, 7.0, rng);
  std::vector<std::vector<float>> rows;
  std::vector<double> actual;
  for (const CostSample &s : held_out) {
    rows.push_back(s.features);
    actual.push_back(s.throughput);
  }
  for (CostObjective objective : {CostObjective::PairwiseRanking, CostObjective::SquaredError}) {
    CostModelOptions options;
    options.objective = objective;
    XgbCostModel model(options);
    const auto start = std::chrono::steady_clock::now();
    auto trained = model.train(train);
    const double train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO((trained.ok() ? std::string() : trained.error().message));
    REQUIRE(trained.ok());
    CHECK(model.trained());
    CHECK(model.feature_width() == 24);
    auto scores = model.predict(rows);
    REQUIRE(scores.ok());
    const double accuracy = pairwise_ranking_accuracy(as_doubles(scores.value()), actual);
    const double spearman = spearman_correlation(as_doubles(scores.value()), actual);
    std::printf(
        "synthetic ranking, %-16s: pairwise accuracy %.3f, Spearman %.3f on %zu held-out rows "
        "(trained on %zu rows in %.2f s)\n",
        to_text(objective), accuracy, spearman, rows.size(), train.size(), train_seconds);
    CHECK(accuracy > 0.8);

    auto narrow = model.predict({{1, 2, 3}});
    REQUIRE_FALSE(narrow.ok());
    CHECK(narrow.error().message.find("trained on 24") != std::string::npos);
  }
}

TEST_CASE("a saved cost model loads and predicts the same", "[cost_model]") {
  std::mt19937_64 rng(9);
  std::vector<CostSample> samples = synthetic_samples("w", 120, 1.0, rng);
  CostModelOptions options;
  options.objective = CostObjective::SquaredError;
  options.rounds = 20;
  XgbCostModel model(options);
  REQUIRE(model.train(samples).ok());
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(samples[static_cast<size_t>(i)].features);
  const std::vector<float> before = model.predict(rows).value();

  const std::string path = temporary_path("cost_model.json");
  auto saved = model.save(path);
  INFO((saved.ok() ? std::string() : saved.error().message));
  REQUIRE(saved.ok());
  auto loaded = XgbCostModel::load(path);
  INFO((loaded.ok() ? std::string() : loaded.error().message));
  REQUIRE(loaded.ok());
  CHECK(loaded->trained());
  CHECK(loaded->feature_width() == 24);
  CHECK(loaded->options().objective == CostObjective::SquaredError);
  CHECK(loaded->predict(rows).value() == before);
  std::remove(path.c_str());

  auto missing = XgbCostModel::load(temporary_path("no_such_model.json"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("cannot open") != std::string::npos);

  const std::string garbage = temporary_path("garbage_model.json");
  std::ofstream(garbage) << "{\"not\": \"a model\"";
  auto corrupt = XgbCostModel::load(garbage);
  REQUIRE_FALSE(corrupt.ok());
  CHECK(corrupt.error().message.find(garbage) != std::string::npos);
  CHECK(corrupt.error().message.find("Stack trace") == std::string::npos);
  std::remove(garbage.c_str());
}

TEST_CASE("a model started from a pretrained one predicts with it, then keeps learning", "[cost_model]") {
  std::mt19937_64 rng(21);
  // Pretrained on other workloads of the same law.
  std::vector<CostSample> others;
  for (int w = 0; w < 4; ++w)
    for (CostSample &s : synthetic_samples("other" + std::to_string(w), 60, 1.0 + w, rng)) others.push_back(s);
  XgbCostModel base;
  REQUIRE(base.train(others).ok());
  const std::string path = temporary_path("pretrained_model.json");
  REQUIRE(base.save(path).ok());

  XgbCostModel model;
  CHECK_FALSE(model.pretrained());
  REQUIRE(model.start_from(path).ok());
  CHECK(model.pretrained());
  CHECK(model.trained());  // predicts before any record of its own
  const std::vector<CostSample> fresh = synthetic_samples("new", 80, 7.0, rng);
  std::vector<std::vector<float>> rows;
  std::vector<double> actual;
  for (const CostSample &s : fresh) {
    rows.push_back(s.features);
    actual.push_back(s.throughput);
  }
  CHECK(model.predict(rows).value() == base.predict(rows).value());
  CHECK(pairwise_ranking_accuracy(as_doubles(model.predict(rows).value()), actual) > 0.8);

  // Continued on a few records of the new workload: still its own model, still ranking well.
  const std::vector<CostSample> few(fresh.begin(), fresh.begin() + 16);
  REQUIRE(model.train(few).ok());
  CHECK(model.predict(rows).value() != base.predict(rows).value());
  CHECK(pairwise_ranking_accuracy(as_doubles(model.predict(rows).value()), actual) > 0.8);

  // Saved after continuing: the whole model (pretrained trees and new ones) loads again.
  const std::string continued = temporary_path("continued_model.json");
  REQUIRE(model.save(continued).ok());
  auto loaded = XgbCostModel::load(continued);
  REQUIRE(loaded.ok());
  CHECK(loaded->predict(rows).value() == model.predict(rows).value());

  XgbCostModel squared(CostModelOptions{CostObjective::SquaredError});
  auto mismatch = squared.start_from(path);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().message.find("pairwise_ranking") != std::string::npos);
  CHECK_FALSE(XgbCostModel().start_from(temporary_path("no_such_pretrained.json")).ok());
  std::remove(path.c_str());
  std::remove(continued.c_str());
}

TEST_CASE("cost model predictions continue while it retrains", "[cost_model]") {
  std::mt19937_64 rng(3);
  const std::vector<CostSample> samples = synthetic_samples("w", 100, 1.0, rng);
  CostModelOptions options;
  options.rounds = 10;
  XgbCostModel model(options);
  REQUIRE(model.train(samples).ok());
  std::vector<std::vector<float>> rows;
  for (const CostSample &s : samples) rows.push_back(s.features);
  bool retrained = false;
  std::thread trainer([&] { retrained = model.train(samples).ok(); });
  int predictions = 0;
  for (int i = 0; i < 20; ++i) predictions += model.predict(rows).ok() ? 1 : 0;
  trainer.join();
  CHECK(retrained);
  CHECK(predictions == 20);
}

TEST_CASE("cost model prediction speed", "[cost_model]") {
  // Rows of the real feature width from sampled matmul schedules, repeated to 10k rows.
  const ComputeDesc matmul = matmul_compute_desc(256, 256, 256);
  std::mt19937_64 rng(17);
  std::vector<CostSample> samples;
  std::vector<std::vector<float>> rows;
  std::uniform_real_distribution<double> noise(0.5, 1.5);
  for (const Schedule &schedule : sample_schedules(matmul, avx512_target(), 64, rng)) {
    std::vector<float> f = features_of(matmul, schedule);
    samples.push_back({"matmul", f, slot(f, "anchor.vector_width") * noise(rng)});
    rows.push_back(std::move(f));
  }
  XgbCostModel model;
  REQUIRE(model.train(samples).ok());
  std::vector<std::vector<float>> batch;
  while (batch.size() < 10000) batch.push_back(rows[batch.size() % rows.size()]);
  const auto start = std::chrono::steady_clock::now();
  auto scores = model.predict(batch);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(scores.ok());
  REQUIRE(scores->size() == batch.size());

  const auto feature_start = std::chrono::steady_clock::now();
  int extracted = 0;
  for (const Schedule &schedule : sample_schedules(matmul, avx512_target(), 64, rng)) {
    auto tree = validate_and_replay(matmul, schedule);
    if (tree.ok()) extracted += static_cast<int>(schedule_features(matmul, tree.value()).size() > 0);
  }
  const double feature_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - feature_start).count();
  std::printf(
      "prediction: %zu rows x %d features in %.1f ms (%.0f rows/s); sampling + replay + features: "
      "%d schedules in %.1f ms\n",
      batch.size(), feature_count(), seconds * 1e3, static_cast<double>(batch.size()) / seconds, extracted,
      feature_seconds * 1e3);
}

TEST_CASE("the cost model ranks measured matmul schedules it has not seen", "[cost_model]") {
  auto graph = make_benchmark_graph("matmul", "256x256x256");
  REQUIRE(graph.ok());
  const std::vector<FusedGroup> groups = partition_graph(*graph.value());
  REQUIRE(groups.size() == 1);
  auto task = make_task(graph.value(), groups.front());
  INFO((task.ok() ? std::string() : task.error().message));
  REQUIRE(task.ok());

  ScheduleBenchmarkOptions options;
  options.samples = 60;
  options.seed = 2024;
  options.timing.min_runs = 10;
  options.timing.min_seconds = 0.05;
  const auto start = std::chrono::steady_clock::now();
  auto measured = benchmark_schedules(task.value(), Target{}, options);
  INFO((measured.ok() ? std::string() : measured.error().message));
  REQUIRE(measured.ok());
  const double measure_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(measured->wrong == 0);
  REQUIRE(measured->samples.size() >= 50);

  std::vector<CostSample> samples;
  for (const MeasuredSchedule &m : measured->samples) {
    const Schedule schedule = parse(m.schedule_text);
    const double gflops = static_cast<double>(measured->flops) / m.timing.median * 1e-9;
    samples.push_back({"matmul 256x256x256", features_of(task->compute, schedule), gflops});
  }
  double best = 0, worst = 1e30;
  for (const CostSample &s : samples) best = std::max(best, s.throughput), worst = std::min(worst, s.throughput);
  std::printf("measured %zu matmul 256^3 schedules in %.0f s: %.1f .. %.1f GFLOP/s\n", samples.size(), measure_seconds,
              worst, best);
  // Three folds: each third held out in turn, the model trained on the other two thirds
  // (40 measured, 20 predicted with 60 samples). One split alone swings with timing noise.
  constexpr size_t kFolds = 3;
  for (CostObjective objective : {CostObjective::PairwiseRanking, CostObjective::SquaredError}) {
    CostModelOptions model_options;
    model_options.objective = objective;
    double accuracy_sum = 0, spearman_sum = 0;
    std::string per_fold;
    for (size_t fold = 0; fold < kFolds; ++fold) {
      std::vector<CostSample> train;
      std::vector<std::vector<float>> rows;
      std::vector<double> actual;
      for (size_t i = 0; i < samples.size(); ++i) {
        if (i % kFolds != fold) {
          train.push_back(samples[i]);
          continue;
        }
        rows.push_back(samples[i].features);
        actual.push_back(samples[i].throughput);
      }
      XgbCostModel model(model_options);
      REQUIRE(model.train(train).ok());
      auto scores = model.predict(rows);
      REQUIRE(scores.ok());
      const double accuracy = pairwise_ranking_accuracy(as_doubles(scores.value()), actual);
      accuracy_sum += accuracy;
      spearman_sum += spearman_correlation(as_doubles(scores.value()), actual);
      per_fold += (per_fold.empty() ? "" : " ") + std::to_string(accuracy).substr(0, 5);
    }
    const double accuracy = accuracy_sum / kFolds;
    std::printf("  %-16s train on 2/3, predict 1/3, 3 folds: pairwise accuracy %.3f (%s), Spearman %.3f\n",
                to_text(objective), accuracy, per_fold.c_str(), spearman_sum / kFolds);
    // Timings on a shared machine are noisy (re-measuring agrees on ~0.9 of the pairs), so
    // only the default objective is held to a floor; both are printed.
    if (objective == CostModelOptions{}.objective) CHECK(accuracy > 0.65);
  }
}
