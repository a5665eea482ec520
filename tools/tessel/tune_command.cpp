// `tessel tune model.onnx --target llvm --trials 2000`: search schedules for every task of a
// model, recording every measurement in the tuning database.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "base/cache_eviction.h"
#include "codegen/cuda_device.h"
#include "tools/tessel/commands.h"
#include "tuner/benchmark_problems.h"
#include "tuner/tune_model.h"

namespace tessel {

namespace {

/// Tuning for a GPU measures on this machine's: it must be the one the target names (an
/// unnamed architecture becomes that GPU's). With --remote the workers measure, on their
/// GPUs, for the architecture the target names.
Result<void> check_tuning_device(Target &target, bool remote) {
  if (target.kind != Target::Kind::Cuda || remote) return {};
  auto device = name_device_architecture(target);
  if (!device.ok())
    return make_error(ErrorKind::Unsupported,
                      "tuning for --target cuda measures on a CUDA GPU, and none is usable here: " + device.error().message);
  const std::string arch = "sm_" + std::to_string(device->capability());
  if (target.mcpu != arch)
    return make_error(ErrorKind::InvalidInput, "--target names " + target.mcpu + " but this machine's GPU is " +
                                                   device->describe() + "; tuning measures on it");
  std::fprintf(stderr, "GPU: %s\n", device->describe().c_str());
  return {};
}

/// The model, or the one-kernel graph of --op and --shape, optimized as the flags say.
Result<Graph> tuning_graph(const TuneCommandOptions &options) {
  if (options.op.empty()) return load_optimized_model(options.model_path, options.optimize);
  TESSEL_TRY(auto kernel, make_benchmark_graph(options.op, options.shape));
  return optimize_as_told(*kernel, options.optimize);
}

/// A database holds one way of timing per target: a candidate already measured warm could not
/// be recorded again cold (records are unique per schedule), and the two sets of times do
/// not compare. Refuses a tune whose timing differs from the records already there.
Result<void> check_one_timing_per_target(const TuningDatabase &db, const std::string &target, bool cold) {
  TESSEL_TRY(const DatabaseStats stats, db.stats());
  for (const TargetStats &measured : stats.per_machine) {
    if (measured.target != target || measured.records == 0) continue;
    TuningRecord probe;
    probe.machine = measured.machine;
    if (timed_cold(probe) == cold) continue;
    return make_error(ErrorKind::InvalidInput,
                      db.location() + " holds " + std::to_string(measured.records) + " records of " + target + " timed " +
                          (cold ? "with warm caches" : "with --cold-weights") + "; tune " +
                          (cold ? "with --cold-weights" : "without it") +
                          " into another database (--db), or with the same timing as they were");
  }
  return {};
}

/// TuneOptions from the flags.
TuneOptions tune_options(const TuneCommandOptions &options) {
  TuneOptions tune;
  tune.threads = options.threads;
  tune.trials = options.trials;
  tune.time_budget_seconds = options.time_budget_seconds;
  // A round keeps every builder busy (16 cores: 16 candidates), never fewer than 8.
  tune.batch = options.batch > 0 ? options.batch
                                 : std::max(8, options.jobs > 0 ? options.jobs : static_cast<int>(std::thread::hardware_concurrency()));
  tune.seed = options.seed;
  tune.transfer = options.transfer;
  tune.pretrained_cost_model = options.cost_model;
  tune.remote = options.remote;
  tune.queue.give_up_seconds = options.remote_give_up_seconds;
  tune.measure.jobs = options.jobs;
  if (options.timeout_ms > 0) tune.measure.run_timeout_seconds = options.timeout_ms / 1e3;
  if (options.min_repeat_ms > 0) tune.measure.timing.min_seconds = options.min_repeat_ms / 1e3;
  tune.measure.timing.cold_constants = options.cold_weights;
  return tune;
}

/// Progress on stderr, through the tuner's log and round callbacks.
void show_progress(const TuneCommandOptions &options, TuneOptions &tune) {
  // On a terminal one status line is redrawn (trials, the round's task, estimated model
  // latency, ETA); otherwise every round is a plain log line.
  const bool terminal = ::isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<std::string>();
  tune.log = [terminal, last](const std::string &line) {
    std::string &last_line = *last;
    if (!terminal || line.empty() || line[0] != '[') {
      std::fprintf(stderr, "%s%s\n", terminal && !last_line.empty() ? "\n" : "", line.c_str());
      last_line.clear();
      return;
    }
    last_line = line.substr(0, line.find("; round:"));
  };
  tune.on_round = [terminal, start, last, trials = options.trials](int done, double latency_seconds) {
    const std::string &last_line = *last;
    if (!terminal) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta = done > 0 ? elapsed / done * (trials - done) : 0;
    // The round's own line arrives after on_round: show the previous one with the totals.
    std::fprintf(stderr, "\r\033[K%d/%d trials, %.0f s elapsed, ETA %.0f s, model latency %.3f ms | %s", done,
                 trials, elapsed, eta, latency_seconds * 1e3, last_line.substr(0, 90).c_str());
    std::fflush(stderr);
  };
  tune.queue.log = [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

void print_tune_summary(const TuneSummary &summary, const std::string &db_location) {
  std::printf("%-16s %-28s %6s %7s %12s %12s %8s %10s %7s\n", "key", "ops", "weight", "trials", "built-in ms", "best ms",
              "speedup", "GFLOP/s", "share");
  double total_best = 0;
  for (const TaskTuneSummary &t : summary.tasks)
    if (t.skipped.empty()) total_best += t.weight * std::min(t.best_seconds > 0 ? t.best_seconds : t.builtin_seconds, t.builtin_seconds);
  double before = 0, after = 0;
  for (const TaskTuneSummary &t : summary.tasks) {
    std::string ops = t.ops.size() > 28 ? t.ops.substr(0, 25) + "..." : t.ops;
    if (!t.skipped.empty()) {
      std::printf("%-16s %-28s %6d  skipped: %s\n", t.workload_key.c_str(), ops.c_str(), t.weight, t.skipped.c_str());
      continue;
    }
    const double best = t.best_seconds > 0 ? t.best_seconds : t.builtin_seconds;
    before += t.weight * t.builtin_seconds;
    after += t.weight * std::min(best, t.builtin_seconds);
    const double deployed = std::min(best, t.builtin_seconds);
    std::printf("%-16s %-28s %6d %7d %12.3f %12.3f %7.2fx %10.1f %6.1f%%\n", t.workload_key.c_str(), ops.c_str(), t.weight,
                t.trials, t.builtin_seconds * 1e3, best * 1e3, best > 0 ? t.builtin_seconds / best : 0.0,
                deployed > 0 ? t.flops / deployed / 1e9 : 0.0, total_best > 0 ? 100.0 * t.weight * deployed / total_best : 0.0);
  }
  std::printf("\n%d candidates measured (%d failed) in %.1f s; sum of task latencies %.3f ms built-in -> %.3f ms tuned "
              "(%.2fx); records in %s\n",
              summary.measured, summary.failed, summary.wall_seconds, before * 1e3, after * 1e3,
              after > 0 ? before / after : 0.0, db_location.c_str());
  if (summary.other_machine > 0)
    std::printf("%d results came from workers on another machine than their task's reference: recorded, not compared "
                "(`tessel db stats` counts records per machine)\n", summary.other_machine);
  if (const int transferred = summary.transferred_tasks(); transferred > 0) {
    int best = 0;
    for (const TaskTuneSummary &t : summary.tasks) best += t.best_transferred;
    std::printf("%d of %zu tasks started from schedules transferred from relatives in the database; for %d of them "
                "a transferred schedule is still the best\n",
                transferred, summary.tasks.size(), best);
  }
  if (summary.measured > 0) {
    const TuneTimeSplit &time = summary.time;
    const double per_trial = 1e3 / summary.measured;
    const double measure_rest = time.measure - time.phases.build - time.phases.lock_wait - time.phases.run;
    std::printf("time: %.1f s preparing tasks and references; per trial %.0f ms = search %.0f + measure %.0f "
                "(build %.0f, host-lock wait %.0f, verify+time %.0f, other %.0f) + record %.0f + train %.0f\n",
                time.prepare, summary.wall_seconds > time.prepare ? (summary.wall_seconds - time.prepare) * per_trial : 0.0,
                time.search * per_trial, time.measure * per_trial, time.phases.build * per_trial,
                time.phases.lock_wait * per_trial, time.phases.run * per_trial,
                std::max(0.0, measure_rest) * per_trial, time.record * per_trial, time.train * per_trial);
  }
  std::printf("%.2f trials/s; share = the task's part of the tuned model latency (weight x best)\n",
              summary.measured / std::max(summary.wall_seconds, 1e-9));
}

}  // namespace

int tune_command(const TuneCommandOptions &options) {
  auto target = parse_target(options.target);
  if (!target.ok()) return fail(target.error().message);
  if (options.cold_weights && target->kind == Target::Kind::Cuda)
    return fail("--cold-weights evicts the host CPU's caches; it does not apply to --target cuda");
  if (options.cold_weights && options.remote)
    return fail("--cold-weights times candidates in this process's workers; `tessel worker`s do not take it yet");
  if (options.cold_weights && !cache_eviction_supported())
    return fail("--cold-weights needs a CPU whose caches tessel can evict (x86-64)");
  if (auto device = check_tuning_device(target.value(), options.remote); !device.ok())
    return fail(device.error().message);
  if (options.trials < 1) return fail("--trials must be at least 1");
  if (options.model_path.empty() == options.op.empty())
    return fail("tune takes a model, or --op with --shape for one kernel (not both)");
  if (!options.op.empty() && options.shape.empty()) return fail("--op needs --shape");
  auto graph = tuning_graph(options);
  if (!graph.ok()) return fail(graph.error().message);
  auto db = TuningDatabase::open(options.db_path);
  if (!db.ok()) return fail(db.error().message);
  if (auto one = check_one_timing_per_target(db.value(), target->to_string(), options.cold_weights); !one.ok())
    return fail(one.error().message);
  TuneOptions tune = tune_options(options);
  show_progress(options, tune);
  const bool terminal = ::isatty(STDERR_FILENO);
  auto summary = tune_model(graph.value(), target.value(), db.value(), tune);
  if (terminal) std::fprintf(stderr, "\n");
  if (!summary.ok()) return fail(summary.error().message);

  print_tune_summary(summary.value(), db->location());
  // Nothing could be tuned (on a GPU, typically: no kernel runs there): an error, not a
  // successful run with an empty table.
  const bool all_skipped =
      !summary->tasks.empty() && std::all_of(summary->tasks.begin(), summary->tasks.end(),
                                             [](const TaskTuneSummary &t) { return !t.skipped.empty(); });
  if (all_skipped)
    return fail("no task could be tuned (" + std::to_string(summary->tasks.size()) + " skipped; the first: " +
                summary->tasks.front().skipped + ")");
  return 0;
}

}  // namespace tessel
