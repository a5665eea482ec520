// `tessel tune model.onnx --target llvm --trials 2000`: search schedules for every task of a
// model, recording every measurement in the tuning database.
#include <cstdio>
#include <cstdlib>

#include "tools/commands.h"
#include "tuner/tune_model.h"

namespace tessel {

int tune_command(const TuneCommandOptions &options) {
  if (options.threads > 0) setenv("HL_NUM_THREADS", std::to_string(options.threads).c_str(), 1);
  auto target = parse_target(options.target);
  if (!target.ok()) return fail(target.error().message);
  if (target->kind != Target::Kind::Host)
    return fail("tuning for --target cuda needs the CUDA measurement path, which this build does not have yet");
  if (options.trials < 1) return fail("--trials must be at least 1");
  auto graph = load_optimized_model(options.model_path, options.optimize);
  if (!graph.ok()) return fail(graph.error().message);
  auto db = TuningDatabase::open(options.db_path);
  if (!db.ok()) return fail(db.error().message);

  TuneOptions tune;
  tune.trials = options.trials;
  tune.batch = options.batch;
  tune.seed = options.seed;
  tune.measure.jobs = options.jobs;
  tune.log = [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  auto summary = tune_model(graph.value(), target.value(), db.value(), tune);
  if (!summary.ok()) return fail(summary.error().message);

  std::printf("%-16s %-28s %6s %7s %12s %12s %8s\n", "key", "ops", "weight", "trials", "built-in ms", "best ms", "speedup");
  double before = 0, after = 0;
  for (const TaskTuneSummary &t : summary->tasks) {
    std::string ops = t.ops.size() > 28 ? t.ops.substr(0, 25) + "..." : t.ops;
    if (!t.skipped.empty()) {
      std::printf("%-16s %-28s %6d  skipped: %s\n", t.workload_key.c_str(), ops.c_str(), t.weight, t.skipped.c_str());
      continue;
    }
    const double best = t.best_seconds > 0 ? t.best_seconds : t.builtin_seconds;
    before += t.weight * t.builtin_seconds;
    after += t.weight * std::min(best, t.builtin_seconds);
    std::printf("%-16s %-28s %6d %7d %12.3f %12.3f %7.2fx\n", t.workload_key.c_str(), ops.c_str(), t.weight, t.trials,
                t.builtin_seconds * 1e3, best * 1e3, best > 0 ? t.builtin_seconds / best : 0.0);
  }
  std::printf("\n%d candidates measured (%d failed) in %.1f s; sum of task latencies %.3f ms built-in -> %.3f ms tuned "
              "(%.2fx); records in %s\n",
              summary->measured, summary->failed, summary->wall_seconds, before * 1e3, after * 1e3,
              after > 0 ? before / after : 0.0, options.db_path.c_str());
  return 0;
}

}  // namespace tessel
