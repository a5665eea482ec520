#pragma once
// Where a tuning session's candidates are measured: here, by a Measurer's worker processes
// (LocalCandidateMeasurer), or by `tessel worker`s anywhere through the database's work
// queue (QueueMeasurer, tuner/queue_measurer.h). The session proposes and records alike.
#include <memory>
#include <vector>

#include "tuner/measure.h"
#include "tuner/search_policy.h"

namespace tessel {

class CandidateMeasurer {
 public:
  virtual ~CandidateMeasurer() = default;
  /// The task's built-in schedule measured (its reference output kept where the
  /// candidates are checked); measured once, then the same answer.
  virtual Result<MeasureResult> prepare_reference() = 0;
  /// One result per candidate, in order. An error only when the measuring itself broke
  /// (the queue's database): a candidate that fails has a result that says how.
  virtual Result<std::vector<MeasureResult>> measure(const std::vector<Candidate> &candidates) = 0;
  /// Where measuring time went here (zero where others measure).
  virtual MeasurePhaseSeconds phase_seconds() const { return {}; }
  /// The task's best median so far, measured where this measurer measures; candidates
  /// clearly slower may then be timed with fewer runs. Ignored where others measure.
  virtual void set_best_seconds(double) {}
};

/// Measures on this machine.
class LocalCandidateMeasurer : public CandidateMeasurer {
 public:
  explicit LocalCandidateMeasurer(std::unique_ptr<Measurer> measurer) : measurer_(std::move(measurer)) {}
  Result<MeasureResult> prepare_reference() override { return measurer_->prepare_reference(); }
  Result<std::vector<MeasureResult>> measure(const std::vector<Candidate> &candidates) override {
    std::vector<Schedule> schedules;
    for (const Candidate &c : candidates) schedules.push_back(c.schedule);
    return measurer_->measure(schedules);
  }
  MeasurePhaseSeconds phase_seconds() const override { return measurer_->phase_seconds(); }
  void set_best_seconds(double seconds) override { measurer_->set_best_seconds(seconds); }
  Measurer &measurer() { return *measurer_; }

 private:
  std::unique_ptr<Measurer> measurer_;
};

}  // namespace tessel
