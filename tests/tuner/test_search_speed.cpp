// What makes a trial cheap must not change what it finds: the search's threads change
// nothing in its proposals, and candidates clearly slower than the task's best are timed
// with fewer runs (every run taken is still reported).
#include <catch2/catch.hpp>

#include <numeric>

#include "graph/fusion/fuse.h"
#include "search/cpu/sampler.h"
#include "tuner/benchmark_problems.h"
#include "tuner/evolutionary_search.h"
#include "tuner/measure.h"
#include "tuner/xgb_cost_model.h"

using namespace tessel;

namespace {

Task problem_task(const std::string &op, const std::string &spec) {
  auto graph = make_benchmark_graph(op, spec);
  REQUIRE(graph.ok());
  auto task = make_task(graph.value(), partition_graph(*graph.value()).front());
  REQUIRE(task.ok());
  return task.value();
}

std::vector<std::string> proposal_texts(const Task &task, int threads) {
  const ScheduleSpace space = ScheduleSpace::for_cpu(avx512_target());
  std::mt19937_64 rng(11);
  XgbCostModel untrained;
  SearchOptions options;
  options.population = 64;
  options.generations = 3;
  options.threads = threads;
  std::vector<std::string> texts;
  for (const Candidate &c : propose_candidates(task.compute, space, untrained, {}, {}, 16, options, rng)) {
    CHECK_FALSE(c.features.empty());
    texts.push_back(to_text(c.schedule));
  }
  return texts;
}

double total_seconds(const MeasureResult &r) { return std::accumulate(r.seconds.begin(), r.seconds.end(), 0.0); }

}  // namespace

TEST_CASE("the search proposes the same candidates on one thread and on several", "[tuner][search]") {
  const Task conv = problem_task("conv", "1,32,14,14,32,3,3");
  const std::vector<std::string> serial = proposal_texts(conv, 1);
  CHECK(serial.size() == 16);
  CHECK(proposal_texts(conv, 2) == serial);
  CHECK(proposal_texts(conv, 5) == serial);
}

TEST_CASE("a candidate slower than the task's best is timed with fewer runs", "[tuner][measure]") {
  const Task task = problem_task("matmul", "96x80x64");
  const Schedule schedule = default_cpu_schedule(task.compute, avx512_target());
  MeasureOptions options;
  options.timing.min_runs = 5;
  options.timing.min_seconds = 0.05;
  // The time decides, not the run cap: this kernel takes under 5 us on a fast AVX-512 host.
  options.timing.max_runs = 1000000;

  Measurer full(task, Target{}, options);
  const MeasureResult timed = full.measure({schedule}).front();
  INFO(timed.error);
  REQUIRE(timed.status == RecordStatus::Ok);
  CHECK(total_seconds(timed) >= 0.05);

  // Far slower than a (pretended) best of a picosecond: stopped at min_runs.
  Measurer stopped(task, Target{}, options);
  stopped.set_best_seconds(1e-12);
  const MeasureResult cut = stopped.measure({schedule}).front();
  REQUIRE(cut.status == RecordStatus::Ok);
  CHECK(cut.seconds.size() == 5);
  CHECK(cut.median_seconds > 0);

  // Slower than the best but not by the factor: stopped at about half the minimum time.
  options.early_stop_factor = 1e12;
  Measurer shortened(task, Target{}, options);
  shortened.set_best_seconds(1e-12);
  const MeasureResult half = shortened.measure({schedule}).front();
  REQUIRE(half.status == RecordStatus::Ok);
  CHECK(total_seconds(half) >= 0.025);
  CHECK(total_seconds(half) < 0.05);

  // Switched off: timed in full whatever the best.
  options.early_stop_factor = 0;
  Measurer unlimited(task, Target{}, options);
  unlimited.set_best_seconds(1e-12);
  CHECK(total_seconds(unlimited.measure({schedule}).front()) >= 0.05);
}
