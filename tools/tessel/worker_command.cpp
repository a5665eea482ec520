// `tessel worker --db postgresql://... --target llvm`: measures the candidates remote tuning
// queues (tuner/queue_worker.h), one of any number of workers on any number of machines.
#include <cstdio>

#include "codegen/cuda_device.h"
#include "tools/tessel/commands.h"
#include "tuner/queue_worker.h"
#include "tuning_db/database_location.h"

namespace tessel {

int worker_command(const WorkerCommandOptions &options) {
  auto target = parse_target(options.target);
  if (!target.ok()) return fail(target.error().message);
  if (target->kind == Target::Kind::Cuda) {
    // A worker measures on its own GPU, so it takes only candidates of that architecture.
    auto device = name_device_architecture(target.value());
    if (!device.ok()) return fail("a cuda worker measures on a CUDA GPU, and none is usable here: " + device.error().message);
    const std::string arch = "sm_" + std::to_string(device->capability());
    if (target->mcpu != arch)
      return fail("--target names " + target->mcpu + " but this machine's GPU is " + device->describe());
  }
  QueueWorkerOptions worker;
  worker.target = target.value();
  worker.name = options.name;
  worker.claim_batch = options.claim_batch;
  worker.lease_seconds = options.lease_seconds;
  worker.idle_exit_seconds = options.idle_exit_seconds;
  worker.max_candidates = options.max_candidates;
  worker.measure.jobs = options.jobs;
  worker.measure.threads = options.threads;
  if (options.timeout_ms > 0) worker.measure.run_timeout_seconds = options.timeout_ms / 1e3;
  if (options.min_repeat_ms > 0) worker.measure.timing.min_seconds = options.min_repeat_ms / 1e3;
  worker.log = [](const std::string &line) { std::fprintf(stderr, "worker: %s\n", line.c_str()); };
  std::fprintf(stderr, "worker: measuring candidates of target '%s' from %s\n", target->to_string().c_str(),
               masked_location(options.db_path).c_str());
  auto summary = run_queue_worker(options.db_path, worker);
  if (!summary.ok()) return fail(summary.error().message);
  std::printf("completed %lld candidates (%lld recorded here, %lld failed) in %.1f s\n",
              static_cast<long long>(summary->completed), static_cast<long long>(summary->recorded),
              static_cast<long long>(summary->failed), summary->wall_seconds);
  return 0;
}

}  // namespace tessel
