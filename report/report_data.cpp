#include "report/report_data.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <set>

#include "compiler/artifact_compiler.h"
#include "graph/fusion/fuse.h"
#include "graph/fusion/workload_graph.h"
#include "schedule/schedule_ir.h"
#include "schedule/schedule_tree.h"
#include "task/task.h"
#include "tuner/xgb_cost_model.h"
#include "tuner/features.h"
#include "tuner/ranking_metrics.h"
#include "tuner/tune_model.h"

namespace tessel {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The type of the group's last output ("float32[1,64,56,56]"), as the workload text writes it.
std::string output_type_of_group(const Graph &graph, const FusedGroup &group) {
  const std::vector<int> &outputs = graph.node_outputs[group.nodes.back()];
  return outputs.empty() || outputs[0] == kNoTensor ? "" : graph.tensors[outputs[0]].type.to_string();
}

/// A task's graph and group, from which its Task (loop nests) is made.
struct TaskSource {
  std::shared_ptr<const Graph> graph;
  FusedGroup group;
};

Result<std::string> render_loop_nest(const TaskSource &source, const std::string &schedule_text) {
  auto task = make_task(source.graph, source.group);
  if (!task.ok()) return make_error(task.error().kind, "cannot rebuild the task: " + task.error().message);
  auto schedule = parse_schedule(schedule_text);
  if (!schedule.ok())
    return make_error(schedule.error().kind, "the schedule does not parse: " + schedule.error().message);
  auto tree = validate_and_replay(task->compute, schedule.value());
  if (!tree.ok())
    return make_error(tree.error().kind, "the schedule does not apply to this task: " + tree.error().message);
  return tree->to_text();
}

/// Per-task numbers from the task's records (id order).
void summarize_records(ReportTask &task, const std::vector<const TuningRecord *> &records) {
  std::vector<std::optional<double>> trial_seconds;
  int64_t best_index = -1;  // into trial_seconds
  for (const TuningRecord *r : records) {
    ++task.records;
    ++task.records_by_status[r->status];
    const bool ok = r->status == RecordStatus::Ok && r->median_seconds;
    if (r->status != RecordStatus::Ok) ++task.failed;
    // Same order as TuningDatabase::best: fastest median, then the older record.
    if (ok && (!task.best || *r->median_seconds < *task.best->median_seconds)) task.best = *r;
    if (r->schedule_hash == kBuiltinScheduleHash) {
      if (ok) task.builtin_seconds = *r->median_seconds;
      continue;
    }
    trial_seconds.push_back(ok ? r->median_seconds : std::nullopt);
    if (ok && task.best && task.best->id == r->id) best_index = static_cast<int64_t>(trial_seconds.size()) - 1;
  }
  std::map<std::string, int64_t> errors;
  for (const TuningRecord *r : records)
    if (r->status != RecordStatus::Ok) ++errors[std::string(to_text(r->status)) + ": " + r->error_message];
  task.errors.assign(errors.begin(), errors.end());
  std::stable_sort(task.errors.begin(), task.errors.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  task.searched = static_cast<int>(trial_seconds.size());
  task.best_is_builtin = task.best && task.best->schedule_hash == kBuiltinScheduleHash;
  task.best_trial = !task.best_is_builtin && best_index >= 0 ? static_cast<int>(best_index) + 1 : 0;
  task.curve = running_best_curve(trial_seconds, task.flops);
}

PredictionSummary predict_held_out(const TuningDatabase &db, const std::vector<TuningRecord> &records,
                                   const ReportDataOptions &options) {
  PredictionSummary summary;
  const size_t width = static_cast<size_t>(feature_count());
  std::vector<CostSample> samples;  // id order
  for (const TuningRecord &r : records) {
    if (r.status != RecordStatus::Ok || !r.median_seconds || *r.median_seconds <= 0) continue;
    if (!r.features || r.features->size() != width) continue;
    samples.push_back({r.workload_key, *r.features, 1.0 / *r.median_seconds});
  }
  summary.feature_records = static_cast<int64_t>(samples.size());
  if (samples.size() < static_cast<size_t>(std::max(options.min_prediction_records, 2))) {
    summary.note = "only " + std::to_string(samples.size()) + " ok records with cost-model features (" +
                   std::to_string(width) + " values) for this target; at least " +
                   std::to_string(options.min_prediction_records) + " are needed for a held-out evaluation";
    return summary;
  }
  const size_t train_count = std::clamp<size_t>(static_cast<size_t>(samples.size() * options.train_fraction), 1,
                                                samples.size() - 1);
  const std::vector<CostSample> train(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(train_count));
  XgbCostModel model;  // the tuner's objective and settings
  const auto start = std::chrono::steady_clock::now();
  if (auto trained = model.train(train); !trained.ok()) {
    summary.note = "the cost model did not train: " + trained.error().message;
    return summary;
  }
  summary.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::vector<float>> rows;
  for (size_t i = train_count; i < samples.size(); ++i) rows.push_back(samples[i].features);
  auto scores = model.predict(rows);
  if (!scores.ok()) {
    summary.note = "the cost model did not predict: " + scores.error().message;
    return summary;
  }
  const std::vector<float> measured = normalized_throughputs(samples);
  summary.train_records = static_cast<int64_t>(train_count);
  summary.test_records = static_cast<int64_t>(rows.size());

  // Scores of rank:pairwise only order candidates of one workload: compare within workloads.
  std::map<std::string, std::vector<size_t>> by_workload;  // into the held-out rows
  for (size_t i = 0; i < rows.size(); ++i) by_workload[samples[train_count + i].workload_key].push_back(i);
  std::set<std::string> trained_on;
  for (const CostSample &s : train) trained_on.insert(s.workload_key);
  double accuracy_sum = 0, spearman_sum = 0;
  for (const auto &[key, indices] : by_workload) {
    WorkloadPrediction w;
    w.workload_key = key;
    if (auto text = db.workload_text(key); text.ok() && text.value()) w.ops = workload_ops(*text.value());
    w.points = static_cast<int>(indices.size());
    w.seen_in_training = trained_on.count(key) > 0;
    if (!w.seen_in_training) ++summary.unseen_workloads;
    std::vector<double> predicted, actual;
    double mean = 0;
    for (size_t i : indices) mean += scores.value()[i];
    mean /= indices.size();
    for (size_t i : indices) {
      predicted.push_back(scores.value()[i]);
      actual.push_back(measured[train_count + i]);
      summary.points.push_back({key, scores.value()[i] - mean, measured[train_count + i], w.seen_in_training});
    }
    int64_t differing = 0;
    for (size_t a = 0; a < actual.size(); ++a)
      for (size_t b = a + 1; b < actual.size(); ++b) differing += actual[a] != actual[b];
    if (differing > 0) {
      w.pairwise_accuracy = pairwise_ranking_accuracy(predicted, actual);
      accuracy_sum += *w.pairwise_accuracy;
      ++summary.pairwise_workloads;
      summary.pairs += differing;
    }
    if (indices.size() >= 3 && differing > 0) {
      w.spearman = spearman_correlation(predicted, actual);
      spearman_sum += *w.spearman;
      ++summary.spearman_workloads;
    }
    summary.workloads.push_back(w);
  }
  if (summary.pairwise_workloads > 0) summary.pairwise_accuracy = accuracy_sum / summary.pairwise_workloads;
  if (summary.spearman_workloads > 0) summary.spearman = spearman_sum / summary.spearman_workloads;
  summary.available = true;
  return summary;
}

std::string now_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

}  // namespace

std::string workload_ops(const std::string &workload_text) {
  auto rebuilt = graph_from_workload_text(workload_text);
  return rebuilt.ok() ? group_ops_text(*rebuilt->graph, rebuilt->group) : "";
}

std::string workload_output_type(const std::string &workload_text) {
  auto rebuilt = graph_from_workload_text(workload_text);
  return rebuilt.ok() ? output_type_of_group(*rebuilt->graph, rebuilt->group) : "";
}

std::vector<double> running_best_curve(const std::vector<std::optional<double>> &seconds, int64_t flops) {
  std::vector<double> curve;
  double best = kNaN;
  for (const std::optional<double> &s : seconds) {
    if (s && *s > 0) {
      const double value = flops > 0 ? static_cast<double>(flops) / *s / 1e9 : *s * 1e3;
      if (std::isnan(best) || (flops > 0 ? value > best : value < best)) best = value;
    }
    curve.push_back(best);
  }
  return curve;
}

ModelCurve model_curve(const std::vector<ReportTask> &tasks, const std::vector<TuningRecord> &records) {
  ModelCurve curve;
  std::map<std::string, size_t> task_of;
  for (size_t i = 0; i < tasks.size(); ++i) task_of.emplace(tasks[i].workload_key, i);
  // Each task starts from its built-in time in these records (the last ok one, as
  // summarize_records reads it), so a compared database is read on its own terms.
  std::vector<double> best(tasks.size(), std::numeric_limits<double>::infinity());
  for (const TuningRecord &r : records) {
    auto found = task_of.find(r.workload_key);
    if (found != task_of.end() && r.schedule_hash == kBuiltinScheduleHash && r.status == RecordStatus::Ok &&
        r.median_seconds)
      best[found->second] = *r.median_seconds;
  }
  curve.complete = !tasks.empty() && std::all_of(best.begin(), best.end(), [](double b) { return std::isfinite(b); });
  auto latency_ms = [&] {
    double sum = 0;
    for (size_t i = 0; i < tasks.size(); ++i)
      if (std::isfinite(best[i])) sum += tasks[i].weight * best[i];
    return sum * 1e3;
  };
  int trials = 0;
  curve.trials.push_back(0);
  curve.latency_ms.push_back(latency_ms());
  for (const TuningRecord &r : records) {
    auto found = task_of.find(r.workload_key);
    if (found == task_of.end() || r.schedule_hash == kBuiltinScheduleHash) continue;
    ++trials;
    if (r.status == RecordStatus::Ok && r.median_seconds) best[found->second] = std::min(best[found->second], *r.median_seconds);
    curve.trials.push_back(trials);
    curve.latency_ms.push_back(latency_ms());
  }
  return curve;
}

std::optional<int64_t> parse_utc_timestamp(const std::string &text) {
  std::tm tm{};
  int year, month, day, hour, minute, second;
  char z = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &year, &month, &day, &hour, &minute, &second, &z) != 7 ||
      z != 'Z')
    return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm));
}

Result<ReportData> collect_report_data(const TuningDatabase &db, const ReportDataOptions &options) {
  auto all = db.records_for_target(options.target);
  if (!all.ok()) return all.error();
  const std::vector<TuningRecord> &records = all.value();
  if (records.empty()) {
    std::string targets;
    if (auto stats = db.stats(); stats.ok())
      for (const TargetStats &t : stats->per_target) targets += (targets.empty() ? "" : ", ") + ("'" + t.target + "'");
    return make_error(ErrorKind::NotFound,
                      options.db_path + " has no records for target '" + options.target + "'" +
                      (targets.empty() ? " (it has no records at all)" : " (it has records for " + targets + ")"));
  }

  ReportData data;
  data.db_path = options.db_path;
  data.model_path = options.model_path;
  data.target = options.target;
  data.generated_at = now_utc();
  data.records = static_cast<int64_t>(records.size());
  for (RecordStatus s : all_record_statuses()) data.records_by_status[s] = 0;
  std::map<std::string, std::vector<const TuningRecord *>> by_workload;
  std::vector<std::string> workload_order;  // first record first
  std::set<std::string> machines;
  std::optional<int64_t> first_time, last_time;
  for (const TuningRecord &r : records) {
    ++data.records_by_status[r.status];
    auto &list = by_workload[r.workload_key];
    if (list.empty()) workload_order.push_back(r.workload_key);
    list.push_back(&r);
    if (!r.machine.empty()) machines.insert(r.machine);
    if (auto t = parse_utc_timestamp(r.created_at)) {
      if (!first_time || *t < *first_time) first_time = *t, data.first_record_at = r.created_at;
      if (!last_time || *t > *last_time) last_time = *t, data.last_record_at = r.created_at;
    }
  }
  data.workloads = static_cast<int64_t>(by_workload.size());
  if (first_time && last_time) data.span_seconds = static_cast<double>(*last_time - *first_time);
  for (const std::string &m : machines) data.machine += (data.machine.empty() ? "" : " / ") + m;

  // The tasks, and where each one's graph comes from.
  std::vector<TaskSource> sources;
  if (options.model) {
    const Graph &graph = *options.model;
    // The tasks the tuner tunes: not the Concats an artifact does in place.
    for (const Workload &t : distinct_workloads(graph, groups_with_steps(graph, partition_graph(graph)))) {
      ReportTask task;
      task.index = static_cast<int>(data.tasks.size());
      task.workload_key = t.workload_key;
      task.workload_text = t.workload_text;
      task.ops = group_ops_text(graph, t.group);
      task.output_type = output_type_of_group(graph, t.group);
      task.weight = t.weight;
      task.flops = t.flops;
      data.tasks.push_back(task);
      sources.push_back({options.model, t.group});
    }
  } else {
    bool rebuilt_all = true;
    for (const std::string &key : workload_order) {
      ReportTask task;
      task.index = static_cast<int>(data.tasks.size());
      task.workload_key = key;
      auto text = db.workload_text(key);
      if (text.ok() && text.value()) task.workload_text = *text.value();
      TaskSource source;
      if (auto rebuilt = graph_from_workload_text(task.workload_text); rebuilt.ok()) {
        const WorkloadGraph &w = rebuilt.value();
        const std::vector<Workload> tasks = distinct_workloads(*w.graph, {w.group});
        if (!tasks.empty()) task.flops = tasks.front().flops;
        task.ops = group_ops_text(*w.graph, w.group);
        task.output_type = output_type_of_group(*w.graph, w.group);
        source = {w.graph, w.group};
      }
      if (!source.graph) rebuilt_all = false;
      data.tasks.push_back(task);
      sources.push_back(source);
    }
    // Without the graph a task has no FLOPs (its curve is in ms) and no loop nest.
    if (!rebuilt_all)
      data.notes.push_back("Some workloads could not be rebuilt from their workload text: their curves show latency "
                           "(ms, lower is better) and their loop nests are missing. Pass --model to rebuild them from the model.");
  }

  for (size_t i = 0; i < data.tasks.size(); ++i) {
    ReportTask &task = data.tasks[i];
    auto found = by_workload.find(task.workload_key);
    if (found != by_workload.end()) summarize_records(task, found->second);
    if (!task.best) continue;
    if (task.best->schedule_text.empty()) continue;  // the built-in schedule: nothing to replay
    if (!sources[i].graph) {
      task.loop_nest_error = "the workload text does not rebuild the task; pass --model";
      continue;
    }
    auto nest = render_loop_nest(sources[i], task.best->schedule_text);
    if (nest.ok()) task.loop_nest = nest.value();
    else task.loop_nest_error = nest.error().message;
  }
  if (options.model) {
    int without = 0;
    for (const ReportTask &t : data.tasks) without += t.records == 0;
    if (without > 0)
      data.notes.push_back(std::to_string(without) + " of the model's " + std::to_string(data.tasks.size()) +
                           " tasks have no record for this target.");
  }
  data.model_curve = model_curve(data.tasks, records);
  if (options.predict) data.prediction = predict_held_out(db, records, options);
  else data.prediction.note = "not computed";
  return data;
}

}  // namespace tessel
