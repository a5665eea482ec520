// `tessel run model.tsl` and `tessel inspect model.tsl`: artifacts through the deploy runtime,
// the same code path a deployed program uses (no Halide JIT involved).
#include <algorithm>
#include <map>
#include <optional>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/cross_core_latency.h"
#include "base/json.h"
#include "deploy/artifact_inputs.h"
#include "deploy/artifact_manifest.h"
#include "deploy/kernel_profile.h"
#include "deploy/module.h"
#include "tools/tessel/commands.h"
#include "tools/tessel/output_files.h"

namespace tessel {

bool is_artifact_path(const std::string &path) {
  // A model is one file: any directory is taken for an artifact, and told what it lacks.
  return std::filesystem::is_directory(path);
}

namespace {

/// An artifact directory has its manifest; a directory without one is named as such
/// (read as a model file, it was "the file is empty").
Result<void> check_artifact_directory(const std::string &path) {
  const std::filesystem::path manifest = std::filesystem::path(path) / "manifest.json";
  if (!std::filesystem::exists(manifest))
    return make_error(ErrorKind::InvalidInput,
                      path + " is a directory but not a tessel artifact: it has no manifest.json");
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(manifest)))
    return make_error(ErrorKind::InvalidInput, manifest.string() + " is not a regular file");
  return {};
}

/// The profile, slowest kernel call first, with the share of the run each one takes.
void print_kernel_profile(std::vector<KernelProfileRow> rows, double run_ms) {
  double kernels_ms = 0;
  for (const KernelProfileRow &r : rows) kernels_ms += r.median_ms;
  std::printf("kernel calls: %.3f ms of the %.3f ms median run (medians per call; the rest is copies and the run "
              "loop)\n",
              kernels_ms, run_ms);
  int serial = 0;
  for (const KernelProfileRow &r : rows) serial += r.serial;
  if (serial > 0)
    std::printf("%d of %zu kernel calls run on one thread (marked *: compile measured them faster so)\n", serial,
                rows.size());
  std::printf("%-5s %-14s %-24s %10s %7s %9s %11s %9s\n", "step", "kernel", "ops", "median ms", "share", "GFLOP/s",
              "record ms", "x record");
  std::stable_sort(rows.begin(), rows.end(),
                   [](const KernelProfileRow &a, const KernelProfileRow &b) { return a.median_ms > b.median_ms; });
  for (const KernelProfileRow &r : rows) {
    char record[32] = "-", ratio[32] = "-";
    if (r.record_ms) {
      std::snprintf(record, sizeof(record), "%.4f", *r.record_ms);
      if (*r.record_ms > 0) std::snprintf(ratio, sizeof(ratio), "%.2fx", r.median_ms / *r.record_ms);
    }
    const std::string symbol = r.symbol + (r.serial ? "*" : "");
    std::printf("%-5d %-14s %-24s %10.4f %6.1f%% %9.1f %11s %9s\n", r.step, symbol.c_str(), r.ops.substr(0, 24).c_str(),
                r.median_ms, kernels_ms > 0 ? 100.0 * r.median_ms / kernels_ms : 0.0,
                r.median_ms > 0 ? r.flops / (r.median_ms * 1e6) : 0.0, record, ratio);
  }
}

/// Host steps by op type, slowest first: medians per step, summed per type.
void print_host_step_profile(const std::vector<HostStepTimes> &steps) {
  if (steps.empty()) return;
  std::map<std::string, std::pair<double, int>> by_op;  // op -> ms, steps
  double total = 0;
  for (HostStepTimes step : steps) {
    if (step.ms.empty()) continue;
    std::sort(step.ms.begin(), step.ms.end());
    const double median = step.ms[step.ms.size() / 2];
    by_op[step.op_type].first += median;
    ++by_op[step.op_type].second;
    total += median;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> ordered(by_op.begin(), by_op.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto &a, const auto &b) { return a.second.first > b.second.first; });
  std::printf("host steps: %.3f ms in %zu steps (medians per step), by op:", total, steps.size());
  for (const auto &[op, time] : ordered) std::printf(" %s %.3f ms (%d)", op.c_str(), time.first, time.second);
  std::printf("\n");
}

/// What one `tessel run model.tsl` measured.
struct ArtifactRun {
  std::vector<Tensor> outputs;
  std::vector<std::string> written;  // output files, when --output-dir was given
  double load_ms = 0, first_run_ms = 0, median_ms = 0;
  std::vector<double> times_ms;  // the --repeat runs, sorted
  std::vector<double> runs_ms;   // the same, in the order they ran
  std::optional<double> cross_core_ns;  // measured before loading, with --profile
};

/// The value `share` of the way up the sorted `times` (nearest rank).
double percentile(const std::vector<double> &sorted, double share) {
  if (sorted.empty()) return 0;
  const size_t index = static_cast<size_t>(share * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

void print_run_json(const Module &module, const RunOptions &options, const ArtifactRun &run) {
  Json json;
  json["model"] = options.model_path;
  json["outputs"] = Json::array();
  for (size_t i = 0; i < run.outputs.size(); ++i) {
    Json output;
    output["name"] = module.outputs()[i].name;
    output["type"] = run.outputs[i].type().to_string();
    if (i < run.written.size()) output["file"] = run.written[i];
    json["outputs"].push_back(output);
  }
  json["load_ms"] = run.load_ms;
  json["first_run_ms"] = run.first_run_ms;
  json["median_ms"] = run.median_ms;
  json["p10_ms"] = percentile(run.times_ms, 0.1);
  json["p90_ms"] = percentile(run.times_ms, 0.9);
  json["repeats"] = run.times_ms.size();
  json["runs_ms"] = run.runs_ms;
  json["kernel_calls"] = module.kernel_count();
  json["host_steps"] = module.host_step_count();
  json["arena_bytes"] = module.arena_bytes();
  if (run.cross_core_ns) json["cross_core_round_trip_ns"] = *run.cross_core_ns;
  if (options.profile) {
    json["kernels"] = Json::array();
    for (const KernelProfileRow &row : kernel_profile(module)) {
      Json kernel;
      kernel["step"] = row.step;
      kernel["kernel"] = row.symbol;
      kernel["ops"] = row.ops;
      kernel["median_ms"] = row.median_ms;
      if (row.record_ms) kernel["record_ms"] = *row.record_ms;
      json["kernels"].push_back(kernel);
    }
  }
  std::printf("%s\n", dump_json(json).c_str());
}

void print_run_text(const Module &module, const RunOptions &options, const ArtifactRun &run,
                    const std::vector<std::string> &notes) {
  for (const std::string &note : notes) std::printf("note: %s\n", note.c_str());
  for (size_t i = 0; i < run.outputs.size(); ++i)
    std::printf("output %-24s %s%s\n", module.outputs()[i].name.c_str(), run.outputs[i].type().to_string().c_str(),
                i < run.written.size() ? ("  -> " + run.written[i]).c_str() : "");
  const std::string host_steps =
      module.host_step_count() ? ", " + std::to_string(module.host_step_count()) + " host steps" : std::string();
  std::printf("loaded in %.1f ms (%d kernel calls%s per run, arena %.2f MB); first run %.2f ms\n", run.load_ms,
              module.kernel_count(), host_steps.c_str(), module.arena_bytes() / 1e6, run.first_run_ms);
  if (!run.times_ms.empty())
    std::printf("median latency %.3f ms over %zu runs (p10 %.3f, p90 %.3f, min %.3f, max %.3f)\n", run.median_ms,
                run.times_ms.size(), percentile(run.times_ms, 0.1), percentile(run.times_ms, 0.9),
                run.times_ms.front(), run.times_ms.back());
  if (run.cross_core_ns)
    std::printf("cross-core round trip %.0f ns before loading (a cache line between the first two CPUs and back; "
                "on a virtual machine it depends on where the vCPUs run now, and kernels that read the other "
                "thread's output slow down when it is high)\n",
                *run.cross_core_ns);
  if (options.profile) {
    print_kernel_profile(kernel_profile(module), run.median_ms);
    print_host_step_profile(module.host_step_times());
  }
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// The first run, the other warm-up runs, then `repeat` timed ones.
void run_and_time(Module &module, const std::vector<Tensor> &inputs, int warmup, int repeat, ArtifactRun &run) {
  const auto start = std::chrono::steady_clock::now();
  run.outputs = module.run(inputs);
  run.first_run_ms = ms_since(start);
  for (int w = 1; w < warmup; ++w) module.run(inputs);
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    module.run(inputs);
    run.runs_ms.push_back(ms_since(t0));
  }
  run.times_ms = run.runs_ms;
  std::sort(run.times_ms.begin(), run.times_ms.end());
  run.median_ms = run.times_ms.empty() ? run.first_run_ms : run.times_ms[run.times_ms.size() / 2];
}

ModuleOptions module_options(const RunOptions &options) {
  ModuleOptions load_options;
  load_options.threads = options.threads;
  load_options.profile = options.profile;
  load_options.weights_in_huge_pages = !options.mapped_weights;
  load_options.pin_threads = !options.no_pin;
  return load_options;
}

}  // namespace

int run_artifact_command(const RunOptions &options) {
  if (auto artifact = check_artifact_directory(options.model_path); !artifact.ok()) return fail(artifact.error().message);
  if (!options.db_path.empty()) return fail("--db applies when compiling; an artifact already holds its schedules");
  try {
    ArtifactRun run;
    // Before the pool's threads exist: they would spin on the CPUs it measures.
    if (options.profile) run.cross_core_ns = cross_core_round_trip_ns();
    const auto load_start = std::chrono::steady_clock::now();
    Module module = Module::load(options.model_path, module_options(options));
    run.load_ms = ms_since(load_start);
    std::vector<std::string> notes;
    auto inputs = artifact_inputs(module, options.inputs, options.seed, max_input_bytes(options), notes);
    if (!inputs.ok()) return fail(inputs.error().message);
    run_and_time(module, inputs.value(), options.warmup, options.repeat, run);
    if (!options.output_dir.empty()) {
      std::vector<std::string> names;
      for (const TensorDesc &d : module.outputs()) names.push_back(d.name);
      auto files = write_output_files(options.output_dir, names, run.outputs);
      if (!files.ok()) return fail(files.error().message);
      run.written = std::move(files.value());
    }
    if (options.json) print_run_json(module, options, run);
    else print_run_text(module, options, run, notes);
  } catch (const ModuleError &e) {
    return fail(e.what());
  }
  return 0;
}

int inspect_artifact_command(const InspectOptions &options) {
  if (auto artifact = check_artifact_directory(options.model_path); !artifact.ok()) return fail(artifact.error().message);
  const std::string path = (std::filesystem::path(options.model_path) / "manifest.json").string();
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && text.empty()) return fail("cannot read " + path);
  if (options.json) {
    std::printf("%s\n", text.c_str());
    return 0;
  }
  auto manifest = deploy::parse_manifest(text);
  if (!manifest.ok()) return fail(path + ": " + manifest.error().message);
  const deploy::ArtifactManifest &m = manifest.value();
  std::printf("artifact %s: tessel %s, target %s (%s), created %s\n", options.model_path.c_str(),
              m.tessel_version.c_str(), m.target.c_str(), m.halide_target.c_str(), m.created_utc.c_str());
  std::printf("model %s (FNV-1a 64 %s)\n", m.model_path.c_str(), m.model_fnv1a64.c_str());
  std::string features;
  for (const std::string &f : m.required_cpu_features) features += " " + f;
  std::printf("needs CPU features:%s\n", features.c_str());
  for (const auto &[label, list] : {std::make_pair("input", &m.inputs), std::make_pair("output", &m.outputs)})
    for (const deploy::ArtifactTensor &t : *list)
      std::printf("%-6s %-24s %s %s\n", label, t.name.c_str(), dtype_name(t.dtype).c_str(), shape_to_string(t.shape).c_str());
  std::printf("arena %.2f MB, weights %.2f MB, kernels.so %.2f MB\n", m.arena_bytes / 1e6, m.weights.bytes / 1e6,
              m.kernels.bytes / 1e6);
  if (m.host)
    std::printf("host.json %.2f MB: the nodes whose shapes only a run decides, computed on the host\n",
                m.host->bytes / 1e6);
  int64_t flops = 0, tuned_flops = 0;
  int tuned = 0;
  for (const deploy::ArtifactTask &t : m.tasks) {
    flops += t.flops;
    if (t.tuned) tuned_flops += t.flops, ++tuned;
  }
  std::printf("%zu tasks, %d with tuning records (%.1f%% of %.3f GFLOP)\n", m.tasks.size(), tuned,
              flops ? 100.0 * tuned_flops / flops : 0.0, flops / 1e9);
  std::printf("%-4s %-14s %-28s %-9s %-18s %12s %12s\n", "#", "kernel", "ops", "schedule", "record", "record ms", "MFLOP");
  for (size_t i = 0; i < m.tasks.size(); ++i) {
    const deploy::ArtifactTask &t = m.tasks[i];
    char record_ms[32] = "-";
    if (t.record_median_seconds) std::snprintf(record_ms, sizeof(record_ms), "%.4f", *t.record_median_seconds * 1e3);
    std::printf("%-4zu %-14s %-28s %-9s %-18s %12s %12.2f\n", i, t.kernel.c_str(), t.ops.substr(0, 28).c_str(),
                t.tuned ? "tuned" : "default", t.tuned ? t.schedule_hash.c_str() : "-", record_ms, t.flops / 1e6);
  }
  return 0;
}

}  // namespace tessel
