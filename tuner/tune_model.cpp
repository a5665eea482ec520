#include "tuner/tune_model.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>

#include "graph/fusion/fuse.h"
#include "search/cpu/sampler.h"
#include "tuner/cost_model.h"
#include "tuner/features.h"
#include "tuner/schedule_benchmark.h"
#include "tuner/task_scheduler.h"

namespace tessel {

std::string machine_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown CPU";
}

namespace {

/// One task being tuned.
struct TaskState {
  Workload task;
  std::unique_ptr<Task> instance;
  std::unique_ptr<Measurer> measurer;
};

/// Retrains the model on every record of the target that carries features.
void retrain(CostModel &model, TuningDatabase &db, const std::string &target) {
  auto records = db.records_for_target(target);
  if (!records.ok()) return;
  std::vector<CostSample> samples;
  const size_t width = static_cast<size_t>(feature_count());
  for (const TuningRecord &r : records.value()) {
    // Records written by another feature layout cannot train this one.
    if (!r.features || r.features->size() != width) continue;
    const double seconds = r.status == RecordStatus::Ok && r.median_seconds ? *r.median_seconds : 0;
    samples.push_back({r.workload_key, *r.features, seconds > 0 ? 1.0 / seconds : 0.0});
  }
  // A failed training keeps the previous model; the search only loses guidance.
  if (samples.size() >= 8) (void)model.train(samples);
}

std::string fmt_ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f ms", seconds * 1e3);
  return buf;
}

std::string fmt_seconds(std::chrono::steady_clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f s", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

Result<TuneSummary> tune_model(const Graph &graph, const Target &target, TuningDatabase &db, const TuneOptions &options) {
  const auto start = std::chrono::steady_clock::now();
  auto log = [&](const std::string &line) {
    if (options.log) options.log(line);
  };
  const std::string target_text = target.to_string();
  const std::string machine = machine_description();
  const ScheduleSpace space = target.kind == Target::Kind::Cuda ? ScheduleSpace::for_gpu(gpu_target_desc(target))
                                                               : ScheduleSpace::for_cpu(cpu_target_desc(target));
  auto shared = std::make_shared<const Graph>(graph);
  const std::vector<Workload> tasks = distinct_workloads(*shared, partition_graph(*shared));

  TuneSummary summary;
  std::vector<TaskState> states;
  std::vector<TaskProgress> progress;
  for (const Workload &task : tasks) {
    TaskTuneSummary s;
    s.workload_key = task.workload_key;
    s.ops = group_ops_text(*shared, task.group);
    s.weight = task.weight;
    auto instance = make_task(shared, task.group);
    if (!instance.ok()) {
      s.skipped = instance.error().message;
      summary.tasks.push_back(s);
      continue;
    }
    s.flops = instance->flops;
    if (auto added = db.add_workload(task.workload_key, task.workload_text); !added.ok()) return added.error();
    TaskState state;
    state.task = task;
    state.instance = std::make_unique<Task>(std::move(instance.value()));
    state.measurer = std::make_unique<Measurer>(*state.instance, target, options.measure);
    auto baseline = state.measurer->prepare_reference();
    if (!baseline.ok()) {
      s.skipped = baseline.error().message;
      summary.tasks.push_back(s);
      continue;
    }
    s.builtin_seconds = baseline->median_seconds;
    // The built-in schedule is a candidate too (empty schedule text): deployment picks it
    // when nothing tuned beats it.
    TuningRecord builtin;
    builtin.workload_key = task.workload_key;
    builtin.target = target_text;
    builtin.machine = machine;
    builtin.schedule_hash = kBuiltinScheduleHash;
    builtin.median_seconds = baseline->median_seconds;
    builtin.timings_seconds = baseline->seconds;
    builtin.compile_seconds = baseline->compile_seconds;
    if (options.record_builtin)
      if (auto added = db.add_record(builtin); !added.ok()) return added.error();
    TaskProgress p;
    p.weight = task.weight;
    if (auto best = db.best(task.workload_key, target_text); best.ok() && best.value() && best.value()->median_seconds)
      p.best_seconds = *best.value()->median_seconds;
    summary.tasks.push_back(s);
    states.push_back(std::move(state));
    progress.push_back(p);
  }
  log("tuning " + std::to_string(states.size()) + " tasks (" + std::to_string(tasks.size() - states.size()) +
      " skipped) for " + target_text + ", " + std::to_string(options.trials) + " trials");

  // Map from tuned task index to its summary row.
  std::vector<size_t> summary_row;
  for (size_t i = 0, row = 0; i < summary.tasks.size(); ++i)
    if (summary.tasks[i].skipped.empty()) summary_row.push_back(i), ++row;

  CostModel model;
  if (options.use_cost_model) retrain(model, db, target_text);
  TaskScheduler scheduler(progress);
  std::mt19937_64 rng(options.seed);
  int budget = options.trials;
  while (budget > 0) {
    // A task whose space is used up is retired, so the rest of the budget goes to the others
    // (skipping it for a round only let the scheduler pick it again and end the tune early:
    // a 2000-trial ResNet-18 tune stopped after 1001).
    const int t = scheduler.next_task(budget);
    if (t < 0) break;
    TaskState &state = states[t];
    const std::string &key = state.task.workload_key;
    auto measured = db.measured_hashes(key, target_text);
    if (!measured.ok()) return measured.error();
    std::vector<Schedule> seeds;
    if (auto top = db.top_k(key, target_text, 8); top.ok())
      for (const TuningRecord &r : top.value())
        if (auto s = parse_schedule(r.schedule_text); s.ok()) seeds.push_back(s.value());
    const int batch = std::min(options.batch, budget);
    const auto search_start = std::chrono::steady_clock::now();
    std::vector<Candidate> candidates =
        propose_candidates(state.instance->compute, space, model, seeds, measured.value(), batch, options.search, rng);
    // The sketch default goes first, so tuning never ends worse than it.
    const Schedule fallback = space.default_schedule(state.instance->compute);
    if (!measured->count(schedule_hash(fallback))) {
      bool present = false;
      for (const Candidate &c : candidates) present |= c.schedule == fallback;
      if (!present) {
        candidates.insert(candidates.begin(), Candidate{fallback, candidate_features(state.instance->compute, fallback, space.parallelism()), 0});
        if (static_cast<int>(candidates.size()) > batch) candidates.pop_back();
      }
    }
    if (candidates.empty()) {
      scheduler.retire(t);
      continue;
    }
    std::vector<Schedule> schedules;
    for (const Candidate &c : candidates) schedules.push_back(c.schedule);
    const auto measure_start = std::chrono::steady_clock::now();
    const std::vector<MeasureResult> results = state.measurer->measure(schedules);
    double round_best = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      const MeasureResult &m = results[i];
      TuningRecord record;
      record.workload_key = key;
      record.target = target_text;
      record.machine = machine;
      record.schedule_text = to_text(schedules[i]);
      record.schedule_hash = schedule_hash(schedules[i]);
      record.status = m.status;
      record.error_message = m.error;
      if (m.status == RecordStatus::Ok) record.median_seconds = m.median_seconds;
      record.timings_seconds = m.seconds;
      record.compile_seconds = m.compile_seconds;
      if (!candidates[i].features.empty()) record.features = candidates[i].features;
      auto added = db.add_record(record);
      if (!added.ok()) return added.error();
      ++summary.measured;
      if (m.status != RecordStatus::Ok) ++summary.failed;
      else if (round_best == 0 || m.median_seconds < round_best) round_best = m.median_seconds;
    }
    budget -= static_cast<int>(results.size());
    scheduler.record_round(t, static_cast<int>(results.size()), round_best);
    const auto train_start = std::chrono::steady_clock::now();
    if (options.use_cost_model) retrain(model, db, target_text);
    const auto round_end = std::chrono::steady_clock::now();
    if (options.on_round) options.on_round(options.trials - budget, scheduler.estimated_latency());
    const TaskProgress &p = scheduler.tasks()[t];
    TaskTuneSummary &row = summary.tasks[summary_row[t]];
    row.trials += static_cast<int>(results.size());
    log("[" + std::to_string(options.trials - budget) + "/" + std::to_string(options.trials) + "] task " +
        std::to_string(t) + " " + row.ops + " x" + std::to_string(row.weight) + ": best " + fmt_ms(p.best_seconds) +
        " (built-in " + fmt_ms(row.builtin_seconds) + "), model latency " + fmt_ms(scheduler.estimated_latency()) +
        "; round: search " + fmt_seconds(measure_start - search_start) + ", measure " + fmt_seconds(train_start - measure_start) +
        ", train " + fmt_seconds(round_end - train_start));
  }
  for (size_t i = 0; i < states.size(); ++i) {
    auto best = db.best(states[i].task.workload_key, target_text);
    if (best.ok() && best.value() && best.value()->median_seconds)
      summary.tasks[summary_row[i]].best_seconds = *best.value()->median_seconds;
  }
  summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace tessel
