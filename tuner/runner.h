#pragma once
// The second half of measuring (TVM's ProgramRunner): the Builder's compiled workers given the
// go one at a time, each checking its output against the reference and timing its kernel.
// Swappable through MeasureOptions::runner.
#include <vector>

#include "tuner/candidate_worker.h"

namespace tessel {

class Runner {
 public:
  virtual ~Runner() = default;
  /// Runs every worker that waits (one without a result) to its result, adding the time it
  /// took to `phases` (lock_wait, run).
  virtual void run(std::vector<CandidateWorker> &workers, MeasurePhaseSeconds &phases) = 0;
};

/// Times on this machine: one worker at a time, with no compile beside it, and no other
/// tessel process of this machine timing at once (the host timing lock: a second tuner,
/// `tessel worker`s). Without the lock file the run still times, only unguarded.
class LocalRunner : public Runner {
 public:
  void run(std::vector<CandidateWorker> &workers, MeasurePhaseSeconds &phases) override;
};

}  // namespace tessel
