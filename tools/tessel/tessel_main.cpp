// The tessel command line: argument parsing only; every feature is a library call.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <map>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "tools/tessel/commands.h"
#include "tools/tessel/db_options.h"

namespace {

/// A number `allowed` accepts; otherwise `what` is allowed. CLI11's PositiveNumber said
/// "Value 0 not in range 0.000000 to 1.79e308", which says nothing of what is allowed.
CLI::Validator number_check(bool (*allowed)(double), const std::string &what, const std::string &label) {
  return CLI::Validator(
      [allowed, what](std::string &text) -> std::string {
        try {
          size_t used = 0;
          const double value = std::stod(text, &used);
          if (used == text.size() && allowed(value)) return "";
        } catch (const std::exception &) {
        }
        return "must be " + what + ", not '" + text + "'";
      },
      label);
}
const CLI::Validator kPositive =
    number_check([](double v) { return v > 0; }, "a number greater than 0 (at least 1 for counts)", "> 0");
/// A duration in seconds, written bare or with a unit: 90, 90s, 10m, 2h.
const CLI::AsNumberWithUnit kDuration(std::map<std::string, double>{{"s", 1.0}, {"m", 60.0}, {"h", 3600.0}},
                                      CLI::AsNumberWithUnit::CASE_INSENSITIVE);
const CLI::Validator kNonNegative = number_check([](double v) { return v >= 0; }, "a number of 0 or more", ">= 0");

}  // namespace

int run_tessel(int argc, char **argv) {
  CLI::App app{"tessel: tensor-program scheduler and auto-tuner"};
  app.require_subcommand(1);

  tessel::RunOptions run;
  CLI::App *run_cmd = app.add_subcommand("run", "Run a model (.onnx, JIT kernels on the host CPU; --db for tuned schedules) or a compiled artifact (host CPU, or an NVIDIA GPU for cuda artifacts)");
  run_cmd->add_option("model", run.model_path, "model.onnx, or an artifact from `tessel compile`")->required();
  run_cmd->add_option("--input,-i", run.inputs, "NAME=file.npy (or file.npy, positional); random inputs when none")
      ->take_all();
  run_cmd->add_option("--output-dir,-o", run.output_dir, "write <output name>.npy per graph output here");
  run_cmd->add_option("--repeat,-r", run.repeat, "timed runs after the warm-up runs")->check(kPositive);
  run_cmd->add_option("--warmup", run.warmup, "untimed runs first (default 1; the first is reported as the first run)")
      ->check(kPositive);
  run_cmd->add_option("--threads,-t", run.threads, "worker threads (default: all cores)")->check(kPositive);
  run_cmd->add_option("--seed", run.seed, "seed for random inputs");
  run_cmd->add_option("--max-input-bytes", run.max_input_bytes,
                      "refuse an input tensor (random or .npy) larger than this, e.g. 512M or 2G (default: a quarter "
                      "of physical memory)")
      ->transform(CLI::AsSizeValue(false))
      ->check(kPositive);
  run_cmd->add_option("--target", run.target, "compilation target (llvm)");
  run_cmd->add_flag("--json", run.json, "machine-readable summary on stdout");
  run_cmd->add_option("--db", run.db_path, "use the best schedules recorded in this tuning database");
  run_cmd->add_flag("--profile", run.profile,
                    "artifacts: time every kernel call; print each one's median against its tuning record");
  run_cmd->add_flag("--no-pin", run.no_pin,
                    "artifacts: do not pin the kernels' threads to CPUs (the OS places them)");
  run_cmd->add_flag("--mapped-weights", run.mapped_weights,
                    "artifacts: map weights.bin read-only instead of reading it into huge pages");

  auto add_optimize_flags = [](CLI::App *cmd, tessel::OptimizeOptions &o) {
    cmd->add_flag("!--no-passes", o.enabled, "run the graph as imported, without the optimizer's passes");
    cmd->add_option("--skip-pass", o.skip, "do not run this pass (repeatable)")->take_last();
    cmd->add_flag("--print-passes", o.print_after_each, "print the graph after every pass (to stderr)");
  };
  add_optimize_flags(run_cmd, run.optimize);

  tessel::InspectOptions inspect;
  CLI::App *inspect_cmd = app.add_subcommand("inspect", "Describe a model: ops, inputs/outputs, parameters, FLOPs");
  inspect_cmd->add_option("model", inspect.model_path, "model.onnx, or an artifact from `tessel compile`")->required();
  inspect_cmd->add_flag("--graph", inspect.print_graph, "print every node with inferred types");
  inspect_cmd->add_flag("--tasks", inspect.tasks, "list fused tasks: workload key, ops, shape, weight, FLOPs");
  inspect_cmd->add_flag("--json", inspect.json, "machine-readable output");
  inspect_cmd->add_option("--target", inspect.optimize.target, "target whose layout passes run (llvm, cuda)");
  inspect_cmd->add_option("--dot", inspect.dot_path, "write the fused graph as Graphviz DOT to FILE ('-': stdout)");
  inspect_cmd->add_option("--task", inspect.task, "print the schedule and loop nest of task N (see --tasks)");
  inspect_cmd->add_option("--schedule", inspect.schedule, "with --task: a schedule file, or 'default'");
  add_optimize_flags(inspect_cmd, inspect.optimize);

  tessel::TuneCommandOptions tune;
  CLI::App *tune_cmd = app.add_subcommand("tune", "Search schedules for every task of a model, recording in the tuning database");
  tune_cmd->add_option("model", tune.model_path, "model.onnx (or --op and --shape for one kernel)");
  tune_cmd->add_option("--op", tune.op, "tune one kernel instead of a model: matmul or conv");
  tune_cmd->add_option("--shape", tune.shape, "with --op: MxNxK, or N,C,H,W,K,R,S[,stride[,pad]] for conv");
  tune_cmd->add_option("--timeout-ms", tune.timeout_ms, "a candidate that runs longer is recorded as a timeout")
      ->check(kPositive);
  tune_cmd->add_option("--min-repeat-ms", tune.min_repeat_ms, "time each candidate for at least this long (default 100)")
      ->check(kPositive);
  tune_cmd->add_option("--target", tune.target, "compilation target (llvm)");
  tune_cmd->add_option("--cost-model", tune.cost_model,
                       "pretrained cost model (XGBoost JSON) the search starts from and keeps training; "
                       "default: the one shipped for the target; none: start untrained");
  tune_cmd->add_option("--transfer", tune.transfer,
                       "a task new to the database first measures this many schedules of its nearest relatives "
                       "there (same ops, other shapes); 0: none (default 4)")
      ->check(CLI::NonNegativeNumber);
  tune_cmd->add_option("--trials", tune.trials, "measured candidates for the whole model")->check(kPositive);
  tune_cmd->add_option("--time-budget", tune.time_budget_seconds,
                       "no round starts after this long: seconds, or with a unit (90s, 10m, 2h); the trials still "
                       "cap the run")
      ->transform(kDuration)
      ->check(kPositive);
  tune_cmd->add_option("--db", tune.db_path, "tuning database: an SQLite file, created when missing, or a postgresql:// URL");
  tune_cmd->add_flag("--cold-weights", tune.cold_weights,
                     "time candidates with the task's weights evicted from the caches before every run, as inside "
                     "a model whose weights exceed the cache; such records are kept apart and deployed first");
  tune_cmd->add_flag("--remote", tune.remote,
                     "search here, measure elsewhere: candidates go into the database's work queue and `tessel "
                     "worker`s measure them");
  tune_cmd->add_option("--remote-give-up", tune.remote_give_up_seconds,
                       "with --remote: fail when queued candidates see no worker progress this long (default: wait)")
      ->transform(kDuration)
      ->check(kPositive);
  tune_cmd->add_option("--batch", tune.batch, "candidates measured per round (default: one per builder, at least 8)")->check(kPositive);
  tune_cmd->add_option("--jobs,-j", tune.jobs, "parallel builders (default: one per core)")->check(kPositive);
  tune_cmd->add_option("--threads,-t", tune.threads, "threads a kernel runs with (default: all cores)")
      ->check(kPositive);
  tune_cmd->add_option("--seed", tune.seed, "search seed");
  add_optimize_flags(tune_cmd, tune.optimize);

  tessel::WorkerCommandOptions worker;
  CLI::App *worker_cmd = app.add_subcommand(
      "worker", "Measure queued candidates of remote tuning (`tessel tune --remote`) on this machine");
  worker_cmd->add_option("--db", worker.db_path, "the tuning database the coordinator uses (a postgresql:// URL, or a file)")
      ->required();
  worker_cmd->add_option("--target", worker.target, "measure candidates of this target (llvm)");
  worker_cmd->add_option("--name", worker.name, "worker name in the queue (default host:pid)");
  worker_cmd->add_option("--jobs,-j", worker.jobs, "parallel builders (default: one per core)")->check(kPositive);
  worker_cmd->add_option("--threads,-t", worker.threads, "threads a kernel runs with (default: all cores)")->check(kPositive);
  worker_cmd->add_option("--claim", worker.claim_batch, "candidates per claim (default: one per builder)")->check(kPositive);
  worker_cmd->add_option("--lease", worker.lease_seconds,
                         "a claim's lease, renewed by a heartbeat every third of it; a dead worker's candidates "
                         "return to the queue when it runs out (default 60s)")
      ->transform(kDuration)
      ->check(kPositive);
  worker_cmd->add_option("--idle-exit", worker.idle_exit_seconds, "stop after this long with nothing to claim (default: never)")
      ->transform(kDuration)
      ->check(kPositive);
  worker_cmd->add_option("--max-candidates", worker.max_candidates, "stop after completing this many")->check(kPositive);
  worker_cmd->add_option("--timeout-ms", worker.timeout_ms, "a candidate that runs longer is recorded as a timeout")
      ->check(kPositive);
  worker_cmd->add_option("--min-repeat-ms", worker.min_repeat_ms, "time each candidate for at least this long (default 100)")
      ->check(kPositive);

  tessel::CompileCommandOptions compile;
  CLI::App *compile_cmd = app.add_subcommand(
      "compile", "Compile a model with its tuned schedules into a deployable artifact directory (model.tsl)");
  compile_cmd->add_option("model", compile.model_path, "model.onnx")->required();
  compile_cmd->add_option("--target", compile.target, "compilation target: llvm (host CPU), cuda or cuda -arch=sm_XY (kernels, weights and arena on an NVIDIA GPU)");
  compile_cmd->add_option("--db", compile.db_path, "tuning database to take the best records from (default ./tessel.db if present)");
  compile_cmd->add_option("--log", compile.log_path, "tuning log (JSON lines, from `tessel db export`) instead of a database");
  compile_cmd->add_option("--output,-o", compile.output_path, "artifact directory to write (replaced atomically)");
  compile_cmd->add_flag("--json", compile.json, "machine-readable summary on stdout");
  compile_cmd->add_option("--select-in-graph", compile.select_in_graph,
                          "run up to K tuned records per task inside the model on this machine (the built-in "
                          "schedule among them) and deploy, per task, the one its calls run fastest with there "
                          "(default 2 where there are records and the target is the host CPU; 0: the fastest alone)")
      ->check(CLI::Range(0, 32));
  compile_cmd->add_option("--threads", compile.threads,
                          "threads the artifact is measured with here: which kernels run on one thread, "
                          "--select-in-graph (default: HL_NUM_THREADS or all cores)");
  compile_cmd->add_flag("!--no-thread-choice", compile.thread_choice,
                        "run every kernel on the thread pool, without measuring (in the model, on random inputs) "
                        "which are faster on one thread");
  compile_cmd->add_option("--ptx", compile.ptx_dir,
                          "with --target cuda: write each task's PTX into this directory (assembled by ptxas when found)");
  add_optimize_flags(compile_cmd, compile.optimize);

  tessel::BenchOptions bench;
  CLI::App *bench_cmd = app.add_subcommand(
      "bench", "Time a kernel (or every task of a model) against OpenBLAS, oneDNN, Halide's Adams2019 and the default schedule");
  bench_cmd->add_option("kernel", bench.request.kind,
                        "matmul, conv, depthwise, softmax, layernorm, reduce_sum|mean|max, elementwise; or model.onnx");
  bench_cmd->add_option("sizes", bench.request.spec,
                        "matmul MxNxK or BxMxNxK; conv N,C,H,W,K,R,S[,stride[,pad[,groups]]]; depthwise "
                        "N,C,H,W,R,S[,stride[,pad]]; others AxB[x...]");
  bench_cmd->add_option("--task", bench.request.task_key, "a workload key of the database instead of a kernel");
  bench_cmd->add_flag("--bias-relu", bench.request.bias_relu, "matmul/conv/depthwise: fuse a bias add and a ReLU");
  bench_cmd->add_option("--chain", bench.request.chain, "elementwise steps, e.g. add,relu,mul (default)")->delimiter(',');
  bench_cmd->add_option("--target", bench.request.target, "compilation target (llvm)");
  bench_cmd->add_option("--db", bench.request.db_path, "tuning database (default ./tessel.db)");
  bench_cmd->add_option("--trials", bench.request.trials, "tune first, until each kernel has this many searched records (a conv a model splits, e.g. into Winograd kernels: its split graph too)")
      ->check(kNonNegative);
  bench_cmd->add_option("--time-budget", bench.request.time_budget_seconds,
                        "with --trials: tuning time at most (seconds, or 90s, 10m, 2h)")
      ->transform(kDuration)
      ->check(kPositive);
  bench_cmd->add_option("--vs", bench.vs, "peers: default,adams2019,onednn,openblas (default: default,onednn,openblas; Adams2019 takes minutes on a conv)")->delimiter(',');
  bench_cmd->add_option("--threads,-t", bench.threads, "threads for every row (default: all cores)")->check(kPositive);
  bench_cmd->add_option("--rounds", bench.rounds, "interleaved timing rounds")->check(kPositive);
  bench_cmd->add_option("--min-time", bench.min_seconds, "seconds each row runs per round")->check(kPositive);
  bench_cmd->add_flag("--remeasure-peak", bench.remeasure_peak, "measure the machine's peaks again instead of the cache");
  bench_cmd->add_flag("--cold", bench.cold,
                      "evict every row's weights from the caches before each run, as a model's other layers do");
  bench_cmd->add_flag("--json", bench.json, "machine-readable output");
  add_optimize_flags(bench_cmd, bench.request.optimize);
  bench.argv = argv;

  tessel::ReportOptions report;
  CLI::App *report_cmd =
      app.add_subcommand("report", "Write the tuning database as one self-contained HTML page (curves, time split, cost model, loop nests)");
  report_cmd->add_option("--db", report.db_path, "tuning database (default ./tessel.db)");
  report_cmd->add_option("--model", report.model_path, "model.onnx: only its tasks, with their weights (default: every workload)");
  report_cmd->add_option("--target", report.target, "target whose records are shown (llvm)");
  report_cmd->add_option("--output,-o", report.output_path, "HTML file to write (default report.html)");
  report_cmd->add_option("--compare", report.compare,
                         "LABEL=DB: another tuning run of the same model, its curve drawn over this one's (repeatable)");
  report_cmd->add_option("--label", report.label, "this --db run's name when runs are compared (default: its path)");
  add_optimize_flags(report_cmd, report.optimize);

  tessel::DbOptions db;
  CLI::App *db_cmd = tessel::add_db_command(app, db);

  // CLI11 answers an unknown first word with "A subcommand is required", naming nothing.
  std::string known;
  bool is_known = false;
  for (const CLI::App *sub : app.get_subcommands({})) {
    known += (known.empty() ? "" : ", ") + sub->get_name();
    if (argc > 1 && sub->get_name() == argv[1]) is_known = true;
  }
  if (argc > 1 && argv[1][0] != '-' && !is_known) {
    std::fprintf(stderr, "tessel: unknown subcommand '%s' (one of: %s)\nRun with --help for more information.\n", argv[1],
                 known.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  run.optimize.target = run.target;  // one --target decides both the passes and the kernels
  if (*run_cmd) return tessel::is_artifact_path(run.model_path) ? tessel::run_artifact_command(run) : tessel::run_command(run);
  tune.optimize.target = tune.target;
  compile.optimize.target = compile.target;
  if (*inspect_cmd)
    return tessel::is_artifact_path(inspect.model_path) ? tessel::inspect_artifact_command(inspect)
                                                        : tessel::inspect_command(inspect);
  if (*compile_cmd) return tessel::compile_command(compile);
  if (*tune_cmd) return tessel::tune_command(tune);
  if (*worker_cmd) return tessel::worker_command(worker);
  if (*bench_cmd) return tessel::bench_command(bench);
  if (*db_cmd) return tessel::db_command(db);
  if (*report_cmd) return tessel::report_command(report);
  return 2;
}

int main(int argc, char **argv) {
  // A file-size limit (ulimit -f) or a full quota then fails the write with EFBIG, which
  // every writer reports as an error, instead of killing tessel mid-write with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  // No exception leaves tessel: anything a command did not turn into an error value is
  // still one line and exit 1, never an abort (issue 29: 39 fuzzed inputs aborted here).
  try {
    return run_tessel(argc, argv);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "tessel: error: out of memory\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tessel: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "tessel: error: an unknown exception\n");
  }
  return 1;
}
