// Tracks each stage's loop extents over the region its Func computes where it is placed
// (the region the schedule tree gives) and flags splits that leave that region.
#include "search/exact_cover.h"

#include <algorithm>
#include <map>
#include <set>

#include "search/cpu/sketch.h"

namespace tessel {
namespace {

struct StageExtents {
  bool known = false;
  bool update = false;
  std::map<std::string, int64_t> extent;
  std::set<std::string> reduction;
};

/// One split as the tracker saw it.
struct SplitSeen {
  int64_t extent = 0, factor = 0;
  TailStrategy effective = TailStrategy::Auto;
  bool reduction = false;
};

class ExtentTracker {
 public:
  ExtentTracker(const ComputeDesc &compute, const ScheduleTree &tree) : compute_(compute) {
    for (const ScheduleNode &n : tree.nodes)
      if (n.kind == ScheduleNodeKind::Realize && !regions_.count(n.func)) regions_[n.func] = n.region;
    for (const FuncDesc &f : compute.funcs)
      if (f.is_output) {
        std::vector<int64_t> r;
        for (const AxisDesc &a : f.pure_axes) r.push_back(a.extent);
        regions_[f.name] = r;
      }
  }

  /// The splits one step makes, in order (a tile makes two); empty for other steps.
  std::vector<SplitSeen> apply(const ScheduleStep &step) {
    std::vector<SplitSeen> seen;
    if (const auto *s = std::get_if<SplitStep>(&step)) {
      split(s->stage, s->var, s->outer, s->inner, s->factor, s->tail, seen);
    } else if (const auto *s = std::get_if<TileStep>(&step)) {
      split(s->stage, s->x, s->xo, s->xi, s->x_factor, s->tail, seen);
      split(s->stage, s->y, s->yo, s->yi, s->y_factor, s->tail, seen);
    } else if (const auto *s = std::get_if<VectorizeStep>(&step)) {
      if (s->width) split(s->stage, s->var, s->var, vectorized_inner_name(s->var), *s->width, TailStrategy::Auto, seen);
    } else if (const auto *s = std::get_if<UnrollStep>(&step)) {
      if (s->factor) split(s->stage, s->var, s->var, unrolled_inner_name(s->var), *s->factor, TailStrategy::Auto, seen);
    } else if (const auto *s = std::get_if<ParallelStep>(&step)) {
      if (s->task_size)
        split(s->stage, s->var, s->var, parallel_task_name(s->var), *s->task_size, TailStrategy::Auto, seen);
    } else if (const auto *s = std::get_if<FuseStep>(&step)) {
      StageExtents &st = stage(s->stage);
      if (st.known && st.extent.count(s->inner) && st.extent.count(s->outer)) {
        st.extent[s->fused] = st.extent[s->inner] * st.extent[s->outer];
        if (st.reduction.count(s->inner) || st.reduction.count(s->outer)) st.reduction.insert(s->fused);
      }
    } else if (const auto *s = std::get_if<RfactorStep>(&step)) {
      rfactor(*s);
    }
    return seen;
  }

 private:
  StageExtents &stage(const StageRef &ref) {
    const std::string key = ref.to_text();
    auto it = stages_.find(key);
    if (it != stages_.end()) return it->second;
    StageExtents &st = stages_[key];
    st.update = ref.update >= 0;
    const FuncDesc *f = compute_.find(ref.func);
    auto region = regions_.find(ref.func);
    if (!f || region == regions_.end() || region->second.size() != f->pure_axes.size()) return st;
    const size_t s = static_cast<size_t>(ref.update + 1);
    const std::vector<AxisDesc> &axes =
        s < f->stages.size() && !f->stages[s].axes.empty() ? f->stages[s].axes : f->pure_axes;
    for (const AxisDesc &a : axes) {
      int64_t e = a.extent;
      if (!a.reduction)
        for (size_t p = 0; p < f->pure_axes.size(); ++p)
          if (f->pure_axes[p].name == a.name) e = region->second[p];
      st.extent[a.name] = e;
      if (a.reduction) st.reduction.insert(a.name);
    }
    st.known = true;
    return st;
  }

  void split(const StageRef &ref, const std::string &var, const std::string &outer, const std::string &inner,
             int64_t factor, TailStrategy tail, std::vector<SplitSeen> &seen) {
    StageExtents &st = stage(ref);
    auto it = st.extent.find(var);
    if (!st.known || it == st.extent.end() || factor < 1) {
      seen.push_back(SplitSeen{0, factor, tail, false});
      return;
    }
    const int64_t e = it->second;
    const bool reduction = st.reduction.count(var) > 0;
    TailStrategy effective = tail;
    if (tail == TailStrategy::Auto)
      effective = reduction ? TailStrategy::Guard : st.update ? TailStrategy::RoundUp : TailStrategy::ShiftInwards;
    seen.push_back(SplitSeen{e, factor, effective, reduction});
    st.extent.erase(var);
    st.reduction.erase(var);
    st.extent[outer] = (e + factor - 1) / factor;
    st.extent[inner] = factor;
    if (reduction) {
      st.reduction.insert(outer);
      st.reduction.insert(inner);
    }
  }

  void rfactor(const RfactorStep &s) {
    StageExtents &parent = stage(s.stage);
    const FuncDesc *f = compute_.find(s.stage.func);
    if (!parent.known || !f) return;
    StageExtents update = parent;
    for (const auto &[rvar, var] : s.rvar_to_var) {
      auto it = update.extent.find(rvar);
      if (it == update.extent.end()) return;
      const int64_t e = it->second;
      update.extent.erase(it);
      update.reduction.erase(rvar);
      update.extent[var] = e;
    }
    // The intermediate's pure axes: the Func's, then one per factored RVar.
    auto region = regions_.find(s.new_func);
    if (region != regions_.end() && region->second.size() == f->pure_axes.size() + s.rvar_to_var.size()) {
      for (size_t p = 0; p < f->pure_axes.size(); ++p) update.extent[f->pure_axes[p].name] = region->second[p];
      StageExtents pure;
      pure.known = true;
      for (size_t p = 0; p < f->pure_axes.size(); ++p) pure.extent[f->pure_axes[p].name] = region->second[p];
      for (size_t k = 0; k < s.rvar_to_var.size(); ++k)
        pure.extent[s.rvar_to_var[k].second] = region->second[f->pure_axes.size() + k];
      stages_[StageRef{s.new_func, -1}.to_text()] = pure;
    }
    stages_[StageRef{s.new_func, 0}.to_text()] = update;
  }

  const ComputeDesc &compute_;
  std::map<std::string, std::vector<int64_t>> regions_;
  std::map<std::string, StageExtents> stages_;
};

std::optional<CoverViolation> violation_of(const SplitSeen &s, size_t step, int part) {
  if (s.extent <= 0 || s.reduction) return std::nullopt;
  if (s.effective == TailStrategy::RoundUp && s.extent % s.factor != 0)
    return CoverViolation{step, part, s.extent, s.factor, true,
                          "split by " + std::to_string(s.factor) + " rounds a loop of " + std::to_string(s.extent) +
                              " up past the region its func computes"};
  if (s.effective == TailStrategy::ShiftInwards && s.factor > s.extent)
    return CoverViolation{step, part, s.extent, s.factor, false,
                          "split by " + std::to_string(s.factor) + " shifts a loop of " + std::to_string(s.extent) +
                              " inwards past the start of the region its func computes"};
  return std::nullopt;
}

/// The factor that keeps the split inside a loop of `extent`.
int64_t repaired_factor(const CoverViolation &v, bool vector_width) {
  if (!v.rounds_up) return v.extent;
  int64_t best = 1, best_power = 1;
  for (int64_t d : divisors(v.extent)) {
    if (d > v.factor) break;
    best = d;
    if ((d & (d - 1)) == 0) best_power = d;
  }
  return vector_width && best_power > 1 ? best_power : best;
}

}  // namespace

std::vector<std::optional<int64_t>> split_extents(const ComputeDesc &compute, const Schedule &schedule,
                                                  const ScheduleTree &tree) {
  ExtentTracker tracker(compute, tree);
  std::vector<std::optional<int64_t>> extents;
  for (const ScheduleStep &step : schedule.steps) {
    const std::vector<SplitSeen> seen = tracker.apply(step);
    extents.push_back(!seen.empty() && seen.front().extent > 0 ? std::optional<int64_t>(seen.front().extent)
                                                               : std::nullopt);
  }
  return extents;
}

std::optional<CoverViolation> find_cover_violation(const ComputeDesc &compute, const Schedule &schedule,
                                                   const ScheduleTree &tree) {
  ExtentTracker tracker(compute, tree);
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const std::vector<SplitSeen> seen = tracker.apply(schedule.steps[i]);
    for (size_t part = 0; part < seen.size(); ++part)
      if (auto v = violation_of(seen[part], i, static_cast<int>(part))) return v;
  }
  return std::nullopt;
}

Result<ScheduleTree> validate_exact_cover(const ComputeDesc &compute, const Schedule &schedule) {
  Result<ScheduleTree> tree = validate_and_replay(compute, schedule);
  if (!tree) return tree;
  if (std::optional<CoverViolation> v = find_cover_violation(compute, schedule, *tree))
    return make_error(ErrorKind::InvalidInput,
                      "line " + std::to_string(step_line_number(v->step)) + " (" + to_text(schedule.steps[v->step]) +
                      "): " + v->message);
  return tree;
}

Result<Schedule> repair_exact_cover(const ComputeDesc &compute, Schedule schedule) {
  Result<CoveredSchedule> repaired = repair_and_validate_exact_cover(compute, std::move(schedule));
  if (!repaired) return repaired.error();
  return std::move(repaired->schedule);
}

Result<CoveredSchedule> repair_and_validate_exact_cover(const ComputeDesc &compute, Schedule schedule) {
  // Each repair shrinks one factor, so this ends; the bound only guards against surprises.
  for (size_t round = 0; round < 4 * schedule.steps.size() + 4; ++round) {
    Result<ScheduleTree> tree = validate_and_replay(compute, schedule);
    if (!tree) return tree.error();
    std::optional<CoverViolation> v = find_cover_violation(compute, schedule, *tree);
    if (!v) return CoveredSchedule{std::move(schedule), std::move(tree).value()};
    ScheduleStep &step = schedule.steps[v->step];
    if (auto *s = std::get_if<SplitStep>(&step)) {
      s->factor = repaired_factor(*v, false);
    } else if (auto *s = std::get_if<TileStep>(&step)) {
      (v->part == 0 ? s->x_factor : s->y_factor) = repaired_factor(*v, false);
    } else if (auto *s = std::get_if<VectorizeStep>(&step)) {
      s->width = repaired_factor(*v, true);
    } else if (auto *s = std::get_if<UnrollStep>(&step)) {
      s->factor = repaired_factor(*v, false);
    } else if (auto *s = std::get_if<ParallelStep>(&step)) {
      s->task_size = repaired_factor(*v, false);
    }
  }
  return make_error("repairing the schedule's splits did not converge");
}

}  // namespace tessel
