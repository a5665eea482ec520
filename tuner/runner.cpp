#include "tuner/runner.h"

#include "base/host_lock.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

void LocalRunner::run(std::vector<CandidateWorker> &workers, MeasurePhaseSeconds &phases) {
  const auto lock_start = Clock::now();
  auto host_lock = HostTimingLock::acquire();
  phases.lock_wait += seconds_since(lock_start);
  const auto run_start = Clock::now();
  for (CandidateWorker &w : workers)
    if (!w.result) run_to_result(w);
  phases.run += seconds_since(run_start);
}

}  // namespace tessel
