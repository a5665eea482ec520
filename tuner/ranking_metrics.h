#pragma once
// How well a cost model orders candidates: the numbers the tests and the tuner's logs report.
#include <vector>

namespace tessel {

/// Over all pairs whose `actual` values differ, the fraction that `predicted` orders the
/// same way (a tie in `predicted` counts one half). 1 = perfect, 0.5 = random. Returns 0.5
/// when no pair differs. Both vectors must have the same length.
double pairwise_ranking_accuracy(const std::vector<double> &predicted, const std::vector<double> &actual);

/// Spearman's rank correlation (ties get their average rank); 0 when either side is constant.
double spearman_correlation(const std::vector<double> &a, const std::vector<double> &b);

}  // namespace tessel
