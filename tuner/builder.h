#pragma once
// The first half of measuring (TVM's ProgramBuilder): candidates compiled in worker processes
// and handed to a Runner (tuner/runner.h) ready to be timed. Swappable through
// MeasureOptions::builder.
#include <vector>

#include "tuner/candidate_worker.h"

namespace tessel {

class Builder {
 public:
  virtual ~Builder() = default;
  /// One candidate per job, in order: compiled and waiting for a Runner, or finished with
  /// its result (the compile failed, crashed or ran past its timeout).
  virtual std::vector<CandidateWorker> build(const std::vector<BuildJob> &jobs) = 0;
};

/// Compiles on this machine in `jobs` worker processes (0: one per core), each taking the
/// next candidate as soon as it compiled one, so a slow compile holds one core, not its group.
class LocalBuilder : public Builder {
 public:
  explicit LocalBuilder(int jobs = 0);
  std::vector<CandidateWorker> build(const std::vector<BuildJob> &jobs) override;

 private:
  size_t at_once_;
};

}  // namespace tessel
