#include "search/cpu/source_placement.h"

#include <set>

#include "schedule/schedule_tree.h"

namespace tessel {

std::optional<Schedule> with_sources_in_parallel_loop(const ComputeDesc &compute, const Schedule &schedule) {
  std::set<std::string> placed;
  for (const ScheduleStep &step : schedule.steps)
    if (const auto *at = std::get_if<ComputeAtStep>(&step)) placed.insert(at->func);
  Schedule result = schedule;
  for (const FuncDesc &source : compute.funcs) {
    if (!source.placeable_source || placed.count(source.name) || source.consumers.size() != 1) continue;
    const std::string &anchor = source.consumers.front();
    // The anchor's output, and that output's parallel loop.
    const ComputeAtStep *anchor_at = nullptr;
    for (const ScheduleStep &step : schedule.steps)
      if (const auto *at = std::get_if<ComputeAtStep>(&step); at && at->func == anchor) anchor_at = at;
    if (!anchor_at || anchor_at->consumer.update >= 0) continue;
    const ParallelStep *parallel = nullptr;
    for (const ScheduleStep &step : schedule.steps)
      if (const auto *p = std::get_if<ParallelStep>(&step); p && p->stage == anchor_at->consumer && !p->task_size)
        parallel = p;
    if (!parallel) continue;
    result.steps.push_back(ComputeAtStep{source.name, anchor_at->consumer, parallel->var});
  }
  if (result.steps.size() == schedule.steps.size()) return std::nullopt;
  // The parallel loop must enclose the anchor's level; the replay checks that.
  if (!validate_and_replay(compute, result).ok()) return std::nullopt;
  return result;
}

}  // namespace tessel
