#include "tuner/ranking_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessel {
namespace {

/// 1-based ranks, ties sharing the average of the ranks they span.
std::vector<double> average_ranks(const std::vector<double> &values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t start = 0; start < order.size();) {
    size_t end = start + 1;
    while (end < order.size() && values[order[end]] == values[order[start]]) ++end;
    const double rank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2;
    for (size_t i = start; i < end; ++i) ranks[order[i]] = rank;
    start = end;
  }
  return ranks;
}

}  // namespace

double pairwise_ranking_accuracy(const std::vector<double> &predicted, const std::vector<double> &actual) {
  const size_t n = std::min(predicted.size(), actual.size());
  double agreeing = 0;
  double pairs = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      if (actual[i] == actual[j]) continue;
      pairs += 1;
      const double p = predicted[i] - predicted[j];
      const double a = actual[i] - actual[j];
      if (p == 0)
        agreeing += 0.5;
      else if ((p > 0) == (a > 0))
        agreeing += 1;
    }
  return pairs > 0 ? agreeing / pairs : 0.5;
}

double spearman_correlation(const std::vector<double> &a, const std::vector<double> &b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 2) return 0;
  const std::vector<double> ra = average_ranks({a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n)});
  const std::vector<double> rb = average_ranks({b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)});
  const double mean = (static_cast<double>(n) + 1) / 2;
  double covariance = 0, variance_a = 0, variance_b = 0;
  for (size_t i = 0; i < n; ++i) {
    covariance += (ra[i] - mean) * (rb[i] - mean);
    variance_a += (ra[i] - mean) * (ra[i] - mean);
    variance_b += (rb[i] - mean) * (rb[i] - mean);
  }
  if (variance_a == 0 || variance_b == 0) return 0;
  return covariance / std::sqrt(variance_a * variance_b);
}

}  // namespace tessel
