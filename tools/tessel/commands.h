#pragma once
// The CLI's subcommands as functions returning the process exit code (0 ok, 1 error).
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "executor/load_model.h"
#include "graph/ir/graph.h"
#include "peers/bench_tasks.h"

namespace tessel {

struct RunOptions;
/// --max-input-bytes, or its default.
int64_t max_input_bytes(const RunOptions &options);

struct RunOptions {
  OptimizeOptions optimize;
  std::string model_path;
  std::vector<std::string> inputs;  // NAME=file.npy or file.npy
  std::string output_dir;
  int repeat = 10;
  int warmup = 1;  // untimed runs before the timed ones (the first also compiles JIT kernels)
  int threads = 0;
  uint64_t seed = 0;
  std::string target = "llvm";
  bool json = false;
  /// Tuning database whose best records replace built-in schedules; empty: untuned.
  std::string db_path;
  /// Artifacts: time every kernel call and print where a run's time goes.
  bool profile = false;
  bool mapped_weights = false;  // artifacts: keep weights.bin mapped, not copied into huge pages
  bool no_pin = false;          // artifacts: leave thread placement to the OS
  /// Largest input tensor made (random) or read (.npy); 0: a quarter of physical memory.
  int64_t max_input_bytes = 0;
};
int run_command(const RunOptions &options);

struct InspectOptions {
  OptimizeOptions optimize;
  std::string model_path;
  bool print_graph = false;
  bool tasks = false;
  bool json = false;
  std::string dot_path;  // Graphviz of the fused graph here; "-" for stdout
  int task = -1;                 // with --schedule: print this task's schedule and loop nest
  std::string schedule = "default";  // a schedule file, or "default"
};
int inspect_command(const InspectOptions &options);

/// `inspect --task N`: the task's schedule (a file, or "default") and the loop nest it means.
int print_task_schedule(const Graph &graph, int task_index, const std::string &schedule_source,
                        const std::string &target);

struct BenchOptions {
  BenchRequest request;         // what to time, and tuning first
  std::vector<std::string> vs;  // peers; empty: all (default, adams2019, onednn, openblas)
  int threads = 0;    // 0: every core
  int rounds = 5;
  double min_seconds = 0.2;  // per row and round
  bool remeasure_peak = false;
  bool cold = false;  // weights evicted from the caches before every run
  bool json = false;
  /// The process's arguments, to re-execute with the peer libraries' thread variables set
  /// (OpenMP and OpenBLAS read them when they load); null: no re-exec.
  char **argv = nullptr;
};
int bench_command(const BenchOptions &options);

struct TuneCommandOptions {
  OptimizeOptions optimize;
  std::string model_path;
  std::string op;     // instead of a model: one kernel, matmul or conv ...
  std::string shape;  // ... of this size (as `tessel bench` takes it)
  double timeout_ms = 0;     // > 0: per-candidate run timeout
  double min_repeat_ms = 0;  // > 0: each candidate is timed for at least this long
  bool cold_weights = false;  // evict each task's weights from the caches before every timed run
  std::string target = "llvm";
  std::string db_path = "tessel.db";
  int trials = 2000;
  double time_budget_seconds = 0;  // > 0: stop starting rounds after this long
  int batch = 0;  // 0: one candidate per builder, at least 8
  int jobs = 0;
  int threads = 0;
  uint64_t seed = 1;
  bool remote = false;  // measure through the database's work queue (`tessel worker`s)
  double remote_give_up_seconds = 0;  // > 0: fail a batch no worker progressed on for this long
  int transfer = 4;  // schedules a new task takes from its relatives in the database
  std::string cost_model;  // pretrained cost model to start from; empty: the shipped one; "none"
};
int tune_command(const TuneCommandOptions &options);

/// `tessel worker`: measures queued candidates for remote tuning (tuner/queue_worker.h).
struct WorkerCommandOptions {
  std::string db_path;
  std::string target = "llvm";
  std::string name;
  int jobs = 0;
  int threads = 0;
  int claim_batch = 0;
  double lease_seconds = 60;
  double idle_exit_seconds = 0;
  int64_t max_candidates = 0;
  double timeout_ms = 0;
  double min_repeat_ms = 0;
};
int worker_command(const WorkerCommandOptions &options);

struct CompileCommandOptions {
  OptimizeOptions optimize;
  std::string model_path;
  std::string target = "llvm";
  std::string db_path;   // tuning database; with neither this nor log_path, ./tessel.db if present
  std::string log_path;  // tuning log (JSON lines)
  std::string output_path = "model.tsl";
  std::string ptx_dir;  // --target cuda: write every task's PTX here instead of an artifact
  bool json = false;
  /// > 0: try up to this many records per task inside the model; 0: the fastest alone;
  /// < 0 (default): 2 where there are records and the target is the host CPU, else 0.
  int select_in_graph = -1;
  int threads = 0;          // threads of the in-graph runs; 0: HL_NUM_THREADS or all cores
  bool thread_choice = true;  // measure which kernel calls run on one thread
};
int compile_command(const CompileCommandOptions &options);

struct ReportOptions {
  OptimizeOptions optimize;  // how the model is loaded: as `tessel tune` loaded it, so keys match
  std::string db_path = "tessel.db";
  std::string model_path;  // empty: every workload of the target in the database
  std::string target = "llvm";
  std::string output_path = "report.html";
  std::string label;                 // the --db run's name in a comparison (default: its path)
  std::vector<std::string> compare;  // "LABEL=DB": other runs' model curves drawn over this one
};
/// `tessel report`: the tuning database as one self-contained HTML page.
int report_command(const ReportOptions &options);

/// `tessel run model.tsl`: runs a compiled artifact through the deploy runtime.
int run_artifact_command(const RunOptions &options);
/// `tessel inspect model.tsl`: the manifest, tasks and their records, arena size.
int inspect_artifact_command(const InspectOptions &options);
/// Whether `path` is an artifact directory (holds manifest.json).
bool is_artifact_path(const std::string &path);

/// Prints "tessel: error: MESSAGE" on stderr (one line) and returns exit code 1.
int fail(const std::string &message);


}  // namespace tessel
