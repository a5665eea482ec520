#include "tuner/in_graph_selection.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "base/child_process.h"
#include "deploy/module.h"
#include "executor/model_inputs.h"
#include "tuner/tune_model.h"

namespace tessel {
namespace {

/// How a schedule splits its work across threads: its parallel steps, loop names and all.
/// Names encode which axes were fused in which order, not the tile sizes.
std::string parallel_signature(const std::string &schedule_text) {
  std::istringstream in(schedule_text);
  std::string line, signature;
  while (std::getline(in, line))
    if (line.rfind("parallel ", 0) == 0) signature += line + "\n";
  return signature;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Trial {
 public:
  Trial(Module module, std::vector<Tensor> inputs) : module_(std::move(module)), inputs_(std::move(inputs)) {}

  void use(const TaskAlternatives &task, size_t alternative) {
    const KernelAlternative &alt = task.alternatives[alternative];
    for (size_t i = 0; i < task.steps.size(); ++i) module_.use_kernel(task.steps[i], alt.symbols[i]);
  }

  /// Per run, the summed time of kernel calls `calls` (all of them when empty).
  std::vector<double> run(int runs, const std::vector<int> &calls) {
    module_.clear_kernel_times();
    for (int r = 0; r < runs; ++r) module_.run(inputs_);
    std::vector<double> sums(static_cast<size_t>(runs), 0.0);
    const std::vector<KernelTimes> times = module_.kernel_times();
    auto add = [&](const KernelTimes &k) {
      for (size_t r = 0; r < sums.size() && r < k.ms.size(); ++r) sums[r] += k.ms[r];
    };
    if (calls.empty())
      for (const KernelTimes &k : times) add(k);
    else
      for (int c : calls) add(times[static_cast<size_t>(c)]);
    return sums;
  }

  /// Per kernel call, its median time over `runs` runs.
  std::vector<double> call_medians(int runs) {
    module_.clear_kernel_times();
    for (int r = 0; r < runs; ++r) module_.run(inputs_);
    std::vector<double> out;
    for (const KernelTimes &k : module_.kernel_times()) out.push_back(median(k.ms));
    return out;
  }

  int kernel_count() const { return module_.kernel_count(); }
  std::vector<Tensor> outputs() { return module_.run(inputs_); }

 private:
  Module module_;
  std::vector<Tensor> inputs_;
};

/// Whether two runs' outputs agree: floats within 1e-4 relative L2 (schedules reorder
/// sums), everything else exactly.
bool outputs_agree(const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != b[i].dtype() || a[i].shape() != b[i].shape()) return false;
    if (a[i].dtype() != DType::Float32) {
      if (std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0) return false;
      continue;
    }
    const float *x = static_cast<const float *>(a[i].data()), *y = static_cast<const float *>(b[i].data());
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < a[i].numel(); ++k) {
      diff += (double(x[k]) - y[k]) * (double(x[k]) - y[k]);
      norm += double(y[k]) * y[k];
    }
    if (!(diff <= 1e-8 * std::max(norm, 1e-30))) return false;  // also false for NaN
  }
  return true;
}

// What the measuring child tells its parent, in order: which alternative it is about to
// run (so that a crash or hang names it), which ones computed something else, and at the
// end the median per alternative.
enum class Message : char { Trying = 'T', Wrong = 'W', Medians = 'M' };

void send(ParentLink &parent, Message m, uint32_t index) {
  char buffer[5];
  buffer[0] = static_cast<char>(m);
  std::memcpy(buffer + 1, &index, 4);
  parent.send(std::string_view(buffer, sizeof(buffer)));
}

/// The child's work: check every alternative's outputs against the current schedule's,
/// then time the calls `calls` under each in interleaved rounds. Returns the medians message.
std::string measure_and_report(Trial &trial, const TaskAlternatives &task, const std::vector<int> &calls,
                               const InGraphSelectionOptions &options, const std::vector<std::string> &excluded,
                               ParentLink &parent) {
  const size_t n = task.alternatives.size();
  std::vector<bool> skip(n);
  for (size_t a = 0; a < n; ++a) skip[a] = !excluded[a].empty();
  send(parent, Message::Trying, 0);
  trial.use(task, 0);
  const std::vector<Tensor> reference = trial.outputs();
  for (size_t a = 1; a < n; ++a) {
    if (skip[a]) continue;
    send(parent, Message::Trying, static_cast<uint32_t>(a));
    trial.use(task, a);
    if (!outputs_agree(trial.outputs(), reference)) {
      send(parent, Message::Wrong, static_cast<uint32_t>(a));
      skip[a] = true;
    }
  }
  std::vector<std::vector<double>> samples(n);
  for (int round = 0; round < options.rounds; ++round)
    for (size_t i = 0; i < n; ++i) {
      const size_t a = (i + static_cast<size_t>(round)) % n;  // rotate who goes first
      if (skip[a]) continue;
      send(parent, Message::Trying, static_cast<uint32_t>(a));
      trial.use(task, a);
      std::vector<double> sums = trial.run(options.runs_per_round, calls);
      samples[a].insert(samples[a].end(), sums.begin(), sums.end());
    }
  std::vector<double> medians(n, std::numeric_limits<double>::infinity());
  for (size_t a = 0; a < n; ++a)
    if (!skip[a]) medians[a] = median(samples[a]);
  std::string message(1, static_cast<char>(Message::Medians));
  message.append(reinterpret_cast<const char *>(medians.data()), n * sizeof(double));
  return message;
}

/// What the child's messages say: the alternative it tried last, the ones that computed
/// something else (noted in `excluded`), and the medians if it got that far.
struct ChildReport {
  size_t trying = 0;
  std::vector<double> medians;
};

ChildReport replay(const std::string &received, size_t n, std::vector<std::string> &excluded) {
  ChildReport report;
  size_t at = 0;
  while (at < received.size()) {
    const Message m = static_cast<Message>(received[at]);
    if (m == Message::Medians) {
      if (received.size() - at - 1 < n * sizeof(double)) break;
      report.medians.resize(n);
      std::memcpy(report.medians.data(), received.data() + at + 1, n * sizeof(double));
      at += 1 + n * sizeof(double);
      continue;
    }
    if (received.size() - at < 5) break;
    uint32_t index = 0;
    std::memcpy(&index, received.data() + at + 1, 4);
    at += 5;
    if (index >= n) break;
    if (m == Message::Trying) report.trying = index;
    if (m == Message::Wrong) excluded[index] = "its outputs differ from the fastest schedule's";
  }
  return report;
}

/// Why a measuring child gave no medians, said of the alternative it was running.
std::string why_no_result(const ChildExit &exit, double budget_s) {
  switch (exit.kind) {
    case ChildExit::Kind::TimedOut:
      return "hung (no result after " + std::to_string(static_cast<int>(budget_s)) + " s)";
    case ChildExit::Kind::Signaled: return "crashed: " + exit.describe();
    default: return "failed (" + exit.describe() + ")";
  }
}

/// Times the task's alternatives in a forked child, so that a schedule that crashes or
/// hangs in the graph costs only itself: it is noted in `excluded` and the child runs
/// again without it. Alternative 0 (the tuner's fastest) failing is an error.
Result<std::vector<double>> measure_in_child(Trial &trial, const TaskAlternatives &task, const std::vector<int> &calls,
                                             const InGraphSelectionOptions &options, double run_ms,
                                             std::vector<std::string> &excluded) {
  const size_t n = task.alternatives.size();
  const double budget_s =
      options.child_timeout_seconds > 0
          ? options.child_timeout_seconds
          : 30.0 + 50.0 * static_cast<double>(n) * (options.rounds * options.runs_per_round + 2) * run_ms / 1e3;
  const std::function<std::string(ParentLink &)> measure = [&](ParentLink &parent) {
    return measure_and_report(trial, task, calls, options, excluded, parent);
  };
  for (;;) {
    auto child = run_in_child(measure, budget_s);
    if (!child.ok()) return child.error().with_context("in-graph selection");
    const ChildReport report = replay(child->output, n, excluded);
    if (child->exit.finished() && report.medians.size() == n) return report.medians;
    const std::string why = why_no_result(child->exit, budget_s);
    if (report.trying == 0)
      return make_error(child->exit.kind == ChildExit::Kind::TimedOut ? ErrorKind::Timeout : ErrorKind::Crash,
                        "in-graph selection: " + task.ops + " (" + task.workload_key + ") with its fastest record " +
                            task.alternatives[0].schedule.schedule_hash + " " + why);
    excluded[report.trying] = why;
  }
}

std::string describe(const TaskAlternatives &task, const TaskSelection &s) {
  char line[320];
  std::snprintf(line, sizeof(line), "%-28s %s: %zu schedules; in the graph %.4f ms with the fastest alone (%.4f ms)",
                task.ops.c_str(), task.workload_key.c_str(), task.alternatives.size(), s.affected_ms[0], s.alone_ms[0]);
  std::string text = line;
  if (s.chosen == 0) return text + ", kept";
  std::snprintf(line, sizeof(line), " -> %.4f ms with %s (%.4f ms alone)", s.affected_ms[s.chosen],
                task.alternatives[s.chosen].schedule.schedule_hash.c_str(), s.alone_ms[s.chosen]);
  return text + line;
}

}  // namespace

std::vector<DeployedSchedule> alternatives_to_try(const std::vector<TuningRecord> &fastest_first, int k,
                                                  double max_slowdown) {
  std::vector<const TuningRecord *> picked;
  std::set<std::string> signatures;
  if (fastest_first.empty() || k <= 0) return {};
  const double limit = fastest_first.front().median_seconds.value_or(0) * max_slowdown;
  auto worth = [&](const TuningRecord &r) { return r.median_seconds && *r.median_seconds <= limit; };
  // First the fastest of every way to split the work, then the fastest of the rest.
  for (const TuningRecord &r : fastest_first)
    if (static_cast<int>(picked.size()) < k && worth(r) && signatures.insert(parallel_signature(r.schedule_text)).second)
      picked.push_back(&r);
  for (const TuningRecord &r : fastest_first)
    if (static_cast<int>(picked.size()) < k && worth(r) && std::find(picked.begin(), picked.end(), &r) == picked.end())
      picked.push_back(&r);
  // The built-in schedule always, in place of the last pick if need be, however it timed
  // alone: it is what an untuned model runs, and the tuner's records, timed alone and cold,
  // lost to it inside models (MNASNet, MobileNet-V3-large and ResNet-18 ran faster untuned
  // than with their best records, bench/results/e2e.md).
  const auto builtin = std::find_if(fastest_first.begin(), fastest_first.end(),
                                    [](const TuningRecord &r) { return r.schedule_hash == kBuiltinScheduleHash; });
  if (builtin != fastest_first.end() && std::find(picked.begin(), picked.end(), &*builtin) == picked.end()) {
    if (static_cast<int>(picked.size()) < k) picked.push_back(&*builtin);
    else if (k >= 2) picked.back() = &*builtin;
  }
  std::sort(picked.begin(), picked.end(), [&](const TuningRecord *a, const TuningRecord *b) {
    return (a - fastest_first.data()) < (b - fastest_first.data());
  });
  std::vector<DeployedSchedule> out;
  for (const TuningRecord *r : picked) out.push_back({r->schedule_text, r->schedule_hash, r->median_seconds});
  return out;
}

Result<InGraphSelection> select_in_graph(const std::string &trial_artifact, const std::vector<TaskAlternatives> &tasks,
                                         const InGraphSelectionOptions &options) {
  auto log = [&](const std::string &line) {
    if (options.log) options.log(line);
  };
  ModuleOptions module_options;
  module_options.threads = options.threads;
  module_options.profile = true;
  std::vector<Tensor> inputs;
  Result<Trial> trial = make_error("");
  try {
    Module module = Module::load(trial_artifact, module_options);
    for (size_t i = 0; i < module.inputs().size(); ++i) {
      const TensorDesc &d = module.inputs()[i];
      inputs.push_back(random_tensor(TensorType{d.dtype, d.shape}, 1000 + i));
    }
    trial = Trial(std::move(module), std::move(inputs));
    for (int r = 0; r < 3; ++r) trial->run(options.runs_per_round, {});  // warm up
  } catch (const ModuleError &e) {
    return make_error(std::string("in-graph selection: ") + e.what());
  }

  // Every task's calls, and which calls its schedule affects: its own, and the next call
  // after each (the consumer that reads what it wrote, most often).
  const int calls = trial->kernel_count();
  std::vector<double> task_ms(tasks.size(), 0.0);
  double run_ms = 0;
  {
    const std::vector<double> per_call = trial->call_medians(options.rounds * options.runs_per_round);
    for (double ms : per_call) run_ms += ms;
    for (size_t t = 0; t < tasks.size(); ++t)
      for (int s : tasks[t].steps) task_ms[t] += per_call[static_cast<size_t>(s)];
  }
  std::vector<size_t> order(tasks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return task_ms[a] > task_ms[b]; });

  InGraphSelection result;
  std::vector<size_t> chosen(tasks.size(), 0);
  for (size_t t : order) {
    const TaskAlternatives &task = tasks[t];
    if (task.alternatives.size() < 2) continue;
    std::set<int> affected;
    for (int s : task.steps) {
      affected.insert(s);
      if (s + 1 < calls) affected.insert(s + 1);
    }
    const std::vector<int> affected_calls(affected.begin(), affected.end());
    std::vector<std::string> excluded(task.alternatives.size());
    TESSEL_TRY(std::vector<double> affected_ms,
               measure_in_child(*trial, task, affected_calls, options, run_ms, excluded));
    TaskSelection selection{task.workload_key, task.ops, 0, std::move(affected_ms), {}, excluded};
    for (const KernelAlternative &alt : task.alternatives)
      selection.alone_ms.push_back(alt.schedule.median_seconds.value_or(0) * 1e3);
    for (size_t a = 0; a < excluded.size(); ++a)
      if (!excluded[a].empty())
        log(task.ops + " " + task.workload_key + ": schedule " + task.alternatives[a].schedule.schedule_hash +
            " left out: " + excluded[a]);
    const std::vector<double> &ms = selection.affected_ms;
    const size_t fastest = static_cast<size_t>(std::min_element(ms.begin(), ms.end()) - ms.begin());
    if (ms[fastest] < ms[0] * (1.0 - options.min_gain)) selection.chosen = fastest;
    chosen[t] = selection.chosen;
    trial->use(task, selection.chosen);
    log(describe(task, selection));
    result.tasks.push_back(std::move(selection));
  }

  try {
    // Whole runs, every task at its fastest-alone schedule against the chosen ones, interleaved.
    std::vector<double> before, after;
    for (int round = 0; round < options.rounds; ++round) {
      for (const TaskAlternatives &task : tasks)
        if (!task.alternatives.empty()) trial->use(task, 0);
      std::vector<double> b = trial->run(options.runs_per_round, {});
      before.insert(before.end(), b.begin(), b.end());
      for (size_t t = 0; t < tasks.size(); ++t)
        if (!tasks[t].alternatives.empty()) trial->use(tasks[t], chosen[t]);
      std::vector<double> a = trial->run(options.runs_per_round, {});
      after.insert(after.end(), a.begin(), a.end());
    }
    result.latency_before_ms = median(before);
    result.latency_after_ms = median(after);
  } catch (const ModuleError &e) {
    return make_error(std::string("in-graph selection: ") + e.what());
  }
  return result;
}

Result<InGraphChoice> select_schedules_in_graph(const Graph &graph, const ArtifactCompileOptions &base,
                                                const std::shared_ptr<BestRecordSource> &source, int k,
                                                const std::string &trial_path, const InGraphSelectionOptions &options) {
  const std::string target = base.target.to_string();
  ArtifactCompileOptions trial = base;
  trial.alternatives = [source, target, k](const std::string &key) -> Result<std::vector<DeployedSchedule>> {
    TESSEL_TRY(auto records, source->fastest(key, target, 400));
    return alternatives_to_try(records, k);
  };
  TESSEL_TRY(auto compiled, compile_artifact(graph, trial, trial_path));
  auto selection = select_in_graph(trial_path, compiled.alternatives, options);
  std::error_code ec;
  std::filesystem::remove_all(trial_path, ec);
  if (!selection.ok()) return selection.error();
  std::map<std::string, DeployedSchedule> chosen;
  for (const TaskSelection &s : selection->tasks)
    for (const TaskAlternatives &task : compiled.alternatives)
      if (task.workload_key == s.workload_key) chosen[s.workload_key] = task.alternatives[s.chosen].schedule;
  DeployScheduleLookup best = base.schedules;
  InGraphChoice choice;
  choice.latency_before_ms = selection->latency_before_ms;
  choice.latency_after_ms = selection->latency_after_ms;
  choice.schedules = [chosen = std::move(chosen), best](const std::string &key) -> Result<std::optional<DeployedSchedule>> {
    auto it = chosen.find(key);
    if (it != chosen.end()) return std::optional<DeployedSchedule>(it->second);
    return best(key);
  };
  return choice;
}

}  // namespace tessel
