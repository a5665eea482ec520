// The tuning loop on a small two-task model: every measurement lands in the database, a
// second run measures nothing twice, and the executor then runs the tuned schedules and
// still computes the same outputs.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "executor/graph_executor.h"
#include "executor/model_inputs.h"
#include "tests/support/task_test_util.h"
#include "tuner/tune_model.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

/// MatMul + bias + Relu, then Softmax: two tasks.
std::shared_ptr<const Graph> small_model() {
  GraphBuilder b("small");
  const int x = b.input("x", DType::Float32, {32, 64});
  const int mm = b.node("MatMul", {x, b.weight("w", DType::Float32, {64, 48}, 3)});
  const int biased = b.node("Add", {mm, b.weight("b", DType::Float32, {48}, 4)});
  const int relu = b.node("Relu", {biased});
  Attributes axis;
  axis.set("axis", int64_t{-1});
  return b.finish({b.node("Softmax", {relu}, axis)});
}

}  // namespace

TEST_CASE("tuning records every candidate, resumes without re-measuring, and runs tuned", "[tuner][tune]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tessel_tune_test_" + std::to_string(::getpid()) + ".db")).string();
  std::filesystem::remove(path);
  auto graph = small_model();
  auto db = TuningDatabase::open(path);
  REQUIRE(db.ok());
  TuneOptions options;
  options.trials = 8;
  options.batch = 4;
  options.measure.timing.min_runs = 3;
  options.measure.timing.min_seconds = 0.005;
  auto first = tune_model(*graph, Target{}, db.value(), options);
  INFO((first.ok() ? std::string() : first.error().message));
  REQUIRE(first.ok());
  CHECK(first->measured == 8);
  REQUIRE(first->tasks.size() == 2);
  for (const TaskTuneSummary &t : first->tasks) {
    CHECK(t.skipped.empty());
    CHECK(t.builtin_seconds > 0);
    CHECK(t.trials > 0);
    CHECK(t.best_seconds > 0);
  }
  auto stats = db->stats();
  REQUIRE(stats.ok());
  CHECK(stats->records == 8 + 2);  // the candidates and each task's built-in schedule

  // A second run: new candidates only.
  auto second = tune_model(*graph, Target{}, db.value(), options);
  REQUIRE(second.ok());
  CHECK(db->stats()->records == 8 + 8 + 2);

  // Execution with the best records gives the same outputs as without.
  ExecutorOptions tuned;
  auto shared_db = std::make_shared<TuningDatabase>(std::move(db.value()));
  tuned.schedule_for = best_schedule_lookup(shared_db, Target{}.to_string());
  GraphExecutor plain(graph), with_tuning(graph, Target{}, tuned);
  auto inputs = random_inputs(*graph, 3);
  REQUIRE(inputs.ok());
  auto want = plain.run(inputs.value());
  auto got = with_tuning.run(inputs.value());
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  CHECK(max_relative_difference(got.value(), want.value()) < 1e-4);
  std::filesystem::remove(path);
}
