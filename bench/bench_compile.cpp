// Where a candidate's compile time goes: for the measured records of a model's tasks in a
// tuning database, rebuild each schedule's pipeline and time building it (tessel), Halide's
// lowering, and the whole JIT compile (lowering, LLVM IR, optimization, machine code), with
// and without Halide's assertions. One candidate at a time, one thread.
//
//   tessel_bench_compile --model M.onnx --db TUNED.db [--limit N] [--target llvm]
#include <Halide.h>

#include <algorithm>
#include <functional>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "compute/node_pipeline_internal.h"
#include "executor/load_model.h"
#include "task/task.h"
#include "schedule/schedule_tree.h"
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

double sum(const std::vector<double> &v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

struct Phases {
  std::vector<double> build, lower, jit, jit_no_asserts;
};

}  // namespace

int main(int argc, char **argv) {
  std::string model_path, db_path, target_text = "llvm";
  int limit = 1 << 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model") model_path = value;
    else if (flag == "--db") db_path = value;
    else if (flag == "--limit") limit = std::stoi(value);
    else if (flag == "--target") target_text = value;
  }
  if (model_path.empty() || db_path.empty()) {
    std::fprintf(stderr, "usage: tessel_bench_compile --model M.onnx --db TUNED.db [--limit N] [--target llvm]\n");
    return 2;
  }
  OptimizeOptions optimize;
  optimize.target = target_text;
  auto graph = load_optimized_model(model_path, optimize);
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", graph.error().message.c_str());
    return 1;
  }
  auto target = parse_target(target_text);
  auto db = TuningDatabase::open(db_path);
  if (!target.ok() || !db.ok()) {
    std::fprintf(stderr, "bad target or database\n");
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
  static_cast<void>(JitKernel::prepare_shared_runtime());

  Phases all;
  std::vector<std::pair<double, std::string>> slowest;
  int done = 0;
  for (const TuningRecord &record : records.value()) {
    if (done >= limit) break;
    auto found = by_key.find(record.workload_key);
    if (found == by_key.end() || record.status != RecordStatus::Ok) continue;
    if (const char *only = getenv("ONLY_RECORD"); only && std::to_string(record.id) != only) continue;
    auto schedule = parse_schedule(record.schedule_text);
    if (!schedule.ok()) continue;
    const Task &task = *found->second;
    auto start = Clock::now();
    auto pipeline = build_pipeline(task, &schedule.value(), target.value());
    if (!pipeline.ok()) continue;
    all.build.push_back(seconds_since(start));
    const Halide::Target host(target->halide_target());
    const Halide::Target jit_target = host.with_feature(Halide::Target::NoBoundsQuery);
    start = Clock::now();
    pipeline.value()->pipeline.compile_to_module(pipeline.value()->pipeline.infer_arguments(), "lowered", jit_target);
    all.lower.push_back(seconds_since(start));
    for (bool asserts : {getenv("ASSERTS_LAST") ? false : true, getenv("ASSERTS_LAST") ? true : false}) {
      if (getenv("ONLY_ASSERTS") && !asserts) continue;
      if (getenv("ONLY_PLAIN") && asserts) continue;
      auto fresh = build_pipeline(task, &schedule.value(), target.value());
      start = Clock::now();
      fresh.value()->pipeline.compile_jit(asserts ? jit_target : jit_target.with_feature(Halide::Target::NoAsserts));
      (asserts ? all.jit : all.jit_no_asserts).push_back(seconds_since(start));
    }
    if (const char *dump = getenv("DUMP_RECORD"); dump && std::to_string(record.id) == dump) {
      for (bool asserts : {true, false}) {
        auto fresh = build_pipeline(task, &schedule.value(), target.value());
        fresh.value()->pipeline.compile_to_lowered_stmt(asserts ? "/tmp/stmt_asserts.txt" : "/tmp/stmt_plain.txt",
                                                        fresh.value()->pipeline.infer_arguments(), Halide::Text,
                                                        asserts ? jit_target : jit_target.with_feature(Halide::Target::NoAsserts));
      }
    }
    if (getenv("CSV")) {
      int64_t most = 1;
      auto tree = validate_and_replay(task.compute, schedule.value());
      if (tree.ok()) {
        std::vector<const ScheduleNode *> loops;
        std::function<void(int)> walk = [&](int index) {
          const ScheduleNode &n = tree->nodes[index];
          if (n.kind == ScheduleNodeKind::Compute) {
            int64_t body = 1;
            for (const ScheduleNode *l : loops)
              if (l->loop_kind == LoopKind::Unrolled) body *= l->extent;
              else if (l->loop_kind == LoopKind::Vectorized) body *= std::max<int64_t>(1, l->extent / 8);
            most = std::max(most, body);
          }
          if (n.kind == ScheduleNodeKind::Loop) loops.push_back(&n);
          for (int child : n.children) walk(child);
          if (n.kind == ScheduleNodeKind::Loop) loops.pop_back();
        };
        walk(0);
      }
      std::printf("CSV,%ld,%.3f,%.4f,%s\n", (long)most, all.jit.back(), record.median_seconds.value_or(0) * 1e3,
                  record.workload_key.c_str());
    }
    slowest.emplace_back(all.jit.back(), record.workload_key + " record " + std::to_string(record.id));
    ++done;
  }
  std::printf("%d candidates of %zu tasks (one thread)\n", done, tasks.tasks.size());
  std::printf("%-28s %10s %10s\n", "phase", "median ms", "total s");
  auto row = [](const char *name, const std::vector<double> &v) {
    std::printf("%-28s %10.1f %10.2f\n", name, median(v) * 1e3, sum(v));
  };
  row("build pipeline (tessel)", all.build);
  row("lower (Halide)", all.lower);
  row("JIT compile, all", all.jit);
  row("JIT compile, no asserts", all.jit_no_asserts);
  std::sort(slowest.rbegin(), slowest.rend());
  for (size_t i = 0; i < std::min<size_t>(5, slowest.size()); ++i)
    std::printf("slowest: %.2f s %s\n", slowest[i].first, slowest[i].second.c_str());
  return 0;
}
