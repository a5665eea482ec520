// Trial artifacts for in-graph selection (tuner/in_graph_selection.h): besides the kernel the
// plan runs, each tuned task's other good records are compiled into kernels.so, so that a run
// of the whole model can switch between them (Module::use_kernel) and keep the fastest there.
#include <algorithm>

#include "compiler/artifact_build.h"
#include "search/cpu/parallel_resplit.h"
#include "search/cpu/source_placement.h"

namespace tessel {

namespace {

/// Adds `schedule` unless the entry has it already.
void add_variant(TaskAlternatives &entry, const Schedule &schedule, std::optional<double> median) {
  const std::string hash = schedule_hash(schedule);
  for (const KernelAlternative &a : entry.alternatives)
    if (a.schedule.schedule_hash == hash) return;
  entry.alternatives.push_back(KernelAlternative{DeployedSchedule{to_text(schedule), hash, median}, {}});
}

/// Variants of the fastest records that only a run of the whole model tells apart: the two
/// fastest with the padded input copied inside their parallel loop (source_placement.h), and
/// the fastest with its parallel loop moved to each other outer loop, which decides which
/// core reads which data (parallel_resplit.h).
void add_placement_variants(TaskAlternatives &entry, const ComputeDesc &compute) {
  const size_t records = std::min<size_t>(2, entry.alternatives.size());
  std::vector<std::pair<Schedule, std::optional<double>>> fastest;
  for (size_t i = 0; i < records; ++i)
    if (auto parsed = parse_schedule(entry.alternatives[i].schedule.schedule_text); parsed.ok())
      fastest.emplace_back(parsed.value(), entry.alternatives[i].schedule.median_seconds);
  for (const auto &[schedule, median] : fastest)
    if (auto moved = with_sources_in_parallel_loop(compute, schedule)) add_variant(entry, *moved, median);
  if (!fastest.empty())
    for (const Schedule &moved : with_parallel_loop_moved(compute, fastest.front().first, /*threads=*/2))
      add_variant(entry, moved, fastest.front().second);
}

/// The task's entry: its records and their variants, looked up the first time it is called.
Result<TaskAlternatives *> alternatives_entry(ArtifactBuild &build, const FusedGroup &group, const GroupSignature &sig,
                                              const deploy::ArtifactTask &task, const DeployedSchedule &chosen) {
  auto [slot, fresh] = build.alternatives_of.emplace(task.workload_key, build.summary.alternatives.size());
  if (fresh) {
    auto others = build.options.alternatives(task.workload_key);
    if (!others.ok()) return others.error();
    TaskAlternatives entry{task.workload_key, task.ops, {}, {KernelAlternative{chosen, {}}}};
    for (DeployedSchedule &s : others.value())
      if (s.schedule_hash != chosen.schedule_hash) entry.alternatives.push_back(KernelAlternative{std::move(s), {}});
    if (auto compute = describe_group_compute(build.graph, group, sig); compute.ok())
      add_placement_variants(entry, compute.value());
    build.summary.alternatives.push_back(std::move(entry));
  }
  return &build.summary.alternatives[slot->second];
}

}  // namespace

Result<void> add_alternatives(ArtifactBuild &build, const FusedGroup &group, const GroupSignature &sig,
                              const deploy::ArtifactTask &task, const DeployedSchedule &chosen,
                              const KernelCall &main) {
  const int step = build.summary.kernel_steps - 1;
  auto found = alternatives_entry(build, group, sig, task, chosen);
  if (!found.ok()) return found.error();
  TaskAlternatives &entry = *found.value();
  entry.steps.push_back(step);
  std::vector<KernelAlternative> kept;
  for (KernelAlternative &alt : entry.alternatives) {
    auto kernel = &alt == &entry.alternatives.front() ? Result<KernelCall>(main)
                                                      : compile_kernel(build, group, sig, alt.schedule.schedule_text);
    // One that does not build or takes other arguments is dropped for every call.
    if (!kernel.ok() || kernel->args != main.args) continue;
    alt.symbols.push_back(kernel->symbol);
    kept.push_back(std::move(alt));
  }
  for (KernelAlternative &alt : kept)
    if (alt.symbols.size() != entry.steps.size()) alt.symbols.clear();
  kept.erase(std::remove_if(kept.begin(), kept.end(), [](const KernelAlternative &a) { return a.symbols.empty(); }),
             kept.end());
  entry.alternatives = std::move(kept);
  return {};
}

}  // namespace tessel
