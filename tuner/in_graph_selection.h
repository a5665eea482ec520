#pragma once
// Choosing each task's schedule inside the model instead of alone. The tuner times a
// candidate on its own, where it always finds its inputs in its own core's cache; in the
// model the producer decides where they are. A depthwise conv split across threads by
// columns, after a pointwise conv split by channels, reads half its input from the other
// core's L2, and no isolated measurement can show that (bench/results/profile.md,
// "Partition alignment"). So `tessel compile --select-in-graph K` compiles a trial
// artifact holding up to K tuned schedules per task, runs it on the deploy runtime, and
// keeps per task the schedule under which that task's calls and the calls right after
// them take least time.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "compiler/artifact_compiler.h"
#include "graph/ir/graph.h"
#include "tuning_db/best_record_source.h"
#include "tuning_db/tuning_record.h"

namespace tessel {

/// Up to `k` of a workload's records (fastest first, as a tuning source lists them) to
/// try inside the model: the fastest, then the fastest of each other way of splitting the
/// work across threads (the schedule's parallel loops), then the next fastest. Records
/// more than `max_slowdown` times slower alone than the fastest are not worth trying.
std::vector<DeployedSchedule> alternatives_to_try(const std::vector<TuningRecord> &fastest_first, int k,
                                                  double max_slowdown = 1.6);

struct InGraphSelectionOptions {
  int threads = 0;           // deploy pool threads; 0: HL_NUM_THREADS or all cores
  int rounds = 4;            // interleaved rounds per task: every alternative runs once per round
  int runs_per_round = 15;   // model runs per alternative and round
  /// A schedule replaces the task's current one only when the calls it affects get faster
  /// by at least this share: a smaller difference is within this machine's noise.
  double min_gain = 0.03;
  /// Per task, how long the child that times its schedules may take before it counts as
  /// hung; 0: 30 s plus 50 times what its runs should take.
  double child_timeout_seconds = 0;
  std::function<void(const std::string &)> log;
};

struct TaskSelection {
  std::string workload_key;
  std::string ops;
  size_t chosen = 0;                // index into the task's alternatives; 0: the tuner's best
  std::vector<double> affected_ms;  // per alternative: median ms of the calls it affects
  std::vector<double> alone_ms;     // per alternative: its record's isolated median
  /// Per alternative: why it was not timed (crashed, hung, computed something else); empty
  /// when it was. Its affected_ms is then infinite.
  std::vector<std::string> left_out;
};

struct InGraphSelection {
  std::vector<TaskSelection> tasks;  // in the order they were decided
  double latency_before_ms = 0;      // median summed kernel time per run, fastest-alone schedules
  double latency_after_ms = 0;       // the same with the chosen schedules (measured interleaved)
};

/// Loads the trial artifact (compiled with ArtifactCompileOptions::alternatives, whose
/// summary listed `tasks`) and chooses each task's schedule, biggest tasks first, one task
/// at a time with the others fixed. Random inputs. Schedules are timed in a forked child:
/// one that crashes, hangs or computes other outputs than the task's fastest is left out.
Result<InGraphSelection> select_in_graph(const std::string &trial_artifact, const std::vector<TaskAlternatives> &tasks,
                                         const InGraphSelectionOptions &options);

/// `tessel compile --select-in-graph K`: compiles a trial artifact at `trial_path` (removed
/// afterwards) with up to `k` of `source`'s records per task, chooses among them by running
/// it (select_in_graph), and returns a lookup that answers with the chosen record of every
/// task and with `base.schedules` for anything else.
struct InGraphChoice {
  DeployScheduleLookup schedules;
  double latency_before_ms = 0;  // as InGraphSelection's
  double latency_after_ms = 0;
};
Result<InGraphChoice> select_schedules_in_graph(const Graph &graph, const ArtifactCompileOptions &base,
                                                const std::shared_ptr<BestRecordSource> &source, int k,
                                                const std::string &trial_path, const InGraphSelectionOptions &options);

}  // namespace tessel
