#include "tuner/random_cost_model.h"

namespace tessel {

Result<std::vector<float>> RandomCostModel::predict(const std::vector<std::vector<float>> &rows) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uniform_real_distribution<float> score(0.0f, 1.0f);
  std::vector<float> scores;
  scores.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) scores.push_back(score(rng_));
  return scores;
}

}  // namespace tessel
