#pragma once
// Internal to compiler/: the state the artifact compiler's passes share, and the passes
// themselves. compile_artifact (artifact_compiler.cpp) runs them in order:
//   StagingDirectory::open -> check_host_steps -> emit_kernels (kernel_emitter.cpp, kernel_alternatives.cpp)
//   -> warn_untuned_tasks -> link_kernels -> write_plan_and_weights -> write_manifest
//   -> StagingDirectory::commit.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "codegen/aot_compile.h"
#include "compiler/artifact_compiler.h"
#include "compiler/plan_builder.h"
#include "compiler/staging_directory.h"
#include "deploy/artifact_manifest.h"
#include "deploy/host_program.h"
#include "graph/fusion/fuse.h"
#include "graph/fusion/memory_plan.h"
#include "task/group_pipeline.h"

namespace tessel {

/// A kernel call: the kernel's symbol in kernels.so and the graph tensors it takes.
struct KernelCall {
  std::string symbol;
  std::vector<int> args;
};

struct ArtifactBuild {
  ArtifactBuild(const Graph &graph, const ArtifactCompileOptions &options, Target target, StagingDirectory staging);

  const Graph &graph;
  const ArtifactCompileOptions &options;
  const Target target;  // a cuda target names its architecture
  const std::vector<FusedGroup> groups;
  const std::vector<int> uses;  // readers of each tensor; a graph output counts as one
  const std::vector<bool> host_group;  // by group: its nodes run as host steps (host_steps.cpp)
  const MemoryPlan memory;  // kernels write a Concat's inputs into its output (kernel_emitter.cpp)
  deploy::HostProgram host_program;    // host.json: the host steps' nodes
  StagingDirectory staging;
  PlanBuilder plan;
  deploy::ExecutionPlan execution_plan;  // what plan.txt holds, once written
  deploy::ArtifactManifest manifest;
  ArtifactCompileSummary summary;
  std::map<std::string, std::pair<std::string, AotOutput>> compiled;  // kernel key -> symbol, object
  std::vector<std::string> object_paths;                              // in order of compiling
  int64_t total_flops = 0;
  std::vector<std::pair<std::string, int64_t>> untuned;  // ops and FLOPs of tasks without a record
  std::map<std::string, size_t> alternatives_of;         // workload key -> summary.alternatives index
};

/// How many nodes read each tensor (graph outputs count as a reader).
std::vector<int> tensor_uses(const Graph &graph);
/// By group: whether its nodes become host steps (a run-time shape or a host op in it).
std::vector<bool> host_step_groups(const Graph &graph, const std::vector<FusedGroup> &groups,
                                   const std::vector<int> &uses);
/// Fails listing the op types of host-step nodes that host/ cannot compute, or when the
/// target is cuda (host steps run in CPU artifacts only).
Result<void> check_host_steps(const ArtifactBuild &build);
/// The group's nodes as host steps, each node added to the host program.
Result<void> emit_host_group(ArtifactBuild &build, const FusedGroup &group);
/// Emits every group: views into the plan, tasks as kernel calls.
Result<void> emit_kernels(ArtifactBuild &build);
/// The kernel of `group` (static signature `sig`) with `schedule_text` (empty: the built-in),
/// compiled once per distinct kernel key.
Result<KernelCall> compile_kernel(ArtifactBuild &build, const FusedGroup &group, const GroupSignature &sig,
                                  const std::string &schedule_text);
/// Compiles the task's other schedules for the kernel call `main` just emitted (a trial
/// artifact for in-graph selection).
Result<void> add_alternatives(ArtifactBuild &build, const FusedGroup &group, const GroupSignature &sig,
                              const deploy::ArtifactTask &task, const DeployedSchedule &chosen,
                              const KernelCall &main);
/// A warning per task that runs its default schedule although a database was given.
void warn_untuned_tasks(ArtifactBuild &build);
/// kernels.so: the kernel objects and one copy of Halide's runtime.
Result<void> link_kernels(ArtifactBuild &build);
Result<void> write_plan_and_weights(ArtifactBuild &build);
/// (Re)writes plan.txt from build.execution_plan, and its manifest entry.
Result<void> write_plan(ArtifactBuild &build);
Result<void> write_manifest(ArtifactBuild &build);
/// With ArtifactCompileOptions::choose_kernel_threads: runs the staged artifact to measure
/// which kernel calls are faster on one thread, and marks them so in plan.txt
/// (kernel_threads.cpp).
Result<void> choose_kernel_threads(ArtifactBuild &build);

}  // namespace tessel
