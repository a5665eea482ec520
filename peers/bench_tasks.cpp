// What `tessel bench` times and where its tuned kernels come from: the tasks of one kernel,
// of one database workload or of a model; tuning them first; picking each one's record.
#include "peers/bench_tasks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "compiler/artifact_compiler.h"
#include "compiler/deployed_schedule_lookup.h"
#include "graph/fusion/fuse.h"
#include "graph/fusion/workload_graph.h"
#include "graph/passes/channels_last_conv.h"
#include "graph/passes/winograd_conv.h"
#include "tensor/random_tensor.h"
#include "tuner/benchmark_problems.h"
#include "tuner/kernel_timing.h"
#include "tuner/tune_model.h"
#include "tuning_db/best_record_source.h"
#include "tuning_db/database_location.h"

namespace tessel {

namespace {

/// A workload's text names no weights (only the values a kernel bakes in), so its rebuilt
/// graph takes every external input as a graph input, and --cold would evict nothing: the
/// weights of its convs and Gemms become constants again (random values, as the tuner's
/// tasks use the model's), so that they are evicted as in a model. A MatMul's operands are
/// left alone: either may be the weight (Winograd's products multiply weights by the input).
std::shared_ptr<const Graph> with_weights_constant(const Graph &rebuilt, const FusedGroup &group) {
  auto graph = std::make_shared<Graph>(rebuilt);
  for (int n : group.nodes) {
    const std::string &op = graph->nodes[n].op_type;
    if (op != "Conv" && op != "ConvTranspose" && op != "TesselConvNHWC" && op != "Gemm") continue;
    const std::vector<int> &inputs = graph->node_inputs[n];
    for (size_t i = 1; i < inputs.size(); ++i) {
      const int t = inputs[i];
      auto input = t == kNoTensor ? graph->inputs.end() : std::find(graph->inputs.begin(), graph->inputs.end(), t);
      if (input == graph->inputs.end()) continue;
      graph->tensors[t].constant = random_tensor(graph->tensors[t].type, 1000 + static_cast<uint64_t>(t));
      graph->inputs.erase(input);
    }
  }
  return graph;
}

}  // namespace

/// The kernels to time: one kernel, one database workload, or every task of a model.
Result<std::vector<BenchTask>> collect_bench_tasks(const BenchRequest &options, std::shared_ptr<const Graph> &tuning_graph) {
  std::vector<BenchTask> tasks;
  auto add = [&](std::shared_ptr<const Graph> graph, const FusedGroup &group, std::string label, int weight) -> Result<void> {
    auto instance = make_task(graph, group);
    if (!instance.ok()) return make_error(instance.error().kind, label + ": " + instance.error().message);
    BenchTask task;
    task.label = std::move(label);
    task.workload_key = workload_key(*graph, group);
    task.ops = group_ops_text(*graph, group);
    task.weight = weight;
    task.task = std::move(instance.value());
    tasks.push_back(std::move(task));
    return {};
  };
  if (!options.task_key.empty()) {
    if (!options.kind.empty()) return make_error(ErrorKind::InvalidInput, "--task takes no kernel or model argument");
    if (!database_may_exist(options.db_path))
      return make_error(ErrorKind::NotFound, "--task needs a tuning database; " + options.db_path + " does not exist");
    auto db = TuningDatabase::open(options.db_path);
    if (!db.ok()) return db.error();
    auto text = db->workload_text(options.task_key);
    if (!text.ok()) return text.error();
    if (!text.value()) return make_error(ErrorKind::NotFound, db->location() + " has no workload " + options.task_key);
    auto rebuilt = graph_from_workload_text(**text);
    if (!rebuilt.ok())
      return make_error(rebuilt.error().kind, "workload " + options.task_key + ": " + rebuilt.error().message);
    tuning_graph = with_weights_constant(*rebuilt->graph, rebuilt->group);
    auto added = add(tuning_graph, rebuilt->group, "task " + options.task_key, 1);
    if (!added.ok()) return added.error();
    return tasks;
  }
  if (options.kind.empty())
    return make_error(ErrorKind::InvalidInput, "bench needs a kernel and its sizes, a model.onnx, or --task KEY");
  const bool is_model = options.kind.size() > 5 && options.kind.substr(options.kind.size() - 5) == ".onnx";
  if (is_model) {
    if (!options.spec.empty())
      return make_error(ErrorKind::InvalidInput, "a model takes no sizes (got '" + options.spec + "')");
    OptimizeOptions optimize = options.optimize;
    optimize.target = options.target;
    auto graph = load_optimized_model(options.kind, optimize);
    if (!graph.ok()) return graph.error();
    auto shared = std::make_shared<const Graph>(std::move(graph.value()));
    tuning_graph = shared;
    const std::vector<Workload> model_tasks = distinct_workloads(*shared, partition_graph(*shared));
    for (size_t i = 0; i < model_tasks.size(); ++i) {
      const Workload &t = model_tasks[i];
      const Shape &out = shared->tensors[shared->node_outputs[t.group.nodes.back()].at(0)].type.shape;
      auto added = add(shared, t.group, "task " + std::to_string(i) + ": " + group_ops_text(*shared, t.group) + " -> " +
                                            shape_to_string(out), t.weight);
      if (!added.ok()) std::fprintf(stderr, "tessel bench: skipping %s\n", added.error().message.c_str());
    }
    if (tasks.empty()) return make_error(ErrorKind::Unsupported, options.kind + " has no task tessel can compile");
    return tasks;
  }
  if (options.spec.empty()) return make_error(ErrorKind::InvalidInput, options.kind + " needs its sizes");
  BenchmarkGraphOptions graph_options;
  graph_options.bias_relu = options.bias_relu;
  if (!options.chain.empty()) graph_options.chain = options.chain;
  auto built = make_benchmark_graph(options.kind, options.spec, graph_options);
  if (!built.ok()) return built.error();
  OptimizeOptions optimize = options.optimize;
  optimize.target = options.target;
  // One conv kernel in NCHW, as its peers get it: channels-last would wrap it in two
  // Transposes (which cancel between a model's layers); Winograd would split it into three
  // kernels, and a strided 1x1 conv reads a Slice that subsamples its input first: the row
  // "as in a model" times those kernels together. A depthwise conv is the exception: models
  // with one run their convs channels-last, so that kernel is timed (between its
  // Transposes, untimed), and its peers read and write NHWC too. These are CPU passes: GPU
  // targets do not run them (and skipping a pass that is not in the list is an error).
  const bool cpu = options.target.rfind("cuda", 0) != 0;
  const bool channels_last = cpu && options.kind == "depthwise";
  std::shared_ptr<const Graph> as_in_model;
  if (cpu && !channels_last) {
    optimize.skip.push_back("channels_last_conv");
    auto split = optimize_as_told(*built.value(), optimize);
    if (!split.ok()) return split.error();
    if (partition_graph(split.value()).size() > 1) as_in_model = std::make_shared<const Graph>(std::move(split.value()));
  }
  if (cpu) optimize.skip.push_back("winograd_conv");
  auto graph = optimize_as_told(*built.value(), optimize);
  if (!graph.ok()) return graph.error();
  if (cpu && !channels_last && partition_graph(graph.value()).size() != 1) {  // a strided 1x1 conv's Slice
    optimize.skip.push_back("flatten_pointwise_conv");
    graph = optimize_as_told(*built.value(), optimize);
    if (!graph.ok()) return graph.error();
  }
  auto shared = std::make_shared<const Graph>(std::move(graph.value()));
  tuning_graph = shared;
  std::vector<FusedGroup> groups = partition_graph(*shared);
  if (channels_last) {  // the conv's group, without the Transposes around it
    const auto conv = std::find_if(groups.begin(), groups.end(), [&](const FusedGroup &group) {
      return std::any_of(group.nodes.begin(), group.nodes.end(),
                         [&](int n) { return shared->nodes[n].op_type == kConvNhwcOp; });
    });
    if (conv != groups.end()) groups = {*conv};
  }
  if (groups.size() != 1)
    return make_error(ErrorKind::Unsupported, "the " + options.kind + " benchmark graph does not fuse into one kernel");
  std::string label = options.kind + " " + options.spec;
  if (options.bias_relu) label += " +bias+relu";
  if (shared->nodes[groups.front().nodes.front()].op_type == kConvNhwcOp) label += " (channels-last)";
  auto added = add(shared, groups.front(), label, 1);
  if (!added.ok()) return added.error();
  if (channels_last) {  // tuned alone: the Transposes around it would take part of the trials
    auto alone = graph_from_workload_text(tasks.back().task.workload_text);
    if (!alone.ok()) return alone.error();
    tuning_graph = alone->graph;
  }
  if (as_in_model) {
    tasks.back().as_in_model = as_in_model;
    tasks.back().as_in_model_name = "tessel, as in a model";
    for (const Node &node : as_in_model->nodes)
      if (node.op_type == kWinogradInputOp) {
        const std::string m = std::to_string(node.attributes.get_int(kWinogradTileAttr, 0));
        tasks.back().as_in_model_name = "tessel Winograd F(" + m + "x" + m + ", 3x3)";
      }
  }
  return tasks;
}

namespace {

/// Searched records (the built-in schedule's not counted) of a workload.
Result<int> searched_records(const std::string &workload_key, const Target &target, TuningDatabase &db) {
  auto hashes = db.measured_hashes(workload_key, target.to_string());
  if (!hashes.ok()) return hashes.error();
  return static_cast<int>(hashes->size() - hashes->count(kBuiltinScheduleHash));
}

/// The same over every distinct task of `graph`.
Result<int> searched_records(const Graph &graph, const Target &target, TuningDatabase &db) {
  int searched = 0;
  for (const Workload &w : distinct_workloads(graph, partition_graph(graph))) {
    TESSEL_TRY(int of_task, searched_records(w.workload_key, target, db));
    searched += of_task;
  }
  return searched;
}

/// Tunes `graph` for `trials` more candidates, or until `deadline` when it is set.
Result<void> tune_bench_graph(const Graph &graph, int trials, std::optional<std::chrono::steady_clock::time_point> deadline,
                              const Target &target, TuningDatabase &db) {
  if (trials <= 0) return {};
  TuneOptions tune;
  tune.trials = trials;
  if (deadline) {
    tune.time_budget_seconds = std::chrono::duration<double>(*deadline - std::chrono::steady_clock::now()).count();
    if (tune.time_budget_seconds <= 0) return {};
  }
  tune.batch = std::max(8, static_cast<int>(std::thread::hardware_concurrency()));  // every builder busy
  tune.log = [](const std::string &line) { std::fprintf(stderr, "tessel tune: %s\n", line.c_str()); };
  auto summary = tune_model(graph, target, db, tune);
  if (!summary.ok()) return summary.error();
  std::fprintf(stderr, "tessel bench: tuned %d candidates in %.0f s\n", summary->measured, summary->wall_seconds);
  return {};
}

}  // namespace

/// Tunes until every kernel has `trials` searched records (a model: `trials` for the model;
/// a kernel a model splits into several: `trials` more for those together).
Result<void> tune_bench_tasks(const BenchRequest &options, const Graph &graph, const std::vector<BenchTask> &tasks,
                        const Target &target, TuningDatabase &db) {
  std::optional<std::chrono::steady_clock::time_point> deadline;  // the budget covers both graphs
  if (options.time_budget_seconds > 0)
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(options.time_budget_seconds));
  int missing = options.trials;
  if (tasks.size() == 1) {
    auto searched = searched_records(tasks[0].workload_key, target, db);
    if (!searched.ok()) return searched.error();
    missing = options.trials - searched.value();
  }
  TESSEL_TRY_VOID(tune_bench_graph(graph, missing, deadline, target, db));
  for (const BenchTask &task : tasks) {
    if (!task.as_in_model) continue;
    auto searched = searched_records(*task.as_in_model, target, db);
    if (!searched.ok()) return searched.error();
    TESSEL_TRY_VOID(tune_bench_graph(*task.as_in_model, options.trials - searched.value(), deadline, target, db));
  }
  return {};
}

/// The task's best record: of the database's three fastest, the one fastest here and now
/// (a record's median is the luckiest of many draws). Runs kernels in this process, so it
/// comes after all tuning (tuning forks workers, which a live Halide thread pool forbids).
Result<void> pick_tuned_schedule(BenchTask &task, TuningDatabase &db, const Target &target, bool cold) {
  const std::string target_text = target.to_string();
  auto hashes = db.measured_hashes(task.workload_key, target_text);
  if (!hashes.ok()) return hashes.error();
  const int searched = static_cast<int>(hashes->size() - hashes->count(kBuiltinScheduleHash));
  auto top = db.top_k(task.workload_key, target_text, 3);
  if (!top.ok()) return top.error();
  if (top->empty()) {
    task.tuned_source = searched > 0 ? std::to_string(searched) + " records, none ran" : "no record in the database";
    return {};
  }
  if (top->front().schedule_text.empty()) {
    task.tuned_source = "the default schedule is the best of " + std::to_string(searched) + " searched records";
    return {};
  }
  const std::vector<Tensor> inputs = task_inputs(task.task, 7);
  double best_seconds = std::numeric_limits<double>::infinity();
  std::string best_hash;
  for (const TuningRecord &record : top.value()) {
    if (record.schedule_text.empty()) continue;
    auto schedule = parse_schedule(record.schedule_text);
    if (!schedule.ok()) continue;
    auto kernel = compile_task(task.task, &schedule.value(), target);
    if (!kernel.ok()) continue;
    TimingOptions quick;
    quick.warmup_runs = 1;
    quick.min_runs = 3;
    quick.min_seconds = 0.05;
    quick.cold_constants = cold;  // picked the way the rows will be timed
    auto timing = time_task(kernel.value(), task.task, inputs, quick);
    if (timing.ok() && timing->median < best_seconds) {
      best_seconds = timing->median;
      task.tuned = kernel.value();
      best_hash = record.schedule_hash;
    }
  }
  if (!task.tuned) {
    task.tuned_source = "none of the best records compiles now";
    return {};
  }
  task.tuned_source = "record " + best_hash.substr(0, 8) + ", fastest here of the top " + std::to_string(top->size()) +
                      " of " + std::to_string(searched) + " searched records";
  return {};
}

Result<void> prepare_as_in_model(BenchTask &task, std::shared_ptr<const BestRecordSource> records, const Target &target,
                                 int threads) {
  if (!task.as_in_model) return {};
  ArtifactCompileOptions compile;
  compile.target = target;
  if (records)
    compile.schedules = deployed_schedule_lookup(
        records, target.to_string(), [](const std::string &w) { std::fprintf(stderr, "tessel bench: %s\n", w.c_str()); });
  std::string scratch = (std::filesystem::temp_directory_path() / "tessel-bench-XXXXXX").string();
  if (!mkdtemp(scratch.data())) return make_error(ErrorKind::Io, "cannot create a directory under " + scratch);
  const std::string artifact = scratch + "/conv.tsl";
  auto summary = compile_artifact(*task.as_in_model, compile, artifact);
  Result<void> loaded;
  if (!summary.ok()) {
    loaded = make_error(summary.error().kind, task.as_in_model_name + ": " + summary.error().message);
  } else {
    ModuleOptions options;
    options.threads = threads;
    options.pin_threads = false;  // process-wide: the other rows run unpinned
    try {
      task.as_in_model_run = std::make_shared<Module>(Module::load(artifact, options));
    } catch (const ModuleError &e) {
      loaded = make_error(ErrorKind::Internal, task.as_in_model_name + ": " + e.what());
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(scratch, ignored);  // loaded: weights copied, kernels.so mapped
  if (!loaded.ok()) return loaded;
  task.as_in_model_source = std::to_string(summary->kernel_steps) + " kernels (" +
                            std::to_string(summary->tuned_tasks) + " on records), compiled and run as by `tessel run`";
  return {};
}

}  // namespace tessel
