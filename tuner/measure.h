#pragma once
// Measurement of one task's candidate schedules, compiled and run in worker processes with
// timeouts, so a kernel that crashes, hangs or runs out of memory costs one record, not the
// tuning run (tuner/candidate_worker.h). A Builder compiles a batch's candidates in parallel (one worker
// per core); a Runner then times them one at a time, with no compilation beside them. The
// Measurer owns what they check against: the task's inputs and reference outputs.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "task/task.h"
#include "tuner/builder.h"
#include "tuner/kernel_timing.h"
#include "tuner/measure_result.h"
#include "tuner/runner.h"
#include "tuning_db/tuning_record.h"

namespace tessel {

struct MeasureOptions {
  int jobs = 0;  // parallel builders; 0: one per core
  int threads = 0;  // threads of a candidate's parallel loops; 0: HL_NUM_THREADS or all cores
  double compile_timeout_seconds = 120;
  double run_timeout_seconds = 20;  // correctness run + timing of one candidate
  TimingOptions timing;
  /// A candidate whose median is this many times the task's best (set_best_seconds) stops
  /// being timed once TimingOptions::min_runs are taken, one slower than the best at half
  /// the minimum time; 0: every candidate is timed fully.
  double early_stop_factor = 1.5;
  /// Relative difference from the reference output above which a result is wrong.
  double tolerance = 1e-4;
  /// For tests of the isolation: "crash" makes every candidate's worker (not the
  /// reference's) die of SIGSEGV after compiling, "hang" makes it sleep past the run
  /// timeout. Empty in real use.
  std::string inject_fault;
  /// Where candidates compile and where they are timed; null: LocalBuilder(jobs), LocalRunner.
  std::shared_ptr<Builder> builder;
  std::shared_ptr<Runner> runner;
};

/// Measures schedules of one task. The process that owns a Measurer never runs a Halide
/// kernel itself (a forked child of a process with a live Halide thread pool would hang):
/// even the reference output comes from a worker.
class Measurer {
 public:
  Measurer(Task task, Target target, MeasureOptions options = {});
  ~Measurer();
  Measurer(const Measurer &) = delete;
  Measurer &operator=(const Measurer &) = delete;

  /// Computes the reference output with the built-in schedule once (its timing is the
  /// untuned baseline). measure() calls it first.
  Result<MeasureResult> prepare_reference();
  /// prepare_reference() of many tasks at once: their workers compile side by side (each
  /// Measurer's `jobs` at a time), then run one after another, as a batch of one task's
  /// candidates does. Each Measurer keeps its outcome for its own prepare_reference().
  static void prepare_references(const std::vector<Measurer *> &measurers);
  /// One result per schedule, in order.
  std::vector<MeasureResult> measure(const std::vector<Schedule> &schedules);

  /// The task's best median so far (0: none yet), for stopping clearly slower candidates early.
  void set_best_seconds(double seconds) { best_seconds_ = seconds; }

  const Task &task() const { return task_; }
  const MeasureResult &baseline() const { return baseline_; }
  /// Phases of every batch this Measurer ran (a reference batch of many Measurers counts
  /// in the first one's).
  const MeasurePhaseSeconds &phase_seconds() const { return phase_seconds_; }

 private:
  /// One candidate of one Measurer (null schedule: its built-in one).
  struct WorkerJob {
    const Measurer *measurer;
    const Schedule *schedule;
  };
  /// Jobs of one or many Measurers, built and run by the first one's Builder and Runner;
  /// results in order. The reference run writes its outputs instead of comparing them.
  static std::vector<MeasureResult> run_jobs(const std::vector<WorkerJob> &jobs, bool reference_run);
  /// In a worker process: compiles a candidate, and keeps it ready to be checked and timed.
  CompiledCandidate compile_candidate(const Schedule *schedule, bool reference_run) const;
  MeasureResult check_and_time(const JitKernel &kernel, bool reference_run) const;
  Result<void> write_reference(const std::vector<Tensor> &outputs) const;
  /// Takes the reference run's result: reads the outputs it wrote, or keeps why it failed.
  void take_reference(const MeasureResult &run);
  /// Takes the default GPU schedule's run (checked against the reference) as the baseline.
  void take_gpu_baseline(const MeasureResult &run);
  std::string reference_path(size_t output) const;

  Task task_;
  Target target_;
  MeasureOptions options_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> reference_;
  MeasureResult baseline_;
  bool have_reference_ = false;
  std::optional<Error> reference_error_;
  std::string scratch_dir_;
  MeasurePhaseSeconds phase_seconds_;
  double best_seconds_ = 0;
};

}  // namespace tessel
