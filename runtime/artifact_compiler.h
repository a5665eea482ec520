#pragma once
// `tessel compile`: an optimized graph and its tuned schedules into a deployable artifact
// (runtime/deploy/ARTIFACT.md): every fused group compiled ahead of time by Halide into one
// shared library, the weights, the execution plan over one arena, and a manifest.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "graph/graph.h"
#include "graph/result.h"

namespace tessel {

/// The schedule deployed for one task, from a tuning record.
struct DeployedSchedule {
  std::string schedule_text;  // empty: the record is the built-in schedule
  std::string schedule_hash;
  std::optional<double> median_seconds;
};

/// The best record of a workload for the target: nullopt when there is none.
using DeployScheduleLookup = std::function<Result<std::optional<DeployedSchedule>>(const std::string &workload_key)>;

struct ArtifactCompileOptions {
  Target target;
  DeployScheduleLookup schedules;  // empty: every task gets its default schedule
  std::string model_path;          // recorded in the manifest with the hash of its bytes
  /// Links the kernels into a shared library; empty: $TESSEL_LINKER, else `c++`.
  std::string linker;
  /// Warnings and progress lines.
  std::function<void(const std::string &)> log;
};

struct ArtifactCompileSummary {
  int kernel_steps = 0;      // kernel calls per run
  int compiled_kernels = 0;  // distinct functions in kernels.so
  int tuned_tasks = 0;       // kernel steps running a tuned schedule
  int default_tasks = 0;     // kernel steps without a record
  std::vector<std::string> warnings;
  int64_t arena_bytes = 0;
  int64_t weights_bytes = 0;
  double seconds = 0;
};

/// Compiles `graph` (already optimized for the target) into the artifact directory
/// `output_path`, written atomically: into a temporary sibling first, renamed into place
/// only when complete. Ops the deploy runtime cannot run (control flow, TopK, host shape
/// queries left after folding) are an error listing every such node.
Result<ArtifactCompileSummary> compile_artifact(const Graph &graph, const ArtifactCompileOptions &options,
                                                const std::string &output_path);

}  // namespace tessel
