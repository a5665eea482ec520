#pragma once
// What `tessel bench` times (its library half; tools/tessel/bench_command.cpp parses flags
// and prints): one kernel built from a size spec, one workload of a tuning database, or every
// task of a model; tuned first when asked; each with its best record picked and compiled.
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "codegen/target.h"
#include "executor/load_model.h"
#include "graph/ir/graph.h"
#include "peers/bench_rows.h"
#include "tuning_db/best_record_source.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

struct BenchRequest {
  OptimizeOptions optimize;
  std::string kind;      // a kernel kind (matmul, conv, ...), or a model.onnx path
  std::string spec;      // the kernel's sizes (see tuner/benchmark_problems.h)
  std::string task_key;  // a workload of the database instead
  bool bias_relu = false;          // matmul/conv/depthwise: fuse a bias add and a ReLU
  std::vector<std::string> chain;  // elementwise steps (default add,relu,mul)
  std::string target = "llvm";
  std::string db_path = "tessel.db";
  int trials = 0;                  // > 0: tune first, until each kernel has this many searched records
  double time_budget_seconds = 0;  // > 0: ... or until this many seconds of tuning have passed
};

/// The kernels to time; `tuning_graph` is the graph their tasks come from (what tuning
/// them runs on). Errors say which of kind, spec and task key is wrong.
Result<std::vector<BenchTask>> collect_bench_tasks(const BenchRequest &request, std::shared_ptr<const Graph> &tuning_graph);

/// Tunes until every kernel has `request.trials` searched records (a model: that many for
/// the whole model), within the time budget; a batch keeps every core building.
Result<void> tune_bench_tasks(const BenchRequest &request, const Graph &graph, const std::vector<BenchTask> &tasks,
                              const Target &target, TuningDatabase &db);

/// The task's best record: of the database's three fastest, the one fastest here and now.
/// Runs kernels in this process, so it comes after all tuning. `cold`: timed with the task's
/// weights evicted before every run, as `tessel bench --cold` times its rows.
Result<void> pick_tuned_schedule(BenchTask &task, TuningDatabase &db, const Target &target, bool cold = false);

/// For a task with an `as_in_model` graph: its artifact, compiled into a temporary
/// directory with each kernel on its best record of `records` (null: default schedules) and
/// loaded to run on `threads` threads. Like picking, it comes after all tuning.
Result<void> prepare_as_in_model(BenchTask &task, std::shared_ptr<const BestRecordSource> records, const Target &target,
                                 int threads);

}  // namespace tessel
