#pragma once
// The first half of measuring (TVM's ProgramBuilder): candidates compiled, each in its own
// worker process, and handed to a Runner (tuner/runner.h) ready to be timed. Swappable
// through MeasureOptions::builder.
#include <vector>

#include "tuner/candidate_worker.h"

namespace tessel {

class Builder {
 public:
  virtual ~Builder() = default;
  /// One worker per job, in order: compiled and waiting for a Runner, or finished with its
  /// result (the compile failed, crashed or ran past its timeout).
  virtual std::vector<CandidateWorker> build(const std::vector<BuildJob> &jobs) = 0;
};

/// Compiles on this machine, `jobs` workers at a time (0: one per core); the next worker is
/// forked as soon as one is ready, so a slow compile holds one core, not its whole group.
class LocalBuilder : public Builder {
 public:
  explicit LocalBuilder(int jobs = 0);
  std::vector<CandidateWorker> build(const std::vector<BuildJob> &jobs) override;

 private:
  size_t at_once_;
};

}  // namespace tessel
