// `tessel run model.onnx`: execute a model node by node with untuned kernels.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "base/json.h"
#include "base/spin_pool.h"
#include "executor/graph_executor.h"
#include "executor/kernel_cache.h"
#include "executor/model_inputs.h"
#include "graph/onnx/onnx_import.h"
#include "tensor/input_limit.h"
#include "tools/tessel/commands.h"
#include "tools/tessel/output_files.h"
#include "tuning_db/database_location.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

int64_t max_input_bytes(const RunOptions &options) {
  return options.max_input_bytes > 0 ? options.max_input_bytes : default_max_input_bytes();
}

namespace {

/// What one `tessel run model.onnx` measured.
struct ModelRun {
  std::vector<Tensor> outputs;
  std::vector<std::string> written;  // output files, when --output-dir was given
  double first_run_ms = 0, median_ms = 0;
  std::vector<double> times_ms;  // the --repeat runs, sorted
};

/// The best tuned schedules of --db for the executor (the database read only).
Result<std::shared_ptr<TuningDatabase>> open_schedules(const RunOptions &options, const Target &target,
                                                       ExecutorOptions &executor_options) {
  if (options.db_path.empty()) return std::shared_ptr<TuningDatabase>();
  if (!database_may_exist(options.db_path))
    return make_error(ErrorKind::NotFound, "tuning database '" + options.db_path + "' does not exist");
  DatabaseOpenOptions read_only;
  read_only.read_only = true;
  TESSEL_TRY(TuningDatabase opened, TuningDatabase::open(options.db_path, read_only));
  auto db = std::make_shared<TuningDatabase>(std::move(opened));
  executor_options.schedule_for = best_schedule_lookup(
      db, target.to_string(), [](const std::string &w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); });
  return db;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// The first run (it compiles the kernels), the other warm-up runs, then `repeat` timed ones.
Result<ModelRun> run_and_time(GraphExecutor &executor, const std::vector<Tensor> &inputs, int warmup, int repeat) {
  ModelRun run;
  const auto start = std::chrono::steady_clock::now();
  TESSEL_TRY(run.outputs, executor.run(inputs));
  run.first_run_ms = ms_since(start);
  for (int w = 1; w < warmup; ++w) TESSEL_TRY_VOID(executor.run(inputs));
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto again = executor.run(inputs);
    run.times_ms.push_back(ms_since(t0));
    if (!again.ok()) return std::move(again).error();
  }
  std::sort(run.times_ms.begin(), run.times_ms.end());
  run.median_ms = run.times_ms.empty() ? run.first_run_ms : run.times_ms[run.times_ms.size() / 2];
  return run;
}

void print_run_json(const Graph &graph, const GraphExecutor &executor, const RunOptions &options, const ModelRun &run) {
  const KernelCacheStats stats = kernel_cache_stats();
  Json json;
  json["model"] = options.model_path;
  json["outputs"] = Json::array();
  for (size_t i = 0; i < run.outputs.size(); ++i) {
    Json output;
    output["name"] = graph.tensors[graph.outputs[i]].name;
    output["type"] = run.outputs[i].type().to_string();
    if (i < run.written.size()) output["file"] = run.written[i];
    json["outputs"].push_back(output);
  }
  json["first_run_ms"] = run.first_run_ms;
  json["median_ms"] = run.median_ms;
  json["repeats"] = run.times_ms.size();
  json["kernels_compiled"] = stats.compiled;
  json["tuned_groups"] = executor.tuned_groups();
  json["compile_seconds"] = stats.compile_seconds;
  std::printf("%s\n", dump_json(json).c_str());
}

void print_run_text(const Graph &graph, const GraphExecutor &executor, const TuningDatabase *db, const ModelRun &run,
                    const std::vector<std::string> &notes) {
  const KernelCacheStats stats = kernel_cache_stats();
  for (const std::string &note : notes) std::printf("note: %s\n", note.c_str());
  for (size_t i = 0; i < run.outputs.size(); ++i)
    std::printf("output %-24s %s%s\n", graph.tensors[graph.outputs[i]].name.c_str(),
                run.outputs[i].type().to_string().c_str(), i < run.written.size() ? ("  -> " + run.written[i]).c_str() : "");
  std::printf("first run %.2f ms (includes compiling %d kernels in %.2f s)\n", run.first_run_ms, stats.compiled,
              stats.compile_seconds);
  // A group whose best record is the built-in schedule was tuned too: the search kept the
  // built-in (a run on default schedules must not pass for a tuned one, nor the reverse).
  if (db)
    std::printf("%d of %zu fused groups run tuned schedules from %s (%d more whose best record is the built-in "
                "schedule)\n",
                executor.tuned_groups(), executor.groups().size(), db->location().c_str(),
                executor.builtin_best_groups());
  if (!run.times_ms.empty())
    std::printf("median latency %.3f ms over %zu runs (min %.3f, max %.3f)\n", run.median_ms, run.times_ms.size(),
                run.times_ms.front(), run.times_ms.back());
}

}  // namespace

int run_command(const RunOptions &options) {
  if (options.profile)
    return fail("--profile times the kernel calls of a compiled artifact: run `tessel compile` first, then "
                "`tessel run model.tsl --profile`");
  // The JIT's kernels run their parallel loops on the spin pool, as an artifact's do.
  if (options.threads > 0) spin_pool_set_threads(options.threads);
  auto target = parse_target(options.target);
  if (!target.ok()) return fail(target.error().message);
  if (target->kind != Target::Kind::Host) return fail("`tessel run` on an .onnx file runs on the host CPU; use --target llvm");
  auto graph = load_optimized_model(options.model_path, options.optimize);
  if (!graph.ok()) return fail(graph.error().message);
  std::vector<std::string> notes;
  auto inputs = model_inputs(graph.value(), options.inputs, options.seed, max_input_bytes(options), notes);
  if (!inputs.ok()) return fail(inputs.error().message);

  auto shared = std::make_shared<const Graph>(std::move(graph.value()));
  ExecutorOptions executor_options;
  auto db = open_schedules(options, target.value(), executor_options);
  if (!db.ok()) return fail(db.error().message);
  GraphExecutor executor(shared, target.value(), executor_options);
  auto run = run_and_time(executor, inputs.value(), options.warmup, options.repeat);
  if (!run.ok()) return fail(run.error().message);
  if (!options.output_dir.empty()) {
    std::vector<std::string> names;
    for (int t : shared->outputs) names.push_back(shared->tensors[t].name);
    auto files = write_output_files(options.output_dir, names, run->outputs);
    if (!files.ok()) return fail(files.error().message);
    run->written = std::move(files.value());
  }
  if (options.json) print_run_json(*shared, executor, options, run.value());
  else print_run_text(*shared, executor, db->get(), run.value(), notes);
  return 0;
}

}  // namespace tessel
