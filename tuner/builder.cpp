#include "tuner/builder.h"

#include <algorithm>
#include <thread>

#include "codegen/jit_kernel.h"

namespace tessel {

LocalBuilder::LocalBuilder(int jobs)
    : at_once_(jobs > 0 ? static_cast<size_t>(jobs) : std::max(1u, std::thread::hardware_concurrency())) {}

std::vector<CandidateWorker> LocalBuilder::build(const std::vector<BuildJob> &jobs) {
  // Every worker inherits the runtime compiled here; a failure only leaves each worker to
  // compile its own, as it would without this.
  static_cast<void>(JitKernel::prepare_shared_runtime());
  return compile_in_workers(jobs, at_once_);
}

}  // namespace tessel
