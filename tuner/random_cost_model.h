#pragma once
// A cost model that learns nothing: every prediction is a uniform random score (TVM's
// RandomModel). With it the evolutionary search keeps its sampling, mutation and crossover
// but picks among their results at random: the baseline that shows what the learned model
// is worth (bench/bench_tuning.cpp's ablation).
#include <cstdint>
#include <mutex>
#include <random>

#include "tuner/cost_model.h"

namespace tessel {

class RandomCostModel final : public CostModel {
 public:
  explicit RandomCostModel(uint64_t seed = 0) : rng_(seed) {}
  Result<void> train(const std::vector<CostSample> &) override { return {}; }
  Result<std::vector<float>> predict(const std::vector<std::vector<float>> &rows) const override;
  bool trained() const override { return true; }
  std::string name() const override { return "random"; }

 private:
  mutable std::mutex mutex_;
  mutable std::mt19937_64 rng_;
};

}  // namespace tessel
