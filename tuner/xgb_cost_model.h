#pragma once
// The learned cost model (cost_model.h): gradient-boosted trees (XGBoost 1.7 through its C API) mapping a
// schedule's features (features.h) to a score where higher means faster. Trained from
// measured candidates of many workloads at once: each workload's throughputs are divided by
// that workload's best, so the labels of a 10 µs kernel and a 10 ms kernel share one scale.
//
// Objective: `rank:pairwise` with one query group per workload (the default). The search
// only ever compares candidates of one task, which is exactly what a per-group pairwise
// loss trains for; groups also keep a workload whose best is poorly measured from bending
// the others. `reg:squarederror` on the normalized throughput is the alternative (Ansor's
// choice) and can be selected. Measured on 800 sampled schedules of five tasks (matmul 256^3,
// 512^3, 197x83x61; conv 3x3 64ch 56x56 and 128ch 28x28), pairwise ranking accuracy averaged
// over "40 measured, 20 held out" splits within each task and leave-one-task-out: 0.79 with
// rank:pairwise, 0.77 with reg:squarederror (0.71 vs 0.65 on the 56x56 conv); re-measuring
// the same schedules agrees on about 0.90 of the pairs, the ceiling here.
//
// Thread-safety: every method may be called from any thread at any time. train() builds the
// new booster outside the lock and swaps it in, so predictions keep using the previous model
// while a retrain runs; predict() and save() hold the lock while XGBoost works (XGBoost's
// prediction buffers are per booster, so concurrent predictions are serialized).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "tuner/cost_model.h"

namespace tessel {

enum class CostObjective {
  PairwiseRanking,  ///< rank:pairwise, one group per workload
  SquaredError,     ///< reg:squarederror on throughput / best throughput of the workload
};
const char *to_text(CostObjective objective);

struct CostModelOptions {
  CostObjective objective = CostObjective::PairwiseRanking;
  int rounds = 100;  ///< boosting rounds per train()
  int max_depth = 6;
  double learning_rate = 0.1;      ///< XGBoost's eta
  double min_child_weight = 0.05;  ///< small: a few dozen records must still split
  /// XGBoost's nthread (0: all cores). One by default: the tuner's compile workers keep the
  /// cores busy, and XGBoost's OpenMP barriers spin: 100 rounds on 450 rows took 0.5 s with
  /// one thread and 42 s with two on 2 shared cores (0.3 s with OMP_WAIT_POLICY=passive).
  int threads = 1;
  uint64_t seed = 0;
};

/// The model. Move-only; a moved-from model may only be assigned to or destroyed.
class XgbCostModel final : public CostModel {
 public:
  explicit XgbCostModel(CostModelOptions options = {});
  ~XgbCostModel();
  XgbCostModel(XgbCostModel &&other) noexcept;
  XgbCostModel &operator=(XgbCostModel &&other) noexcept;
  XgbCostModel(const XgbCostModel &) = delete;
  XgbCostModel &operator=(const XgbCostModel &) = delete;

  /// Trains a new model from scratch on `samples` (all of one feature width) and replaces
  /// the current one. On error the current model is kept.
  Result<void> train(const std::vector<CostSample> &samples) override;

  /// One score per row, higher = predicted faster; comparable between rows of one workload
  /// only. An untrained model scores every row 0 (callers then fall back to random choice).
  /// Rows must have the width the model was trained on.
  Result<std::vector<float>> predict(const std::vector<std::vector<float>> &rows) const override;

  /// Whether a trained (or loaded) model is present.
  bool trained() const override;
  std::string name() const override { return "xgboost"; }
  /// Feature width of the trained model; 0 when untrained.
  int feature_width() const;
  const CostModelOptions &options() const { return options_; }

  /// Writes the model (XGBoost JSON with tessel's attributes) to `path` through a temporary
  /// file, so a crash never leaves a partial model under that name. Untrained: an Error.
  Result<void> save(const std::string &path) const;
  /// Reads a model written by save(). Errors name the path and what is wrong.
  static Result<XgbCostModel> load(const std::string &path, CostModelOptions options = {});
  /// Makes the model saved at `path` (same objective) the pretrained base: it predicts until
  /// the first train(), and every train() then continues from it (its trees first, a few new
  /// rounds per few samples fitted to what it misses) instead of starting from nothing.
  Result<void> start_from(const std::string &path);
  /// Whether start_from() gave this model a pretrained base.
  bool pretrained() const;

 private:
  struct State;
  CostModelOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace tessel
