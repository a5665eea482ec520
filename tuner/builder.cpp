#include "tuner/builder.h"

#include <algorithm>
#include <thread>

#include "codegen/jit_kernel.h"

namespace tessel {
namespace {

/// How long one look at a compiling worker waits before looking at the next.
constexpr double kCompilePollSeconds = 0.002;

CandidateWorker start_worker(const BuildJob &job) {
  CandidateWorker w;
  w.started = std::chrono::steady_clock::now();
  w.compile_timeout_seconds = job.compile_timeout_seconds;
  w.run_timeout_seconds = job.run_timeout_seconds;
  auto process = ChildProcess::start(job.body);
  if (!process.ok()) w.result = measure_failure(RecordStatus::Crash, "cannot start a worker: " + process.error().message);
  else w.process = std::move(process).value();
  return w;
}

}  // namespace

LocalBuilder::LocalBuilder(int jobs)
    : at_once_(jobs > 0 ? static_cast<size_t>(jobs) : std::max(1u, std::thread::hardware_concurrency())) {}

std::vector<CandidateWorker> LocalBuilder::build(const std::vector<BuildJob> &jobs) {
  // Every worker inherits the runtime compiled here; a failure only leaves each worker to
  // compile its own, as it would without this.
  static_cast<void>(JitKernel::prepare_shared_runtime());
  std::vector<CandidateWorker> workers(jobs.size());
  std::vector<size_t> compiling;
  for (size_t next = 0; next < jobs.size() || !compiling.empty();) {
    for (; next < jobs.size() && compiling.size() < at_once_; ++next) {
      workers[next] = start_worker(jobs[next]);
      if (!workers[next].result) compiling.push_back(next);
    }
    for (auto it = compiling.begin(); it != compiling.end();) {
      if (poll_compiled(workers[*it], kCompilePollSeconds)) it = compiling.erase(it);
      else ++it;
    }
  }
  return workers;
}

}  // namespace tessel
