#include "tuner/tuning_session.h"

#include <algorithm>
#include <cstdio>

#include "compiler/artifact_compiler.h"
#include "graph/fusion/fuse.h"
#include "tuner/cost_model_training.h"
#include "tuner/features.h"
#include "tuner/schedule_transfer.h"
#include "tuner/shipped_cost_model.h"
#include "tuner/xgb_cost_model.h"

namespace tessel {

namespace {

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

/// The target with the run's thread count, which the CPU sketch rules split loops for.
Target with_threads(Target target, int threads) {
  if (threads > 0) target.threads = threads;
  return target;
}

/// A fresh XgbCostModel, started from the pretrained model the options name (or the one
/// shipped for the target). A model that cannot be read leaves it fresh, said in the log.
std::shared_ptr<CostModel> pretrained_or_fresh_model(const Target &target, const TuneOptions &options) {
  auto model = std::make_shared<XgbCostModel>();
  const std::string path =
      options.pretrained_cost_model.empty() ? shipped_cost_model_path(target) : options.pretrained_cost_model;
  if (path.empty() || path == "none") return model;
  if (auto started = model->start_from(path); !started.ok()) {
    if (options.log) options.log("warning: starting from an untrained cost model: " + started.error().message);
  } else if (options.log) {
    options.log("cost model: pretrained, from " + path);
  }
  return model;
}

ScheduleSpace space_for(const Target &target) {
  return target.kind == Target::Kind::Cuda ? ScheduleSpace::for_gpu(gpu_target_desc(target))
                                           : ScheduleSpace::for_cpu(cpu_target_desc(target));
}

}  // namespace

TuningSession::TuningSession(const Graph &graph, const Target &target, TuningDatabase &db, const TuneOptions &options)
    : graph_(std::make_shared<const Graph>(graph)),
      target_(with_threads(target, options.threads)),
      target_text_(target.to_string()),
      machine_(machine_description() + (options.measure.timing.cold_constants ? kColdWeightsMachineSuffix : "")),
      db_(db),
      options_(options),
      space_(space_for(target_)),
      model_(options.cost_model ? options.cost_model : pretrained_or_fresh_model(target, options)),
      policy_(options.search_policy ? options.search_policy : std::make_shared<EvolutionarySearchPolicy>(options.search)),
      rng_(options.seed),
      budget_(options.trials),
      start_(std::chrono::steady_clock::now()) {}

Result<void> TuningSession::prepare_tasks() {
  const auto prepare_start = std::chrono::steady_clock::now();
  // Not the Concats an artifact does in place: no kernel of theirs ever runs.
  const std::vector<Workload> workloads = distinct_workloads(*graph_, groups_with_steps(*graph_, partition_graph(*graph_)));
  std::vector<Result<Task>> tasks;
  for (const Workload &workload : workloads) tasks.push_back(make_task(graph_, workload));
  TESSEL_TRY(std::vector<std::unique_ptr<CandidateMeasurer>> measurers, prepare_measurers(workloads, tasks));
  for (size_t i = 0; i < workloads.size(); ++i) TESSEL_TRY_VOID(prepare_task(workloads[i], tasks[i], std::move(measurers[i])));
  if (options_.log)
    options_.log("tuning " + std::to_string(states_.size()) + " tasks (" +
                 std::to_string(workloads.size() - states_.size()) + " skipped) for " + target_text_ + ", " +
                 std::to_string(options_.trials) + " trials" + (options_.remote ? ", measured by workers" : ""));
  retrain();
  scheduler_.emplace(progress_);
  summary_.time.prepare = std::chrono::duration<double>(std::chrono::steady_clock::now() - prepare_start).count();
  reference_phases_ = measured_phases();
  return {};
}

Result<std::vector<std::unique_ptr<CandidateMeasurer>>> TuningSession::prepare_measurers(
    const std::vector<Workload> &workloads, const std::vector<Result<Task>> &tasks) {
  std::vector<std::unique_ptr<CandidateMeasurer>> measurers(workloads.size());
  if (options_.remote) {
    // Workers rebuild each task from its workload text, so the text goes in first.
    std::vector<QueueMeasurer *> all;
    for (size_t i = 0; i < workloads.size(); ++i) {
      if (!tasks[i].ok()) continue;
      TESSEL_TRY_VOID(db_.add_workload(workloads[i].workload_key, workloads[i].workload_text));
      auto measurer = std::make_unique<QueueMeasurer>(tasks[i].value(), target_text_, db_, options_.queue);
      all.push_back(measurer.get());
      measurers[i] = std::move(measurer);
    }
    if (!all.empty()) TESSEL_TRY_VOID(QueueMeasurer::prepare_references(all));
    return measurers;
  }
  // Every task's reference first, their workers compiling side by side: one task at a time
  // kept one core of 16 busy and took 50 s of a ResNet-18 tune on the H100 machine.
  MeasureOptions measure = options_.measure;
  if (options_.threads > 0) measure.threads = options_.threads;
  std::vector<Measurer *> all;
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (!tasks[i].ok()) continue;
    auto local = std::make_unique<LocalCandidateMeasurer>(std::make_unique<Measurer>(tasks[i].value(), target_, measure));
    all.push_back(&local->measurer());
    measurers[i] = std::move(local);
  }
  Measurer::prepare_references(all);
  return measurers;
}

Result<void> TuningSession::prepare_task(const Workload &workload, const Result<Task> &task,
                                         std::unique_ptr<CandidateMeasurer> measurer) {
  TaskTuneSummary row;
  row.workload_key = workload.workload_key;
  row.ops = group_ops_text(*graph_, workload.group);
  row.weight = workload.weight;
  if (!task.ok()) {
    row.skipped = task.error().message;
    summary_.tasks.push_back(row);
    return {};
  }
  row.flops = task->flops;
  TESSEL_TRY_VOID(db_.add_workload(workload.workload_key, workload.workload_text));
  TaskState state{task.value(), std::move(measurer), summary_.tasks.size()};
  auto baseline = state.measurer->prepare_reference();
  if (!baseline.ok()) {
    row.skipped = baseline.error().message;
    summary_.tasks.push_back(row);
    return {};
  }
  row.builtin_seconds = baseline->median_seconds;
  state.machine = baseline->machine;
  // Cold and warm times of one workload do not compare: a cold run measures against cold records only.
  if (state.machine.empty() && options_.measure.timing.cold_constants) state.machine = machine_;
  if (options_.record_builtin) TESSEL_TRY_VOID(record_builtin(state, baseline.value()));
  TESSEL_TRY_VOID(transfer_schedules(state, row));
  TaskProgress progress;
  progress.weight = workload.weight;
  progress.baseline_seconds = baseline->median_seconds;
  TESSEL_TRY(progress.best_seconds, best_on_reference_machine(state));
  summary_.tasks.push_back(row);
  states_.push_back(std::move(state));
  progress_.push_back(progress);
  return {};
}

Result<void> TuningSession::transfer_schedules(TaskState &state, TaskTuneSummary &row) {
  if (options_.transfer <= 0) return {};
  TESSEL_TRY(std::set<std::string> measured, db_.measured_hashes(state.task.workload_key, target_text_));
  measured.erase(kBuiltinScheduleHash);
  if (!measured.empty()) return {};  // tuned before: its own records seed the search
  TESSEL_TRY(const std::vector<TransferredSchedule> transferred,
             transferred_schedules(state.task, space_, db_, target_text_, options_.transfer));
  for (const TransferredSchedule &t : transferred) state.transferred.push_back(t.schedule);
  row.transferred = static_cast<int>(transferred.size());
  return {};
}

Result<void> TuningSession::record_builtin(const TaskState &state, const MeasureResult &baseline) {
  // The built-in schedule is a candidate too (empty schedule text): deployment picks it when
  // nothing tuned beats it.
  TuningRecord builtin;
  builtin.workload_key = state.task.workload_key;
  builtin.target = target_text_;
  builtin.machine = machine_;
  builtin.schedule_hash = kBuiltinScheduleHash;
  builtin.median_seconds = baseline.median_seconds;
  builtin.timings_seconds = baseline.seconds;
  builtin.compile_seconds = baseline.compile_seconds;
  TESSEL_TRY_VOID(db_.add_record(builtin));
  return {};
}

Result<bool> TuningSession::run_round() {
  if (budget_ <= 0) return false;
  if (options_.time_budget_seconds > 0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= options_.time_budget_seconds)
    return false;
  // A task whose space is used up is retired, so the rest of the budget goes to the others
  // (skipping it for a round only let the scheduler pick it again and end the tune early:
  // a 2000-trial ResNet-18 tune stopped after 1001).
  const int t = scheduler_->next_task(budget_);
  if (t < 0) return false;
  TaskState &state = states_[t];
  RoundClock clock;
  clock.search = std::chrono::steady_clock::now();
  TESSEL_TRY(std::vector<Candidate> candidates, propose(state, std::min(scheduler_->round_size(t, options_.batch), budget_)));
  if (candidates.empty()) {
    scheduler_->retire(t);
    return true;
  }
  clock.measure = std::chrono::steady_clock::now();
  const double best = scheduler_->tasks()[t].best_seconds;
  state.measurer->set_best_seconds(best > 0 ? best : summary_.tasks[state.summary_row].builtin_seconds);
  TESSEL_TRY(const std::vector<MeasureResult> results, state.measurer->measure(candidates));
  const auto record_start = std::chrono::steady_clock::now();
  TESSEL_TRY(const double round_best, record_results(state, candidates, results));
  const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  summary_.time.search += seconds(clock.measure - clock.search);
  summary_.time.measure += seconds(record_start - clock.measure);
  summary_.time.record += seconds(std::chrono::steady_clock::now() - record_start);
  budget_ -= static_cast<int>(results.size());
  scheduler_->record_round(t, static_cast<int>(results.size()), round_best);
  summary_.tasks[state.summary_row].trials += static_cast<int>(results.size());
  clock.train = std::chrono::steady_clock::now();
  retrain();
  clock.end = std::chrono::steady_clock::now();
  summary_.time.train += seconds(clock.end - clock.train);
  if (options_.on_round) options_.on_round(options_.trials - budget_, scheduler_->estimated_latency());
  log_round(t, clock);
  return true;
}

Result<std::vector<Candidate>> TuningSession::propose(const TaskState &state, int batch) {
  const std::string &key = state.task.workload_key;
  TESSEL_TRY(const std::set<std::string> measured, db_.measured_hashes(key, target_text_));
  std::vector<Schedule> seeds = state.transferred;  // they breed too
  if (auto top = db_.top_k(key, target_text_, 8); top.ok())
    for (const TuningRecord &r : top.value())
      if (auto s = parse_schedule(r.schedule_text); s.ok()) seeds.push_back(s.value());
  const ComputeDesc &compute = state.task.compute;
  std::vector<Candidate> candidates =
      policy_->propose(compute, space_, *model_, seeds, measured, batch, rng_);
  // Schedules transferred from relatives, then the defaults (each sketch's, the built-in
  // one first), go in front until measured.
  std::vector<Schedule> starts = state.transferred;
  for (Schedule &s : space_.starting_points(compute)) starts.push_back(std::move(s));
  for (auto start = starts.rbegin(); start != starts.rend(); ++start) {
    if (measured.count(schedule_hash(*start))) continue;
    if (std::any_of(candidates.begin(), candidates.end(), [&](const Candidate &c) { return c.schedule == *start; }))
      continue;
    candidates.insert(candidates.begin(), Candidate{*start, candidate_features(compute, *start, space_.parallelism()), 0});
    if (static_cast<int>(candidates.size()) > batch) candidates.pop_back();
  }
  return candidates;
}

Result<double> TuningSession::record_results(const TaskState &state, const std::vector<Candidate> &candidates,
                                             const std::vector<MeasureResult> &results) {
  double round_best = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const MeasureResult &m = results[i];
    TuningRecord record;
    record.workload_key = state.task.workload_key;
    record.target = target_text_;
    record.machine = machine_;
    record.schedule_text = to_text(candidates[i].schedule);
    record.schedule_hash = schedule_hash(candidates[i].schedule);
    record.status = m.status;
    record.error_message = m.error;
    if (m.status == RecordStatus::Ok) record.median_seconds = m.median_seconds;
    record.timings_seconds = m.seconds;
    record.compile_seconds = m.compile_seconds;
    if (!candidates[i].features.empty()) record.features = candidates[i].features;
    TESSEL_TRY_VOID(db_.add_record(record));
    ++summary_.measured;
    if (m.status != RecordStatus::Ok) ++summary_.failed;
    else if (!same_machine(state, m)) ++summary_.other_machine;
    else if (round_best == 0 || m.median_seconds < round_best) round_best = m.median_seconds;
  }
  return round_best;
}

bool TuningSession::same_machine(const TaskState &state, const MeasureResult &result) {
  return state.machine.empty() || result.machine.empty() || result.machine == state.machine;
}

Result<double> TuningSession::best_on_reference_machine(const TaskState &state) const {
  // The fastest records first; the first one measured where the reference was is the best.
  TESSEL_TRY(const std::vector<TuningRecord> fastest, db_.top_k(state.task.workload_key, target_text_, 64));
  for (const TuningRecord &record : fastest)
    if ((state.machine.empty() || record.machine == state.machine) && record.median_seconds)
      return *record.median_seconds;
  return 0.0;
}

void TuningSession::retrain() {
  // Training grows with the records (2.7 s per round at 2000 of them, more than the round's
  // measuring): retrain once the new records are a twentieth of all, every round early on.
  // Counted before the database is read: reading thousands of records each round cost more
  // than the training it skipped.
  const size_t fresh = static_cast<size_t>(summary_.measured) - measured_at_training_;
  if (trained_on_ > 0 && fresh < std::max<size_t>(8, (trained_on_ + fresh) / 20)) return;
  auto records = db_.records_for_target(target_text_);
  if (!records.ok()) return;
  const std::vector<CostSample> samples = cost_samples(records.value());
  if (samples.size() < 8) return;
  // A failed training keeps the previous model; the search only loses guidance.
  if (model_->train(samples).ok()) {
    trained_on_ = samples.size();
    measured_at_training_ = static_cast<size_t>(summary_.measured);
  }
}

void TuningSession::log_round(int t, const RoundClock &clock) {
  if (!options_.log) return;
  const TaskProgress &p = scheduler_->tasks()[t];
  const TaskTuneSummary &row = summary_.tasks[states_[t].summary_row];
  options_.log("[" + std::to_string(options_.trials - budget_) + "/" + std::to_string(options_.trials) + "] task " +
               std::to_string(t) + " " + row.ops + " x" + std::to_string(row.weight) + ": best " + fmt_ms(p.best_seconds) +
               " (built-in " + fmt_ms(row.builtin_seconds) + "), model latency " + fmt_ms(scheduler_->estimated_latency()) +
               "; round: search " + fmt_seconds(clock.measure - clock.search) + ", measure " +
               fmt_seconds(clock.train - clock.measure) + ", train " + fmt_seconds(clock.end - clock.train));
}

MeasurePhaseSeconds TuningSession::measured_phases() const {
  MeasurePhaseSeconds sum;
  for (const TaskState &state : states_) {
    const MeasurePhaseSeconds phases = state.measurer->phase_seconds();
    sum.build += phases.build;
    sum.lock_wait += phases.lock_wait;
    sum.run += phases.run;
  }
  return sum;
}

TuneSummary TuningSession::finish() {
  for (const TaskState &state : states_) {
    auto best = db_.best(state.task.workload_key, target_text_);
    if (!best.ok() || !best.value() || !best.value()->median_seconds) continue;
    TaskTuneSummary &row = summary_.tasks[state.summary_row];
    row.best_seconds = *best.value()->median_seconds;
    row.best_transferred = std::any_of(state.transferred.begin(), state.transferred.end(), [&](const Schedule &s) {
      return schedule_hash(s) == best.value()->schedule_hash;
    });
  }
  summary_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // The references' phases belong to prepare.
  const MeasurePhaseSeconds all = measured_phases();
  summary_.time.phases.build = all.build - reference_phases_.build;
  summary_.time.phases.lock_wait = all.lock_wait - reference_phases_.lock_wait;
  summary_.time.phases.run = all.run - reference_phases_.run;
  return summary_;
}

}  // namespace tessel
