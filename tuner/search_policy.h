#pragma once
// How a tuning round chooses what to measure (TVM auto_scheduler's SearchPolicy). The
// tuning session asks its policy for a batch of new candidates of one task, measures them
// and retrains the cost model; EvolutionarySearchPolicy (evolutionary_search.h) is tessel's.
// TuneOptions::search_policy swaps it.
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/schedule_space.h"
#include "tuner/cost_model.h"

namespace tessel {

/// A schedule proposed for measurement, with the features the cost model scored.
struct Candidate {
  Schedule schedule;
  std::vector<float> features;
  float score = 0;
  std::string hash;  // schedule_hash(schedule) when known; empty: not computed
};

class SearchPolicy {
 public:
  virtual ~SearchPolicy() = default;
  /// Up to `batch` new candidates for `compute`. `seeds` are the best measured schedules;
  /// `measured` holds schedule_hash of everything measured for this task and target, none
  /// of which may be proposed again.
  virtual std::vector<Candidate> propose(const ComputeDesc &compute, const ScheduleSpace &space,
                                         const CostModel &model, const std::vector<Schedule> &seeds,
                                         const std::set<std::string> &measured, int batch, std::mt19937_64 &rng) = 0;
  /// "evolutionary", ...: for logs and reports.
  virtual std::string name() const = 0;
};

}  // namespace tessel
