#include "tuner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tessel {

std::vector<float> normalized_throughputs(const std::vector<CostSample> &samples) {
  std::map<std::string, double> best;
  for (const CostSample &s : samples) {
    const double t = std::isfinite(s.throughput) ? std::max(0.0, s.throughput) : 0.0;
    double &b = best[s.workload_key];
    b = std::max(b, t);
  }
  std::vector<float> labels;
  labels.reserve(samples.size());
  for (const CostSample &s : samples) {
    const double b = best[s.workload_key];
    const double t = std::isfinite(s.throughput) ? std::max(0.0, s.throughput) : 0.0;
    labels.push_back(b > 0 ? static_cast<float>(t / b) : 0.0f);
  }
  return labels;
}

}  // namespace tessel
