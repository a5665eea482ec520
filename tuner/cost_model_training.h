#pragma once
// Training the cost model from a tuning database: the samples records make (as the tuner's
// online retraining uses them), and the offline training of the pretrained model that ships
// with tessel (`tessel db train-model`, scripts/pretrain_cost_model.py).
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "tuner/cost_model.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

/// The samples of `records` that carry features of today's width (feature_count()): a
/// failed record is a sample of throughput 0.
std::vector<CostSample> cost_samples(const std::vector<TuningRecord> &records);

struct CostModelTraining {
  int records = 0;         // records of the target in the database
  int samples = 0;         // trained on
  int workloads = 0;       // distinct workloads trained on
  int excluded = 0;        // samples left out (held-out workloads)
  double train_pairwise_accuracy = 0;  // on the training samples, within each workload
};

/// The distinct workload keys of the models at `model_paths`, as `tessel tune` sees them
/// (to hold a model's workloads out of training).
Result<std::set<std::string>> workloads_of_models(const std::vector<std::string> &model_paths);

/// Trains an XgbCostModel on every record of `target` in `db` except those of
/// `excluded_workloads`, and saves it to `output`. With `base_model` (a saved model), the new
/// trees continue from its trees (XgbCostModel::start_from): how records of another host are
/// added to a model whose own training records are not at hand.
Result<CostModelTraining> train_cost_model(const TuningDatabase &db, const std::string &target,
                                           const std::set<std::string> &excluded_workloads,
                                           const std::string &output, const std::string &base_model = {});

}  // namespace tessel
