#pragma once
// The rows of one `tessel bench` table: tessel's kernel for a task (its best record, or the
// default schedule), Halide's Adams2019 autoscheduler on the same pipeline, and the vendor
// libraries that compute the same operation, all on the same inputs and checked against the
// default schedule's output.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/jit_kernel.h"
#include "codegen/target.h"
#include "deploy/module.h"
#include "peers/kernel_row.h"
#include "task/task.h"

namespace tessel {

/// One kernel to benchmark.
struct BenchTask {
  std::string label;         // the table's title
  std::string workload_key;
  std::string ops;           // "Conv+Relu"
  int weight = 1;            // occurrences in the model
  Task task;
  std::optional<JitKernel> tuned;  // the best record's kernel, compiled when it was picked; none: no record
  std::string tuned_source;       // where it came from ("record 12 of 1000 ...")
  /// The kernel as a model runs it where the optimizer's CPU passes split it into several
  /// kernels (a 3x3 conv into Winograd's two transforms and a batched product): that graph,
  /// compiled into an artifact with each of its tasks' best records and run by the deploy
  /// runtime, as `tessel run` does. Null where the passes keep one kernel; then `task` is
  /// what a model runs.
  std::shared_ptr<const Graph> as_in_model;
  std::string as_in_model_name;             // the row's name, e.g. "tessel Winograd F(4x4, 3x3)"
  std::shared_ptr<Module> as_in_model_run;  // its artifact, loaded when records are picked
  std::string as_in_model_source;           // which of its kernels run tuned records
};

struct BenchRowOptions {
  std::set<std::string> vs;  // peers to include: default, adams2019, onednn, openblas
  int threads = 2;
  Target target;
};

/// The buffers rows read and write, alive as long as the rows.
struct TaskBench {
  std::vector<Tensor> inputs;
  std::vector<float> reference;  // the default schedule's output (the first output), as fp32
  /// Buffers the vendor rows read that the task's inputs do not hold (a blocked conv weight
  /// put back into the layout peers read).
  std::vector<std::shared_ptr<const std::vector<float>>> peer_storage;
  double flops = 0;
  double bytes = 0;              // compulsory traffic: inputs read once, outputs written once
  std::vector<bench::KernelRow> rows;  // rows[0] is tessel's
  std::string no_vendor_peer;    // why a requested vendor library has no row for this task
};

/// Compiles and wraps every row; a row that cannot be built says why instead. The first row
/// is tessel's (tuned when the task has a record); it is the row ratios are taken against.
Result<std::shared_ptr<TaskBench>> make_task_bench(const BenchTask &task, const BenchRowOptions &options);

}  // namespace tessel
