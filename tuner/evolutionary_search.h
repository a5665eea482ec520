#pragma once
// Evolutionary search over one task's schedule space, guided by the cost model (Ansor's
// search policy): a population of fresh sketch samples plus the best measured schedules,
// mutation and crossover, selection by predicted score, then an epsilon-greedy pick of what
// to measure. Never proposes a schedule already measured.
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/schedule_space.h"
#include "tuner/cost_model.h"
#include "tuner/search_policy.h"

namespace tessel {

struct SearchOptions {
  int population = 1024;
  int generations = 4;
  double crossover_fraction = 0.2;  // of each generation's children; the rest are mutations
  double epsilon = 0.2;             // share of a batch drawn at random instead of by score
  int threads = 0;                  // threads replaying and mutating candidates; 0: one per core
};

/// The features of a schedule, or an empty vector when it does not replay.
std::vector<float> candidate_features(const ComputeDesc &compute, const Schedule &schedule, int threads);

/// `batch` new candidates for `compute`. `seeds` are the best measured schedules (they
/// breed but are never proposed again); `measured` holds schedule_hash of everything
/// measured for this task and target.
std::vector<Candidate> propose_candidates(const ComputeDesc &compute, const ScheduleSpace &space,
                                          const CostModel &model, const std::vector<Schedule> &seeds,
                                          const std::set<std::string> &measured, int batch,
                                          const SearchOptions &options, std::mt19937_64 &rng);

/// propose_candidates as a SearchPolicy, with fixed options.
class EvolutionarySearchPolicy final : public SearchPolicy {
 public:
  explicit EvolutionarySearchPolicy(SearchOptions options = {}) : options_(options) {}
  std::vector<Candidate> propose(const ComputeDesc &compute, const ScheduleSpace &space, const CostModel &model,
                                 const std::vector<Schedule> &seeds, const std::set<std::string> &measured, int batch,
                                 std::mt19937_64 &rng) override {
    return propose_candidates(compute, space, model, seeds, measured, batch, options_, rng);
  }
  std::string name() const override { return "evolutionary"; }

 private:
  SearchOptions options_;
};

/// A child taking each step from one parent or the other, when both parents have the same
/// structure (same step kinds in the same order, as schedules of one sketch do); it must
/// replay. Empty otherwise.
std::optional<Schedule> crossover(const ComputeDesc &compute, const Schedule &a, const Schedule &b,
                                  std::mt19937_64 &rng);

}  // namespace tessel
