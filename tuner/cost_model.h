#pragma once
// What the search asks of a cost model (TVM auto_scheduler's CostModel): train on measured
// candidates, score new ones. Two implementations: XgbCostModel (xgb_cost_model.h, the
// default: gradient-boosted trees) and RandomCostModel (random_cost_model.h, random scores:
// the search without learning, the ablation baseline). TuneOptions::cost_model picks one.
#include <string>
#include <vector>

#include "base/result.h"

namespace tessel {

/// One measured candidate.
struct CostSample {
  std::string workload_key;     ///< samples with the same key are normalized and ranked together
  std::vector<float> features;  ///< schedule_features(), or any fixed-width vector
  double throughput = 0;        ///< work per second in any unit fixed per workload; 0 = failed
};

/// Per sample, throughput / the best throughput of its workload (0 when a workload has no
/// positive throughput): the labels train() fits.
std::vector<float> normalized_throughputs(const std::vector<CostSample> &samples);

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Trains on `samples` (all of one feature width) and replaces what was learned before.
  /// On error the current model is kept.
  virtual Result<void> train(const std::vector<CostSample> &samples) = 0;
  /// One score per row, higher = predicted faster; comparable between rows of one workload
  /// only. An untrained model scores every row 0 (callers then fall back to random choice).
  virtual Result<std::vector<float>> predict(const std::vector<std::vector<float>> &rows) const = 0;
  /// Whether predictions mean anything yet.
  virtual bool trained() const = 0;
  /// "xgboost", "random": for logs and reports.
  virtual std::string name() const = 0;
};

}  // namespace tessel
