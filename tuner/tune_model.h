#pragma once
// `tessel tune`: the tuning loop over a model's tasks. Every measured candidate goes into
// the tuning database the moment it is measured, so a stopped run loses nothing, and a
// later run (of this model or another sharing workloads) starts from what is there.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "graph/ir/graph.h"
#include "tuner/evolutionary_search.h"
#include "tuner/measure.h"
#include "tuner/queue_measurer.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

/// The schedule_hash of a task's built-in schedule in the database (its schedule text is
/// empty): measured first, so the best record is never slower than untuned execution.
inline constexpr const char *kBuiltinScheduleHash = "builtin";

struct TuneOptions {
  int trials = 2000;  // measured candidates for the whole model
  /// > 0: no round starts once this many seconds have passed since the session began
  /// (a fixed slot of machine time, e.g. on a borrowed GPU); the trials still cap the run.
  double time_budget_seconds = 0;
  int batch = 8;      // candidates per round
  uint64_t seed = 1;
  /// Threads of the candidates' parallel loops, which the sketch rules split loops for;
  /// 0: HL_NUM_THREADS or all cores.
  int threads = 0;
  MeasureOptions measure;
  /// true: candidates (and each task's reference) go into the database's work queue and
  /// `tessel worker`s measure them; this process searches, trains and schedules only.
  bool remote = false;
  QueueMeasureOptions queue;
  SearchOptions search;
  /// Progress lines (one per round); nothing when empty.
  std::function<void(const std::string &)> log;
  /// With no cost_model given: a pretrained model the fresh XgbCostModel starts from (see
  /// XgbCostModel::start_from); empty: the shipped one for the target, if any
  /// (tuner/shipped_cost_model.h); "none": start from nothing.
  std::string pretrained_cost_model;
  /// The cost model the search ranks candidates with; null: a fresh XgbCostModel.
  /// RandomCostModel is the ablation baseline (no learning).
  std::shared_ptr<CostModel> cost_model;
  /// How each round's candidates are chosen; null: EvolutionarySearchPolicy(search).
  std::shared_ptr<SearchPolicy> search_policy;
  /// false: the built-in schedule is measured (as the reference) but not recorded, so the
  /// best record is the best *searched* schedule (for comparing searches).
  bool record_builtin = true;
  /// A task with no tuned record of its own first measures up to this many schedules of
  /// its nearest relatives in the database (tuner/schedule_transfer.h); 0: none.
  int transfer = 4;
  /// Called after every round with the trials measured so far in this run and the
  /// estimated model latency (sum of weight x best seconds over the tasks).
  std::function<void(int trials, double latency_seconds)> on_round;
};

struct TaskTuneSummary {
  std::string workload_key;
  std::string ops;
  int weight = 1;
  int64_t flops = 0;
  int trials = 0;                 // measured in this run
  double builtin_seconds = 0;     // the untuned (built-in) schedule
  double best_seconds = 0;        // best record in the database after the run (0: none)
  std::string skipped;            // why the task was not tuned, if it was not
  int transferred = 0;            // schedules transferred from relatives, measured first
  bool best_transferred = false;  // the best record of this run is one of them
};

/// Where a tuning run's wall time went (seconds, summed over the run).
struct TuneTimeSplit {
  double prepare = 0;    // tasks made concrete, every reference measured
  double search = 0;     // proposing candidates (cost model ranking included)
  double measure = 0;    // measuring batches, all of it; of which:
  MeasurePhaseSeconds phases;  //   building, waiting for the host lock, verifying + timing (local only)
  double record = 0;     // writing records
  double train = 0;      // retraining the cost model
};

struct TuneSummary {
  std::vector<TaskTuneSummary> tasks;
  int measured = 0;
  int failed = 0;  // records with a status other than ok
  /// Remote tuning: ok results measured on a machine other than the task reference's,
  /// recorded but not compared with the task's best.
  int other_machine = 0;
  double wall_seconds = 0;
  TuneTimeSplit time;
  /// Tasks that started from schedules transferred from relatives.
  int transferred_tasks() const;
};

Result<TuneSummary> tune_model(const Graph &graph, const Target &target, TuningDatabase &db, const TuneOptions &options);

/// This machine's signature, stored with every record: the CPU model name, its CPU count and
/// vector ISA ("AMD EPYC 9B45 (2 cpus, avx2 fma avx512f)", from /proc/cpuinfo), or what
/// TESSEL_MACHINE_SIGNATURE says.
std::string machine_description();

}  // namespace tessel
