// In-graph selection (tuner/in_graph_selection.h): which records a task tries, a trial
// artifact whose kernel calls switch between them, and the choice made by running it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "compiler/artifact_compiler.h"
#include "deploy/module.h"
#include "executor/graph_executor.h"
#include "executor/model_inputs.h"
#include "graph/fusion/fuse.h"
#include "search/cpu/sampler.h"
#include "search/cpu/source_placement.h"
#include "task/task.h"
#include "tests/support/op_test_util.h"
#include "tests/support/task_test_util.h"
#include "tuner/in_graph_selection.h"
#include "tuner/tune_model.h"

namespace fs = std::filesystem;
using namespace tessel;
using tessel::testing::GraphBuilder;
using tessel::testing::max_abs_diff;

namespace {

TuningRecord record(const std::string &hash, double seconds, const std::string &text) {
  TuningRecord r;
  r.schedule_hash = hash;
  r.median_seconds = seconds;
  r.schedule_text = text;
  return r;
}

/// conv + relu -> conv: two tasks, the second reading what the first wrote.
std::shared_ptr<const Graph> two_convs() {
  GraphBuilder b("two_convs");
  const int x = b.input("x", DType::Float32, {1, 8, 16, 16});
  Attributes pads;
  pads.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const int c1 = b.node("Conv", {x, b.weight("w1", DType::Float32, {16, 8, 3, 3}, 21)}, pads);
  const int r = b.node("Relu", {c1});
  const int c2 = b.node("Conv", {r, b.weight("w2", DType::Float32, {8, 16, 3, 3}, 22)}, pads);
  return b.finish({c2});
}

}  // namespace

TEST_CASE("in-graph selection: the records tried are the fastest of each thread split, then the fastest", "[select]") {
  const std::string a = "split f i0 i0_o i0_i 8 shift_inwards\nparallel f i1\n";
  const std::string b = "split f i0 i0_o i0_i 16 shift_inwards\nparallel f i1\n";  // same split across threads
  const std::string c = "parallel f i0_o_i1\n";
  const std::string d = "vectorize f i0 8\n";  // serial
  const std::vector<TuningRecord> fastest_first = {record("a", 1.0, a), record("b", 1.1, b), record("c", 1.2, c),
                                                   record("d", 1.3, d), record("e", 2.0, c + "unroll f i0\n")};
  auto hashes = [](const std::vector<DeployedSchedule> &v) {
    std::vector<std::string> out;
    for (const DeployedSchedule &s : v) out.push_back(s.schedule_hash);
    return out;
  };
  // Three splits among the first three; then the next fastest; "e" is over 1.6x slower.
  CHECK(hashes(alternatives_to_try(fastest_first, 3)) == std::vector<std::string>{"a", "c", "d"});
  CHECK(hashes(alternatives_to_try(fastest_first, 4)) == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(hashes(alternatives_to_try(fastest_first, 9)) == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(hashes(alternatives_to_try(fastest_first, 9, 3.0)).size() == 5);
  CHECK(alternatives_to_try({}, 4).empty());

  // The built-in schedule (empty text) is always tried, however slow alone, in place of the
  // last pick when there is no room; never when only one record is asked for.
  std::vector<TuningRecord> with_builtin = fastest_first;
  with_builtin.push_back(record(kBuiltinScheduleHash, 5.0, ""));
  CHECK(hashes(alternatives_to_try(with_builtin, 3)) == std::vector<std::string>{"a", "c", kBuiltinScheduleHash});
  CHECK(hashes(alternatives_to_try(with_builtin, 9)) == std::vector<std::string>{"a", "b", "c", "d", kBuiltinScheduleHash});
  CHECK(hashes(alternatives_to_try(with_builtin, 2)) == std::vector<std::string>{"a", kBuiltinScheduleHash});
  CHECK(hashes(alternatives_to_try(with_builtin, 1)) == std::vector<std::string>{"a"});
}

TEST_CASE("in-graph selection: a trial artifact switches kernels, and the choice computes the model", "[select]") {
  auto graph = two_convs();
  const fs::path dir = fs::temp_directory_path() / ("tessel_select_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Target target;

  // Three schedules per task: the default and two sampled ones.
  std::map<std::string, std::vector<DeployedSchedule>> schedules;
  std::map<std::string, ComputeDesc> computes;
  std::mt19937_64 rng(5);
  for (const Workload &task : distinct_workloads(*graph, partition_graph(*graph))) {
    auto instance = make_task(graph, task.group);
    REQUIRE(instance.ok());
    computes[task.workload_key] = instance->compute;
    const CpuTargetDesc cpu = cpu_target_desc(target);
    std::vector<Schedule> candidates = {default_cpu_schedule(instance->compute, cpu)};
    for (const Schedule &s : sample_schedules(instance->compute, cpu, 2, rng)) candidates.push_back(s);
    for (const Schedule &s : candidates) {
      const std::string hash = schedule_hash(s);
      bool seen = false;
      for (const DeployedSchedule &d : schedules[task.workload_key]) seen |= d.schedule_hash == hash;
      if (!seen) schedules[task.workload_key].push_back({to_text(s), hash, 1e-5});
    }
  }
  REQUIRE(schedules.size() == 2);
  // What the trial compiles per task: the records, then the first two with the padded
  // input copied inside their parallel loop where that applies (source_placement.h).
  std::map<std::string, size_t> compiled_count;
  for (const auto &[key, records] : schedules) {
    compiled_count[key] = records.size();
    for (size_t i = 0; i < std::min<size_t>(2, records.size()); ++i)
      if (with_sources_in_parallel_loop(computes.at(key), parse_schedule(records[i].schedule_text).value())) ++compiled_count[key];
  }

  ArtifactCompileOptions options;
  options.schedules = [&](const std::string &key) -> Result<std::optional<DeployedSchedule>> {
    return std::optional<DeployedSchedule>(schedules.at(key).front());
  };
  options.alternatives = [&](const std::string &key) -> Result<std::vector<DeployedSchedule>> {
    return schedules.at(key);
  };
  const fs::path trial = dir / "trial.tsl";
  auto summary = compile_artifact(*graph, options, trial.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  REQUIRE(summary->alternatives.size() == 2);
  for (const TaskAlternatives &task : summary->alternatives) {
    CHECK(task.steps.size() == 1);
    CHECK(task.alternatives.front().schedule.schedule_hash == schedules.at(task.workload_key).front().schedule_hash);
    CHECK(task.alternatives.size() == compiled_count.at(task.workload_key));
    for (const KernelAlternative &alt : task.alternatives) CHECK(alt.symbols.size() == 1);
  }

  // Every combination computes what the JIT executor computes.
  const Tensor x = random_tensor(TensorType{DType::Float32, {1, 8, 16, 16}, true}, 3);
  GraphExecutor executor(graph);
  auto expected = executor.run({x});
  REQUIRE(expected.ok());
  {
    Module module = Module::load(trial.string());
    for (const TaskAlternatives &task : summary->alternatives)
      for (const KernelAlternative &alt : task.alternatives) {
        module.use_kernel(task.steps[0], alt.symbols[0]);
        CHECK(max_abs_diff(module.run({x})[0], expected.value()[0]) < 1e-4);
      }
    CHECK_THROWS_WITH(module.use_kernel(0, "no_such_kernel"), Catch::Contains("no no_such_kernel_argv"));
    CHECK_THROWS_WITH(module.use_kernel(7, summary->alternatives[0].alternatives[0].symbols[0]),
                      Catch::Contains("no kernel call 7"));
  }

  InGraphSelectionOptions select;
  select.threads = 2;
  select.rounds = 2;
  select.runs_per_round = 5;
  auto chosen = select_in_graph(trial.string(), summary->alternatives, select);
  INFO((chosen.ok() ? "" : chosen.error().message));
  REQUIRE(chosen.ok());
  REQUIRE(chosen->tasks.size() == 2);
  for (const TaskSelection &s : chosen->tasks) {
    const size_t n = compiled_count.at(s.workload_key);
    REQUIRE(s.affected_ms.size() == n);
    CHECK(s.chosen < n);
    for (double ms : s.affected_ms) CHECK((std::isfinite(ms) && ms > 0));
    // Only a clear gain replaces the tuner's fastest.
    if (s.chosen != 0) CHECK(s.affected_ms[s.chosen] < s.affected_ms[0] * (1 - select.min_gain));
  }
  CHECK(chosen->latency_before_ms > 0);
  CHECK(chosen->latency_after_ms > 0);
  fs::remove_all(dir);
}
