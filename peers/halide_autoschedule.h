#pragma once
// A task's own pipeline scheduled by one of Halide's autoschedulers instead of tessel: the
// "same algorithm, someone else's schedule" peer of `tessel bench` (light header: no Halide).
#include <memory>
#include <string>

#include "base/result.h"
#include "graph/fusion/fuse.h"
#include "graph/ir/graph.h"
#include "task/group_pipeline.h"

namespace tessel {

struct AutoscheduleOptions {
  std::string autoscheduler = "Adams2019";
  /// The plugin that registers it (Debian's libhalide14-0-dev ships Adams2019 here).
  std::string plugin_path = "/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_adams2019.so";
  /// Halide target string the schedule is made for (the one the kernel will be compiled for).
  std::string halide_target;
  int parallelism = 2;  // MachineParams: the thread count the schedule is made for
  int64_t last_level_cache_bytes = 16 * 1024 * 1024;
  float balance = 40;
};

struct AutoscheduledPipeline {
  std::shared_ptr<NodePipeline> pipeline;  // scheduled, ready for JitKernel::compile
  double autoschedule_seconds = 0;
  std::string schedule_source;  // the schedule the autoscheduler wrote, as C++
};

/// Builds the group in the plain form tuning uses (the matmul/conv accumulators without a
/// schedule), gives every input and output its exact extents as estimates, and lets the
/// autoscheduler schedule it. Errors (plugin missing, autoscheduler failure) are values.
Result<AutoscheduledPipeline> autoschedule_group_pipeline(const Graph &graph, const FusedGroup &group,
                                                          const GroupSignature &signature,
                                                          const AutoscheduleOptions &options);

}  // namespace tessel
