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
#include "tensor/npy.h"
#include "tools/tessel/commands.h"
#include "tools/tessel/output_files.h"
#include "tuning_db/database_location.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

int64_t max_input_bytes(const RunOptions &options) {
  return options.max_input_bytes > 0 ? options.max_input_bytes : default_max_input_bytes();
}

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

  std::vector<Tensor> inputs;
  std::vector<std::string> notes;
  if (options.inputs.empty()) {
    auto random = random_inputs(graph.value(), options.seed, &notes, max_input_bytes(options));
    if (!random.ok()) return fail(random.error().message);
    inputs = std::move(random.value());
    notes.push_back("random inputs (seed " + std::to_string(options.seed) + ")");
  } else {
    std::vector<std::pair<std::string, Tensor>> given;
    for (const std::string &spec : options.inputs) {
      auto eq = spec.find('=');
      std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
      std::string path = eq == std::string::npos ? spec : spec.substr(eq + 1);
      auto tensor = read_npy(path, max_input_bytes(options));
      if (!tensor.ok()) return fail(tensor.error().message);
      given.emplace_back(name, tensor.value());
    }
    auto bound = bind_inputs(graph.value(), given);
    if (!bound.ok()) return fail(bound.error().message);
    inputs = std::move(bound.value());
  }

  auto shared = std::make_shared<const Graph>(std::move(graph.value()));
  ExecutorOptions executor_options;
  std::shared_ptr<TuningDatabase> db;
  if (!options.db_path.empty()) {
    if (!database_may_exist(options.db_path)) return fail("tuning database '" + options.db_path + "' does not exist");
    DatabaseOpenOptions read_only;
    read_only.read_only = true;
    auto opened = TuningDatabase::open(options.db_path, read_only);
    if (!opened.ok()) return fail(opened.error().message);
    db = std::make_shared<TuningDatabase>(std::move(opened.value()));
    executor_options.schedule_for = best_schedule_lookup(
        db, target->to_string(), [](const std::string &w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); });
  }
  GraphExecutor executor(shared, target.value(), executor_options);
  auto start = std::chrono::steady_clock::now();
  auto outputs = executor.run(inputs);
  const double first_run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!outputs.ok()) return fail(outputs.error().message);

  std::vector<double> times_ms;
  for (int r = 0; r < options.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto again = executor.run(inputs);
    times_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!again.ok()) return fail(again.error().message);
  }
  std::sort(times_ms.begin(), times_ms.end());
  const double median_ms = times_ms.empty() ? first_run_ms : times_ms[times_ms.size() / 2];

  std::vector<std::string> written;
  if (!options.output_dir.empty()) {
    std::vector<std::string> names;
    for (int t : shared->outputs) names.push_back(shared->tensors[t].name);
    auto files = write_output_files(options.output_dir, names, outputs.value());
    if (!files.ok()) return fail(files.error().message);
    written = std::move(files.value());
  }
  const KernelCacheStats stats = kernel_cache_stats();
  if (options.json) {
    Json json;
    json["model"] = options.model_path;
    json["outputs"] = Json::array();
    for (size_t i = 0; i < outputs->size(); ++i) {
      Json output;
      output["name"] = shared->tensors[shared->outputs[i]].name;
      output["type"] = (*outputs)[i].type().to_string();
      if (i < written.size()) output["file"] = written[i];
      json["outputs"].push_back(output);
    }
    json["first_run_ms"] = first_run_ms;
    json["median_ms"] = median_ms;
    json["repeats"] = times_ms.size();
    json["kernels_compiled"] = stats.compiled;
    json["tuned_groups"] = executor.tuned_groups();
    json["compile_seconds"] = stats.compile_seconds;
    std::printf("%s\n", dump_json(json).c_str());
    return 0;
  }
  for (const std::string &note : notes) std::printf("note: %s\n", note.c_str());
  for (size_t i = 0; i < outputs->size(); ++i)
    std::printf("output %-24s %s%s\n", shared->tensors[shared->outputs[i]].name.c_str(),
                (*outputs)[i].type().to_string().c_str(), i < written.size() ? ("  -> " + written[i]).c_str() : "");
  std::printf("first run %.2f ms (includes compiling %d kernels in %.2f s)\n", first_run_ms, stats.compiled,
              stats.compile_seconds);
  if (db) std::printf("%d of %zu fused groups run tuned schedules from %s\n", executor.tuned_groups(),
                      executor.groups().size(), db->location().c_str());
  if (!times_ms.empty())
    std::printf("median latency %.3f ms over %zu runs (min %.3f, max %.3f)\n", median_ms, times_ms.size(),
                times_ms.front(), times_ms.back());
  return 0;
}

}  // namespace tessel
