#include "tuner/cost_model_training.h"

#include <map>

#include "executor/load_model.h"
#include "graph/fusion/fuse.h"
#include "tuner/features.h"
#include "tuner/ranking_metrics.h"
#include "tuner/xgb_cost_model.h"

namespace tessel {

std::vector<CostSample> cost_samples(const std::vector<TuningRecord> &records) {
  std::vector<CostSample> samples;
  const size_t width = static_cast<size_t>(feature_count());
  for (const TuningRecord &r : records) {
    // Records written by another feature layout cannot train this one.
    if (!r.features || r.features->size() != width) continue;
    const double seconds = r.status == RecordStatus::Ok && r.median_seconds ? *r.median_seconds : 0;
    // Cold and warm times of a workload are ranked apart: they are different objectives.
    samples.push_back({timed_cold(r) ? r.workload_key + kColdWeightsMachineSuffix : r.workload_key, *r.features,
                       seconds > 0 ? 1.0 / seconds : 0.0});
  }
  return samples;
}

Result<std::set<std::string>> workloads_of_models(const std::vector<std::string> &model_paths) {
  std::set<std::string> keys;
  for (const std::string &path : model_paths) {
    TESSEL_TRY(const Graph graph, load_optimized_model(path, OptimizeOptions{}));
    for (const Workload &w : distinct_workloads(graph, partition_graph(graph))) keys.insert(w.workload_key);
  }
  return keys;
}

Result<CostModelTraining> train_cost_model(const TuningDatabase &db, const std::string &target,
                                           const std::set<std::string> &excluded_workloads,
                                           const std::string &output, const std::string &base_model) {
  CostModelTraining summary;
  TESSEL_TRY(const std::vector<TuningRecord> records, db.records_for_target(target));
  summary.records = static_cast<int>(records.size());
  std::vector<CostSample> samples;
  for (CostSample &s : cost_samples(records)) {
    const std::string key = s.workload_key.substr(0, s.workload_key.find(kColdWeightsMachineSuffix));
    if (excluded_workloads.count(key)) ++summary.excluded;
    else samples.push_back(std::move(s));
  }
  if (samples.size() < 8)
    return make_error(ErrorKind::InvalidInput,
                      "only " + std::to_string(samples.size()) + " records of target '" + target +
                      "' with today's features: too few to train on");
  XgbCostModel model;
  if (!base_model.empty()) {
    TESSEL_TRY_VOID(model.start_from(base_model));
    // A base of another feature layout would be dropped silently by train(): say so instead.
    if (model.feature_width() != feature_count())
      return make_error(ErrorKind::InvalidInput, "cost model '" + base_model + "' reads " +
                                                     std::to_string(model.feature_width()) + " features, today's records " +
                                                     std::to_string(feature_count()) + ": it cannot be continued");
  }
  TESSEL_TRY_VOID(model.train(samples));
  TESSEL_TRY_VOID(model.save(output));
  summary.samples = static_cast<int>(samples.size());
  // Accuracy on the training set itself, per workload: how well it fits (held-out accuracy
  // is bench/cost_model_transfer's to measure).
  std::map<std::string, std::vector<size_t>> by_workload;
  for (size_t i = 0; i < samples.size(); ++i) by_workload[samples[i].workload_key].push_back(i);
  summary.workloads = static_cast<int>(by_workload.size());
  std::vector<std::vector<float>> rows;
  for (const CostSample &s : samples) rows.push_back(s.features);
  TESSEL_TRY(const std::vector<float> scores, model.predict(rows));
  double accuracy_sum = 0;
  int groups = 0;
  for (const auto &[key, indices] : by_workload) {
    if (indices.size() < 2) continue;
    std::vector<double> predicted, actual;
    for (size_t i : indices) {
      predicted.push_back(scores[i]);
      actual.push_back(samples[i].throughput);
    }
    accuracy_sum += pairwise_ranking_accuracy(predicted, actual);
    ++groups;
  }
  summary.train_pairwise_accuracy = groups ? accuracy_sum / groups : 0;
  return summary;
}

}  // namespace tessel
