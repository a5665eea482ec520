#pragma once
// What the tuning report shows, collected from the tuning database (and a model, when
// given): per task the tuning curve, built-in and best times, failure counts and the best
// schedule as a loop nest; the cost model's held-out predictions; totals. Rendering is
// report_html.h's job; nothing here formats HTML.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

struct ReportTask {
  int index = 0;  // position in the model (or in the database's workload order)
  std::string workload_key;
  std::string workload_text;
  std::string ops;           // "Conv+Add+Relu"
  std::string output_type;   // "float32[1,64,56,56]" (the last op's output), from the workload text
  int weight = 1;            // occurrences in the model; 1 without a model
  int64_t flops = 0;         // per occurrence; 0 when unknown (the workload text did not rebuild the task)
  std::map<RecordStatus, int64_t> records_by_status;  // every record of the task, built-in included
  int64_t records = 0;
  int64_t failed = 0;   // records whose status is not ok
  int searched = 0;     // records other than the built-in one: the trials
  std::optional<double> builtin_seconds;  // the built-in schedule's median, if recorded
  std::optional<TuningRecord> best;       // fastest ok record (may be the built-in one)
  bool best_is_builtin = false;
  /// Running best after each searched record in id order (failed ones count as trials and
  /// repeat the previous value; NaN until the first ok record): GFLOP/s when flops > 0,
  /// else milliseconds (a running minimum).
  std::vector<double> curve;
  /// 1-based trial at which the best searched record was measured; 0 when the best record is
  /// the built-in schedule or there is none.
  int best_trial = 0;
  std::string loop_nest;        // the best schedule replayed, as a loop nest; empty if unavailable
  std::string loop_nest_error;  // why the loop nest is missing
  /// Distinct error messages of the failed records with their counts, most frequent first.
  std::vector<std::pair<std::string, int64_t>> errors;
};

/// Held-out predictions of the cost model trained on the earlier records of the target.
struct PredictionPoint {
  std::string workload_key;
  double predicted = 0;  // the model's score minus the mean score of the workload's held-out points
  double measured = 0;   // median throughput / the workload's best among all feature records
  bool seen_in_training = false;  // the workload has records in the training part
};

/// The held-out metrics of one workload.
struct WorkloadPrediction {
  std::string workload_key;
  std::string ops;  // from the workload text
  int points = 0;
  bool seen_in_training = false;
  std::optional<double> pairwise_accuracy;  // when two measured values differ
  std::optional<double> spearman;           // with >= 3 points, measured values not all equal
};

struct PredictionSummary {
  bool available = false;
  std::string note;  // why not available, or caveats
  int64_t feature_records = 0;  // ok records of the target with features of the current width
  int64_t train_records = 0;
  int64_t test_records = 0;
  std::vector<PredictionPoint> points;
  std::vector<WorkloadPrediction> workloads;  // by workload key
  int unseen_workloads = 0;  // held-out workloads without a training record
  /// Means over held-out workloads: pairwise accuracy over workloads with at least one
  /// pair of different measured throughputs; Spearman over workloads with >= 3 points.
  double pairwise_accuracy = 0;
  int pairwise_workloads = 0;
  int64_t pairs = 0;  // pairs of one workload's held-out points whose measured values differ, summed
  double spearman = 0;
  int spearman_workloads = 0;
  double train_seconds = 0;
};

/// The model's end-to-end tuning curve: sum over tasks of weight x best time so far (the
/// built-in time before a task's first ok searched record), after each searched record of
/// any of the report's tasks, in id order.
struct ModelCurve {
  std::vector<double> trials;
  std::vector<double> latency_ms;
  bool complete = false;  // every task has a built-in time, so the sum covers the whole model
};

/// The model curve of another tuning run of the same tasks (another database), drawn over
/// this report's curve: `tessel report --compare LABEL=DB`.
struct ComparedCurve {
  std::string label;
  std::string db_path;  // as shown (a password masked)
  ModelCurve curve;
};

struct ReportData {
  std::string db_path;
  std::string model_path;  // empty: every workload of the target
  std::string target;      // as the records spell it
  std::string machine;     // records' machine field
  std::string generated_at;
  std::vector<std::string> notes;  // caveats shown at the top of the page
  // Totals over every record of the target (not only the report's tasks).
  int64_t records = 0;
  std::map<RecordStatus, int64_t> records_by_status;
  int64_t workloads = 0;
  std::string first_record_at, last_record_at;
  double span_seconds = 0;  // last - first created_at
  std::vector<ReportTask> tasks;
  ModelCurve model_curve;
  std::string run_label;                // this database's name beside compared runs
  std::vector<ComparedCurve> compared;  // --compare runs, in the order given
  PredictionSummary prediction;
};

struct ReportDataOptions {
  std::string db_path;     // shown in the page
  std::string target;      // Target::to_string() of the --target
  /// The model, optimized as `tessel tune` optimizes it; null: every workload of the target.
  std::shared_ptr<const Graph> model;
  std::string model_path;
  int min_prediction_records = 50;  // fewer ok records with features: a note instead of the plot
  double train_fraction = 0.7;
  bool predict = true;  // false: skip the cost model (tests of other parts)
};

/// Reads every record of the target and builds the report's data. Errors: the database
/// cannot be read, or it holds no record for the target.
Result<ReportData> collect_report_data(const TuningDatabase &db, const ReportDataOptions &options);

/// The tasks' end-to-end curve over `records` (id order; any database's records for the
/// target): each task starts from the built-in schedule's time found among those records.
ModelCurve model_curve(const std::vector<ReportTask> &tasks, const std::vector<TuningRecord> &records);

/// The op types of a workload text, joined with '+' ("Conv+Relu"), and its last output
/// type; both empty when graph_from_workload_text cannot rebuild the text.
std::string workload_ops(const std::string &workload_text);
std::string workload_output_type(const std::string &workload_text);

/// Running best after each trial, as collect_report_data computes ReportTask::curve:
/// `seconds[i]` is trial i's median (nullopt: failed). With flops > 0 the values are GFLOP/s
/// (running maximum), else milliseconds (running minimum); NaN before the first success.
std::vector<double> running_best_curve(const std::vector<std::optional<double>> &seconds, int64_t flops);

/// Parses "2024-05-01T12:34:56Z" into seconds since the epoch; nullopt if malformed.
std::optional<int64_t> parse_utc_timestamp(const std::string &text);

}  // namespace tessel
