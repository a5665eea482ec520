// `tessel compile model.onnx --db tessel.db -o model.tsl`: the deployable artifact.
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "base/json.h"
#include "codegen/cuda_device.h"
#include "compiler/artifact_compiler.h"
#include "compiler/deployed_schedule_lookup.h"
#include "tools/tessel/commands.h"
#include "tuner/in_graph_selection.h"
#include "tuning_db/database_location.h"
#include "tuning_db/open_best_record_source.h"

namespace tessel {

int write_ptx_command(const Graph &graph, const Target &target, const DeployScheduleLookup &lookup,
                      const std::string &directory);

namespace {

/// The tuning records to deploy from (null: none, said on stderr).
Result<std::shared_ptr<BestRecordSource>> open_records(const std::string &records, bool log_given) {
  if (records.empty()) {
    std::fprintf(stderr, "note: no tuning database or log (--db, --log, ./tessel.db): every task gets its default schedule\n");
    return std::shared_ptr<BestRecordSource>();
  }
  if (!database_may_exist(records))
    return make_error(ErrorKind::NotFound, "tuning records '" + records + "' do not exist");
  // --db names a database: one that is not says so (read as a log, it failed as a log).
  TESSEL_TRY(auto opened, open_best_record_source(records, log_given ? RecordFileKind::Either : RecordFileKind::Database));
  return std::shared_ptr<BestRecordSource>(std::move(opened));
}

void print_compile_summary(const ArtifactCompileSummary &s, const CompileCommandOptions &options,
                           const std::string &records) {
  if (options.json) {
    Json json;
    json["artifact"] = options.output_path;
    json["kernel_steps"] = s.kernel_steps;
    json["host_steps"] = s.host_steps;
    json["compiled_kernels"] = s.compiled_kernels;
    json["tuned_tasks"] = s.tuned_tasks;
    json["default_tasks"] = s.default_tasks;
    json["concats_in_place"] = s.concats_in_place;
    json["serial_kernel_steps"] = s.serial_kernel_steps;
    json["arena_bytes"] = s.arena_bytes;
    json["weights_bytes"] = s.weights_bytes;
    json["seconds"] = s.seconds;
    std::printf("%s\n", dump_json(json).c_str());
    return;
  }
  std::printf("wrote %s: %d kernel calls per run (%d compiled kernels), %d with tuned records, %d default\n",
              options.output_path.c_str(), s.kernel_steps, s.compiled_kernels, s.tuned_tasks, s.default_tasks);
  if (s.concats_in_place > 0)
    std::printf("%d Concats need no call: their inputs are computed into their slices of the output\n",
                s.concats_in_place);
  if (!s.kernel_threads.empty()) std::printf("%s\n", s.kernel_threads.c_str());
  if (s.host_steps > 0)
    std::printf("%d nodes run on the host per run (shapes known only at run time, or host ops such as TopK)\n",
                s.host_steps);
  std::printf("arena %.2f MB, weights %.2f MB, compiled in %.1f s%s%s\n", s.arena_bytes / 1e6, s.weights_bytes / 1e6,
              s.seconds, records.empty() ? "" : ", records from ", records.c_str());
}

}  // namespace

int compile_command(const CompileCommandOptions &options) {
  auto target = parse_target(options.target);
  if (!target.ok()) return fail(target.error().message);
  const bool selection_asked = options.select_in_graph >= 0;
  if (target->kind == Target::Kind::Cuda && options.select_in_graph > 0)
    return fail("--select-in-graph runs trial artifacts on the host CPU; it is not available for --target cuda yet");
  if (target->kind == Target::Kind::Cuda && target->mcpu.empty()) {
    // Records tuned here are keyed "cuda -arch=sm_XY": read them under that name.
    if (auto device = name_device_architecture(target.value()); !device.ok())
      std::fprintf(stderr, "note: no CUDA GPU here (%s): compiling for sm_86 with records of target 'cuda'; name the "
                   "architecture (--target \"cuda -arch=sm_90\") to use records tuned on such a GPU\n",
                   device.error().message.c_str());
  }
  if (!options.db_path.empty() && !options.log_path.empty()) return fail("give --db or --log, not both");
  // The default database is used when it is there; compiling with no records is allowed
  // (every task gets its default schedule) and said.
  std::string records = !options.log_path.empty() ? options.log_path : options.db_path;
  if (records.empty() && std::filesystem::exists("tessel.db")) records = "tessel.db";
  auto source = open_records(records, !options.log_path.empty());
  if (!source.ok()) return fail(source.error().message);
  if (target->kind != Target::Kind::Cuda && !options.ptx_dir.empty()) return fail("--ptx needs --target cuda");
  auto graph = load_optimized_model(options.model_path, options.optimize);
  if (!graph.ok()) return fail(graph.error().message);
  if (!options.ptx_dir.empty())
    return write_ptx_command(graph.value(), target.value(),
                             *source ? deployed_schedule_lookup(*source, target->to_string()) : DeployScheduleLookup{},
                             options.ptx_dir);

  ArtifactCompileOptions compile;
  compile.target = target.value();
  compile.model_path = options.model_path;
  compile.log = [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  if (*source)
    compile.schedules = deployed_schedule_lookup(*source, target->to_string(), [](const std::string &w) {
      std::fprintf(stderr, "warning: %s\n", w.c_str());
    });
  // By default each task's fastest record alone and its built-in schedule are timed inside
  // the model: records timed alone and cold lost to the built-in there. Measured with 200-
  // and 500-trial databases (alternating processes, AMD EPYC): MobileNet-V2 0.781 -> 0.731
  // ms (its 2000-trial artifact: 0.727), MNASNet 0.913 -> 0.821, EfficientNet-B0 1.866 ->
  // 1.682, SqueezeNet 0.782 -> 0.744, MobileNet-V3-large 0.779 -> 0.750; ResNet-18 with 2000
  // trials level (2.645 / 2.647). It costs compile time: the zoo's tuned compiles took 10-106
  // s with it against 4-17 s untuned (bench/results/e2e.md).
  const int select_k = selection_asked ? options.select_in_graph
                       : *source && target->kind != Target::Kind::Cuda ? 2 : 0;
  if (select_k > 0) {
    if (!*source) return fail("--select-in-graph needs tuning records (--db or --log)");
    const std::string trial_path = options.output_path + ".trial-" + std::to_string(::getpid());
    std::fprintf(stderr, "in-graph selection: compiling up to %d records per task into %s%s\n", select_k,
                 trial_path.c_str(), selection_asked ? "" : " (--select-in-graph 0: the fastest records alone)");
    InGraphSelectionOptions selection;
    selection.threads = options.threads;
    if (selection_asked) selection.log = [](const std::string &line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
    auto chosen = select_schedules_in_graph(graph.value(), compile, *source, select_k, trial_path, selection);
    if (chosen.ok()) {
      std::fprintf(stderr,
                   "in-graph selection: kernel time per run %.3f ms with the fastest records alone, %.3f ms chosen\n",
                   chosen->latency_before_ms, chosen->latency_after_ms);
      compile.schedules = chosen->schedules;
    } else if (selection_asked) {
      return fail(chosen.error().message);
    } else {
      std::fprintf(stderr, "warning: %s; deploying the fastest records alone\n", chosen.error().message.c_str());
    }
  }
  compile.choose_kernel_threads = options.thread_choice;
  compile.threads = options.threads;
  auto summary = compile_artifact(graph.value(), compile, options.output_path);
  if (!summary.ok()) return fail(summary.error().message);
  print_compile_summary(summary.value(), options, records);
  return 0;
}

}  // namespace tessel
