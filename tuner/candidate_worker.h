#pragma once
// A measuring worker: one forked process per candidate, so a kernel that crashes, hangs or
// runs out of memory costs one record, not the tuning run. A Builder starts it and waits until
// it has compiled its kernel; a Runner then lets it run and takes its result. Worker and
// parent speak in bytes: the worker sends a ready mark once it compiled, waits for the go,
// and ends with one result line (sent at once, with no ready mark, when the compile failed).
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "base/child_process.h"
#include "tuner/measure_result.h"

namespace tessel {

/// What a worker process does: compile, report_ready, await_go, check and time, report_result.
using WorkerBody = std::function<void(ParentLink &)>;

/// One candidate for a Builder: the worker's body and its time limits.
struct BuildJob {
  WorkerBody body;
  double compile_timeout_seconds = 120;
  double run_timeout_seconds = 20;
};

/// A candidate's worker process, and its result once it has one. A Builder hands it over
/// either ready to run (process set, no result) or finished (a result: its compile failed,
/// it died, it ran past the compile timeout, or it could not be started).
struct CandidateWorker {
  std::optional<ChildProcess> process;
  std::chrono::steady_clock::time_point started;
  double compile_timeout_seconds = 120;
  double run_timeout_seconds = 20;
  std::optional<MeasureResult> result;
};

// In the worker.
/// Says the kernel is compiled.
void report_ready(ParentLink &parent);
/// Waits for the go to run; false when the parent is gone.
bool await_go(ParentLink &parent);
/// The worker's last word.
void report_result(ParentLink &parent, const MeasureResult &result);

// In the parent.
/// Waits up to `wait_seconds` for the worker to finish compiling; true once it is ready, or
/// has a result (its compile failed, it died, or it ran past the compile timeout).
bool poll_compiled(CandidateWorker &worker, double wait_seconds);
/// Gives a ready worker the go and waits (its run timeout) for its result.
void run_to_result(CandidateWorker &worker);

}  // namespace tessel
