#include "search/cpu/parallel_resplit.h"

#include <algorithm>
#include <set>

#include "schedule/schedule_tree.h"

namespace tessel {
namespace {

/// The extent of loop `var` of `stage` in the replayed tree (0 when not found).
int64_t loop_extent(const ScheduleTree &tree, const StageRef &stage, const std::string &var) {
  for (const ScheduleNode &n : tree.nodes)
    if (n.kind == ScheduleNodeKind::Loop && n.func == stage.func && n.update == stage.update && n.var == var)
      return n.extent;
  return 0;
}

}  // namespace

std::vector<Schedule> with_parallel_loop_moved(const ComputeDesc &compute, const Schedule &schedule, int threads) {
  std::vector<Schedule> variants;
  const ParallelStep *parallel = nullptr;
  size_t parallel_index = 0;
  for (size_t i = 0; i < schedule.steps.size(); ++i)
    if (const auto *p = std::get_if<ParallelStep>(&schedule.steps[i]); p && p->stage.update < 0) {
      const FuncDesc *f = compute.find(p->stage.func);
      if (!f || !f->is_output) continue;
      if (parallel) return variants;  // more than one parallel loop: leave it alone
      parallel = p;
      parallel_index = i;
    }
  if (!parallel || parallel->task_size) return variants;
  const StageRef stage = parallel->stage;

  // The loops fused into the parallel one, and the steps that fused them.
  std::set<std::string> fused{parallel->var};
  std::set<size_t> fuse_steps;
  for (size_t i = schedule.steps.size(); i-- > 0;)
    if (const auto *f = std::get_if<FuseStep>(&schedule.steps[i]); f && f->stage == stage && fused.count(f->fused)) {
      fused.insert(f->inner);
      fused.insert(f->outer);
      fuse_steps.insert(i);
    }
  // The stage's last reorder lists its loops, innermost first.
  size_t reorder_index = schedule.steps.size();
  for (size_t i = 0; i < schedule.steps.size(); ++i)
    if (const auto *r = std::get_if<ReorderStep>(&schedule.steps[i]); r && r->stage == stage) reorder_index = i;
  if (reorder_index == schedule.steps.size()) return variants;
  const std::vector<std::string> &order = std::get<ReorderStep>(schedule.steps[reorder_index]).vars;
  // Funcs placed in the stage's loops must keep the loops inside their level, so that
  // they compute the same region (an anchor at a tile loop would otherwise grow to the
  // whole axis): only loops outside every placement level may move out.
  size_t outermost_placement = 0;
  for (const ScheduleStep &step : schedule.steps) {
    std::string var;
    if (const auto *at = std::get_if<ComputeAtStep>(&step); at && at->consumer == stage) var = at->var;
    if (const auto *at = std::get_if<StoreAtStep>(&step); at && at->consumer == stage) var = at->var;
    if (var.empty()) continue;
    const auto it = std::find(order.begin(), order.end(), var);
    if (it == order.end()) return variants;  // a fused or renamed loop: leave it alone
    outermost_placement = std::max(outermost_placement, static_cast<size_t>(it - order.begin()) + 1);
  }

  auto tree = validate_and_replay(compute, schedule);
  if (!tree.ok()) return variants;
  // Outer loops: the split steps' outer parts and unsplit axes, never a split's inner part.
  std::set<std::string> inner_parts;
  for (const ScheduleStep &step : schedule.steps)
    if (const auto *s = std::get_if<SplitStep>(&step); s && s->stage == stage) inner_parts.insert(s->inner);
  for (size_t position = outermost_placement; position < order.size(); ++position) {
    const std::string &candidate = order[position];
    if (fused.count(candidate) || inner_parts.count(candidate)) continue;
    if (loop_extent(*tree, stage, candidate) < threads) continue;
    Schedule variant;
    variant.version = schedule.version;
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      if (fuse_steps.count(i) || i == parallel_index) continue;
      if (i == reorder_index) {
        std::vector<std::string> moved;
        for (const std::string &v : order)
          if (v != candidate) moved.push_back(v);
        moved.push_back(candidate);  // outermost
        variant.steps.push_back(ReorderStep{stage, moved});
        continue;
      }
      variant.steps.push_back(schedule.steps[i]);
    }
    // The parallel loop where the old one was declared, so later steps keep their order.
    auto at = variant.steps.begin();
    size_t kept_before = 0;
    for (size_t i = 0; i < parallel_index; ++i)
      if (!fuse_steps.count(i)) ++kept_before;
    std::advance(at, static_cast<std::ptrdiff_t>(kept_before));
    variant.steps.insert(at, ParallelStep{stage, candidate, std::nullopt});
    if (validate_and_replay(compute, variant).ok()) variants.push_back(std::move(variant));
  }
  return variants;
}

}  // namespace tessel
