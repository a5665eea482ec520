#pragma once
// `tessel compile`: an optimized graph and its tuned schedules into a deployable artifact
// (deploy/ARTIFACT.md): every fused group compiled ahead of time by Halide into one
// shared library, the weights, the execution plan over one arena, and a manifest.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "codegen/target.h"
#include "graph/fusion/memory_plan.h"
#include "graph/ir/graph.h"

namespace tessel {

/// The schedule deployed for one task, from a tuning record.
struct DeployedSchedule {
  std::string schedule_text;  // empty: the record is the built-in schedule
  std::string schedule_hash;
  std::optional<double> median_seconds;
};

/// The best record of a workload for the target: nullopt when there is none.
using DeployScheduleLookup = std::function<Result<std::optional<DeployedSchedule>>(const std::string &workload_key)>;
/// Other records of a workload worth comparing inside the model (in_graph_selection.h).
using DeployAlternativesLookup = std::function<Result<std::vector<DeployedSchedule>>(const std::string &workload_key)>;

/// One schedule a task can run in a trial artifact: the kernel symbol per kernel call of
/// the task, all of them in kernels.so and taking the arguments the plan passes.
struct KernelAlternative {
  DeployedSchedule schedule;
  std::vector<std::string> symbols;  // per entry of TaskAlternatives::steps
};

/// A task's kernel calls (indices among the plan's kernel calls) and the schedules they
/// can be switched to; alternatives[0] is what the plan runs.
struct TaskAlternatives {
  std::string workload_key;
  std::string ops;
  std::vector<int> steps;
  std::vector<KernelAlternative> alternatives;
};

struct ArtifactCompileOptions {
  Target target;
  DeployScheduleLookup schedules;  // empty: every task gets its default schedule
  /// Set: also compiles these schedules of each tuned task into kernels.so, unused by the
  /// plan, for a trial artifact whose calls Module::use_kernel switches.
  DeployAlternativesLookup alternatives;
  std::string model_path;          // recorded in the manifest with the hash of its bytes
  /// Links the kernels into a shared library; empty: $TESSEL_LINKER, else `c++`.
  std::string linker;
  /// Warnings and progress lines.
  std::function<void(const std::string &)> log;
  /// CPU artifacts: run the finished artifact here, on random inputs, to choose which kernel
  /// calls run on one thread (deploy/serial_kernel_choice.h); with `threads` threads (0:
  /// HL_NUM_THREADS or all cores). Skipped, with a warning, when it cannot run here.
  bool choose_kernel_threads = false;
  int threads = 0;
};

struct ArtifactCompileSummary {
  int kernel_steps = 0;      // kernel calls per run
  int host_steps = 0;        // nodes computed on the host per run (run-time shapes, host ops)
  int compiled_kernels = 0;  // distinct functions in kernels.so
  int tuned_tasks = 0;       // kernel steps running a tuned schedule
  int default_tasks = 0;     // kernel steps without a record
  int concats_in_place = 0;  // Concats with no step: their inputs were written into the output
  int serial_kernel_steps = 0;  // kernel calls that run on one thread (choose_kernel_threads)
  std::string kernel_threads;   // what choose_kernel_threads measured, one line; empty if not run
  std::vector<std::string> warnings;
  int64_t arena_bytes = 0;
  int64_t weights_bytes = 0;
  double seconds = 0;
  /// Per task with a tuned record, when ArtifactCompileOptions::alternatives was set.
  std::vector<TaskAlternatives> alternatives;
};

/// The memory plan an artifact of `graph` runs with: Concats are done in place where the
/// kernels producing their inputs can write into the output's slices.
MemoryPlan artifact_memory_plan(const Graph &graph, const std::vector<FusedGroup> &groups);

/// `groups` less those an artifact runs no step for (Concats done in place): what tuning
/// spends trials on.
std::vector<FusedGroup> groups_with_steps(const Graph &graph, const std::vector<FusedGroup> &groups);

/// Compiles `graph` (already optimized for the target) into the artifact directory
/// `output_path`, written atomically: into a temporary sibling first, renamed into place
/// only when complete. Ops the deploy runtime cannot run (control flow, TopK, host shape
/// queries left after folding) are an error listing every such node.
Result<ArtifactCompileSummary> compile_artifact(const Graph &graph, const ArtifactCompileOptions &options,
                                                const std::string &output_path);

}  // namespace tessel
