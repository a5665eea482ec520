// compile_artifact as a list of passes over one ArtifactBuild (artifact_build.h); each pass
// lives in the file named next to it.
#include "compiler/artifact_compiler.h"

#include <chrono>

#include "compiler/artifact_build.h"

namespace tessel {

namespace {

/// Kernels write their outputs wherever the plan puts them; host steps do not (plan_memory
/// itself leaves out views and host ops).
MemoryPlan memory_plan_for(const Graph &graph, const std::vector<FusedGroup> &groups,
                           const std::vector<bool> &host_group) {
  std::vector<bool> writes_anywhere(host_group.size());
  for (size_t i = 0; i < host_group.size(); ++i) writes_anywhere[i] = !host_group[i];
  return plan_memory(graph, groups, MemoryPlanOptions{std::move(writes_anywhere)});
}

}  // namespace

MemoryPlan artifact_memory_plan(const Graph &graph, const std::vector<FusedGroup> &groups) {
  return memory_plan_for(graph, groups, host_step_groups(graph, groups, tensor_uses(graph)));
}

std::vector<FusedGroup> groups_with_steps(const Graph &graph, const std::vector<FusedGroup> &groups) {
  const MemoryPlan plan = artifact_memory_plan(graph, groups);
  std::vector<FusedGroup> kept;
  for (const FusedGroup &group : groups)
    if (!(group.nodes.size() == 1 && plan.concat_in_place[group.nodes.front()])) kept.push_back(group);
  return kept;
}

ArtifactBuild::ArtifactBuild(const Graph &graph, const ArtifactCompileOptions &options, Target target,
                             StagingDirectory staging)
    : graph(graph),
      options(options),
      target(std::move(target)),
      groups(partition_graph(graph)),
      uses(tensor_uses(graph)),
      host_group(host_step_groups(graph, groups, uses)),
      memory(memory_plan_for(graph, groups, host_group)),
      staging(std::move(staging)),
      plan(graph, memory) {}

namespace {

/// The target the kernels are compiled for: a cuda artifact names the architecture it was
/// compiled for, also when the target left it to the device.
Result<Target> artifact_target(const ArtifactCompileOptions &options) {
  Target target = options.target;
  if (target.kind != Target::Kind::Cuda) return target;
  if (options.alternatives)
    return make_error(ErrorKind::Unsupported,
                      "choosing schedules inside the model runs on the host CPU only so far, not for " +
                          target.to_string());
  if (target.mcpu.empty()) target.mcpu = "sm_" + std::to_string(cuda_capability(target));
  return target;
}

}  // namespace

Result<ArtifactCompileSummary> compile_artifact(const Graph &graph, const ArtifactCompileOptions &options,
                                                const std::string &output_path) {
  const auto start = std::chrono::steady_clock::now();
  TESSEL_TRY(Target target, artifact_target(options));
  // Removed again unless committed (staging_directory.h).
  TESSEL_TRY(StagingDirectory staging, StagingDirectory::open(output_path));
  ArtifactBuild build(graph, options, std::move(target), std::move(staging));
  TESSEL_TRY_VOID(check_host_steps(build));  // host_steps.cpp
  TESSEL_TRY_VOID(emit_kernels(build));  // kernel_emitter.cpp, kernel_alternatives.cpp
  warn_untuned_tasks(build);             // artifact_files.cpp, as the passes below
  TESSEL_TRY_VOID(link_kernels(build));
  TESSEL_TRY_VOID(write_plan_and_weights(build));
  TESSEL_TRY_VOID(write_manifest(build));
  TESSEL_TRY_VOID(choose_kernel_threads(build));  // kernel_threads.cpp
  TESSEL_TRY_VOID(build.staging.commit());

  ArtifactCompileSummary summary = std::move(build.summary);
  summary.compiled_kernels = static_cast<int>(build.compiled.size());
  summary.arena_bytes = build.manifest.arena_bytes;
  summary.weights_bytes = build.manifest.weights.bytes;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace tessel
