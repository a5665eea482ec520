// Where a candidate's compile time goes: for the measured records of a model's tasks in a
// tuning database, rebuild each schedule's pipeline and time building it (tessel), Halide's
// lowering alone, and the whole JIT compile (lowering, LLVM IR and its optimization, machine
// code) with every assertion Halide makes, with none (Target::NoAsserts), and as the tuner's
// workers compile (JitKernel::compile: the buffer assertions bind() guarantees resolved,
// codegen/resolve_buffer_assertions.h). One candidate at a time, one thread. The tuner's
// compile again in forked children of this process, one child per candidate and four per
// child: a child pays for every page it writes (copy-on-write), most in its first compile.
// --rows prints each record's compile time, unrolled body (in native vectors,
// search/cpu/unrolled_body.h) and measured run time.
//
//   tessel_bench_compile --model M.onnx --db TUNED.db [--limit N] [--target llvm] [--rows]
#include <Halide.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compute/node_pipeline_internal.h"
#include "executor/load_model.h"
#include "schedule/schedule_tree.h"
#include "search/cpu/unrolled_body.h"
#include "task/task.h"
#include "tuning_db/tuning_database.h"

using namespace tessel;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// A candidate to compile again: its task and schedule (none: the built-in one).
struct Candidate {
  const Task *task;
  std::optional<Schedule> schedule;
};

/// Seconds of each JitKernel::compile of `candidates`, compiled in forked children of this
/// process, `per_child` in a row in each (as the tuner's workers compile).
std::vector<double> compile_in_children(const std::vector<Candidate> &candidates, size_t per_child,
                                        const Target &target) {
  std::vector<double> seconds;
  for (size_t begin = 0; begin < candidates.size(); begin += per_child) {
    int link[2];
    if (::pipe(link) != 0) break;
    const size_t end = std::min(candidates.size(), begin + per_child);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(link[0]);
      for (size_t i = begin; i < end; ++i) {
        const auto start = Clock::now();
        const Candidate &c = candidates[i];
        auto pipeline = build_pipeline(*c.task, c.schedule ? &*c.schedule : nullptr, target);
        if (pipeline.ok()) static_cast<void>(JitKernel::compile(pipeline.value(), target));
        const double took = seconds_since(start);
        if (::write(link[1], &took, sizeof took) != sizeof took) break;
      }
      ::_exit(0);
    }
    ::close(link[1]);
    double took;
    while (pid > 0 && ::read(link[0], &took, sizeof took) == sizeof took) seconds.push_back(took);
    ::close(link[0]);
    int status = 0;
    if (pid > 0) ::waitpid(pid, &status, 0);
  }
  return seconds;
}

double sum(const std::vector<double> &v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

struct Args {
  std::string model, db, target = "llvm";
  int limit = 1 << 30;
  bool rows = false;
};

bool parse_args(int argc, char **argv, Args &args) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--rows") {
      args.rows = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (flag == "--model") args.model = value;
    else if (flag == "--db") args.db = value;
    else if (flag == "--limit") args.limit = std::stoi(value);
    else if (flag == "--target") args.target = value;
    else return false;
  }
  return !args.model.empty() && !args.db.empty();
}

}  // namespace

int main(int argc, char **argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr, "usage: tessel_bench_compile --model M.onnx --db TUNED.db [--limit N] [--target llvm] [--rows]\n");
    return 2;
  }
  OptimizeOptions optimize;
  optimize.target = args.target;
  auto graph = load_optimized_model(args.model, optimize);
  auto target = parse_target(args.target);
  auto db = TuningDatabase::open(args.db);
  if (!graph.ok() || !target.ok() || !db.ok()) {
    std::fprintf(stderr, "%s\n", !graph.ok()    ? graph.error().message.c_str()
                                 : !target.ok() ? target.error().message.c_str()
                                                : db.error().message.c_str());
    return 1;
  }
  auto shared_graph = std::make_shared<const Graph>(std::move(graph).value());
  ModelTasks tasks = model_tasks(shared_graph);
  auto records = db->records_for_target(target->to_string());
  if (!records.ok()) {
    std::fprintf(stderr, "%s\n", records.error().message.c_str());
    return 1;
  }
  std::map<std::string, const Task *> by_key;
  for (const Task &t : tasks.tasks) by_key[t.workload_key] = &t;
  // As in the tuner, the shared runtime is compiled once before any candidate.
  static_cast<void>(JitKernel::prepare_shared_runtime());
  const Halide::Target jit_target =
      Halide::Target(target->halide_target()).with_feature(Halide::Target::NoBoundsQuery);
  const CpuTargetDesc cpu = cpu_target_desc(target.value());

  std::vector<double> build, lower, jit, jit_no_asserts, tuner_jit;
  std::vector<std::pair<double, std::string>> slowest;
  std::vector<Candidate> compiled;
  if (args.rows) std::printf("record,workload,unrolled_body_vectors,compile_s,run_ms\n");
  for (const TuningRecord &record : records.value()) {
    if (static_cast<int>(jit.size()) >= args.limit) break;
    auto found = by_key.find(record.workload_key);
    if (found == by_key.end() || record.status != RecordStatus::Ok) continue;
    // An empty schedule is the task's built-in one.
    auto schedule = parse_schedule(record.schedule_text.empty() ? "tessel-schedule v1\n" : record.schedule_text);
    if (!schedule.ok()) continue;
    const Schedule *chosen = record.schedule_text.empty() ? nullptr : &schedule.value();
    const Task &task = *found->second;
    auto start = Clock::now();
    auto pipeline = build_pipeline(task, chosen, target.value());
    if (!pipeline.ok()) continue;
    build.push_back(seconds_since(start));
    start = Clock::now();
    pipeline.value()->pipeline.compile_to_module(pipeline.value()->pipeline.infer_arguments(), "lowered", jit_target);
    lower.push_back(seconds_since(start));
    for (bool asserts : {true, false}) {
      auto fresh = build_pipeline(task, chosen, target.value());
      start = Clock::now();
      fresh.value()->pipeline.compile_jit(asserts ? jit_target : jit_target.with_feature(Halide::Target::NoAsserts));
      (asserts ? jit : jit_no_asserts).push_back(seconds_since(start));
    }
    {
      auto fresh = build_pipeline(task, chosen, target.value());
      start = Clock::now();
      static_cast<void>(JitKernel::compile(fresh.value(), target.value()));
      tuner_jit.push_back(seconds_since(start));
    }
    compiled.push_back({&task, chosen ? std::optional<Schedule>(*chosen) : std::nullopt});
    if (args.rows) {
      int64_t body = 1;
      if (chosen)
        if (auto tree = validate_and_replay(task.compute, *chosen); tree.ok()) body = unrolled_body_vectors(*tree, cpu);
      std::printf("%lld,%s,%lld,%.3f,%.4f\n", static_cast<long long>(record.id), record.workload_key.c_str(),
                  static_cast<long long>(body), tuner_jit.back(), record.median_seconds.value_or(0) * 1e3);
    }
    slowest.emplace_back(tuner_jit.back(), record.workload_key + " record " + std::to_string(record.id));
  }
  std::printf("%zu candidates of %zu tasks (one thread)\n", jit.size(), tasks.tasks.size());
  std::printf("%-34s %10s %10s\n", "phase", "median ms", "total s");
  auto row = [](const char *name, const std::vector<double> &v) {
    std::printf("%-34s %10.1f %10.2f\n", name, median(v) * 1e3, sum(v));
  };
  row("build pipeline (tessel)", build);
  row("lower (Halide, alone)", lower);
  row("JIT compile, every assertion", jit);
  row("JIT compile, no assertions", jit_no_asserts);
  row("JitKernel::compile (the tuner's)", tuner_jit);
  row("the same, one forked child each", compile_in_children(compiled, 1, target.value()));
  row("the same, four per forked child", compile_in_children(compiled, 4, target.value()));
  std::sort(slowest.rbegin(), slowest.rend());
  for (size_t i = 0; i < std::min<size_t>(5, slowest.size()); ++i)
    std::printf("slowest: %.2f s %s\n", slowest[i].first, slowest[i].second.c_str());
  return 0;
}
