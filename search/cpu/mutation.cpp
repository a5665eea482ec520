// One-choice mutations of a schedule's steps (mutation.h). Each kind proposes a changed
// step list; the factors that depend on the change are repaired, and only proposals that
// replay, stay in their regions and differ from the input are returned.
#include "search/cpu/mutation.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "schedule/schedule_tree.h"
#include "search/cpu/sketch.h"
#include "search/cpu/unrolled_body.h"
#include "search/exact_cover.h"

namespace tessel {
namespace {

/// tessel's cap on one unrolled loop: beyond it code size, not speed, grows.
constexpr int64_t kMaxUnroll = 32;

size_t below(std::mt19937_64 &rng, size_t n) { return n <= 1 ? 0 : static_cast<size_t>(rng() % n); }

template <typename T>
const T &pick(std::mt19937_64 &rng, const std::vector<T> &values) {
  return values[below(rng, values.size())];
}

/// The loops of one stage in the tree, outermost first.
std::vector<const ScheduleNode *> stage_loops(const ScheduleTree &tree, const StageRef &stage) {
  std::vector<const ScheduleNode *> loops;
  std::function<void(int)> walk = [&](int index) {
    const ScheduleNode &n = tree.nodes[index];
    if (n.kind == ScheduleNodeKind::Loop && n.func == stage.func && n.update == stage.update) loops.push_back(&n);
    for (int child : n.children) walk(child);
  };
  walk(0);
  return loops;
}

/// Every word of the schedule's text: new loop names avoid them all.
std::set<std::string> words_of(const Schedule &schedule) {
  std::set<std::string> words;
  std::istringstream in(to_text(schedule));
  std::string word;
  while (in >> word) words.insert(word);
  return words;
}

std::string fresh_name(const Schedule &schedule, const std::string &base) {
  const std::set<std::string> used = words_of(schedule);
  std::string name = base;
  for (int n = 2; used.count(name); ++n) name = base + std::to_string(n);
  return name;
}

/// Split factors worth trying on a loop of `extent`: an output's tiles shift inwards, so
/// any size up to the extent; elsewhere divisors, so the split stays exact.
std::vector<int64_t> factor_candidates(int64_t extent, bool output) {
  std::set<int64_t> values;
  for (int64_t d : divisors(extent))
    if (d <= 256) values.insert(d);
  if (output)
    for (int64_t v : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128})
      if (v <= extent) values.insert(v);
  return {values.begin(), values.end()};
}

/// Loops of `stage` that split a tile loop again and keep its outer piece: a Func computed
/// there covers a sub-tile. Halide 14 reads its inputs out of bounds for such a site when
/// the tile's outer loops are fused and the Func rounds that axis up (measured on a matmul
/// with out's 8-wide tile split by 4 and acc.u0's j split by 2 round_up: b read at 162 of
/// 83), so mutation never places a Func there.
std::set<std::string> sub_tile_loops(const Schedule &schedule, const StageRef &stage) {
  struct Lineage {
    bool inside_tile = false;  ///< descends from the inner piece of a split
    bool outer_piece = false;  ///< the outer piece of a split
  };
  std::map<std::string, Lineage> lineage;
  auto split = [&](const std::string &var, const std::string &outer, const std::string &inner) {
    const Lineage parent = lineage[var];
    lineage[inner] = Lineage{true, false};
    lineage[outer] = Lineage{parent.inside_tile, true};
  };
  for (const ScheduleStep &step : schedule.steps) {
    if (const auto *s = std::get_if<SplitStep>(&step)) {
      if (s->stage == stage) split(s->var, s->outer, s->inner);
    } else if (const auto *s = std::get_if<TileStep>(&step)) {
      if (s->stage == stage) {
        split(s->x, s->xo, s->xi);
        split(s->y, s->yo, s->yi);
      }
    } else if (const auto *s = std::get_if<VectorizeStep>(&step)) {
      if (s->stage == stage && s->width) split(s->var, s->var, vectorized_inner_name(s->var));
    } else if (const auto *s = std::get_if<UnrollStep>(&step)) {
      if (s->stage == stage && s->factor) split(s->var, s->var, unrolled_inner_name(s->var));
    } else if (const auto *s = std::get_if<ParallelStep>(&step)) {
      if (s->stage == stage && s->task_size) split(s->var, s->var, parallel_task_name(s->var));
    } else if (const auto *s = std::get_if<FuseStep>(&step)) {
      if (s->stage == stage) {
        const Lineage a = lineage[s->inner], b = lineage[s->outer];
        lineage[s->fused] = Lineage{a.inside_tile || b.inside_tile, a.outer_piece || b.outer_piece};
      }
    }
  }
  std::set<std::string> loops;
  for (const auto &[name, l] : lineage)
    if (l.inside_tile && l.outer_piece) loops.insert(name);
  return loops;
}

bool computes_at_sub_tile(const Schedule &schedule) {
  for (const ScheduleStep &step : schedule.steps)
    if (const auto *c = std::get_if<ComputeAtStep>(&step))
      if (sub_tile_loops(schedule, c->consumer).count(c->var)) return true;
  return false;
}

class Mutator {
 public:
  Mutator(const ComputeDesc &compute, const Schedule &schedule, const ScheduleTree &tree, const CpuTargetDesc &target,
          std::mt19937_64 &rng)
      : compute_(compute),
        schedule_(schedule),
        tree_(tree),
        target_(target),
        rng_(rng),
        extents_(split_extents(compute, schedule, tree)) {}

  /// A proposal of one random kind, or nullopt when that kind finds nothing to change.
  std::optional<Schedule> propose() {
    switch (below(rng_, 5)) {
      case 0: return split_factor();
      case 1: return vector_width();
      case 2: return unroll();
      case 3: return parallel_fusion();
      default: return compute_location();
    }
  }

 private:
  bool is_output(const std::string &func) const {
    const FuncDesc *f = compute_.find(func);
    return f && f->is_output;
  }
  int64_t bytes_of(const std::string &func) const {
    const FuncDesc *f = compute_.find(func);
    return f ? f->bytes_per_element : 4;
  }

  std::optional<Schedule> split_factor() {
    std::vector<size_t> splits;
    for (size_t i = 0; i < schedule_.steps.size(); ++i)
      if ((std::holds_alternative<SplitStep>(schedule_.steps[i]) ||
           std::holds_alternative<TileStep>(schedule_.steps[i])) &&
          extents_[i])
        splits.push_back(i);
    if (splits.empty()) return std::nullopt;
    const size_t i = pick(rng_, splits);
    Schedule s = schedule_;
    int64_t *factor = nullptr;
    std::string func;
    if (auto *split = std::get_if<SplitStep>(&s.steps[i])) {
      factor = &split->factor;
      func = split->stage.func;
    } else {
      auto &tile = std::get<TileStep>(s.steps[i]);
      factor = &tile.x_factor;
      func = tile.stage.func;
    }
    std::vector<int64_t> values;
    for (int64_t v : factor_candidates(*extents_[i], is_output(func)))
      if (v != *factor) values.push_back(v);
    if (values.empty()) return std::nullopt;
    *factor = pick(rng_, values);
    return s;
  }

  std::optional<Schedule> vector_width() {
    std::vector<size_t> vectors;
    for (size_t i = 0; i < schedule_.steps.size(); ++i)
      if (const auto *v = std::get_if<VectorizeStep>(&schedule_.steps[i]))
        if (v->width && extents_[i]) vectors.push_back(i);
    if (vectors.empty()) return std::nullopt;
    const size_t i = pick(rng_, vectors);
    Schedule s = schedule_;
    auto &step = std::get<VectorizeStep>(s.steps[i]);
    const int64_t extent = *extents_[i];
    const bool output = is_output(step.stage.func);
    std::vector<int64_t> widths;
    for (int64_t w = std::min<int64_t>(64, target_.lanes(bytes_of(step.stage.func))); w >= 4; w /= 2)
      if (w != *step.width && (output ? w <= extent : extent % w == 0)) widths.push_back(w);
    if (widths.empty()) return std::nullopt;
    step.width = pick(rng_, widths);
    return s;
  }

  std::optional<Schedule> unroll() {
    Schedule s = schedule_;
    std::vector<size_t> unrolls;
    for (size_t i = 0; i < s.steps.size(); ++i)
      if (std::holds_alternative<UnrollStep>(s.steps[i])) unrolls.push_back(i);
    if (!unrolls.empty() && below(rng_, 2) == 0) {
      const size_t i = pick(rng_, unrolls);
      auto &step = std::get<UnrollStep>(s.steps[i]);
      if (!step.factor) {
        s.steps.erase(s.steps.begin() + static_cast<long>(i));  // the toggle: unroll no more
        return s;
      }
      std::vector<int64_t> factors;
      for (int64_t f : {2, 4, 8})
        if (f != *step.factor) factors.push_back(f);
      step.factor = pick(rng_, factors);
      return s;
    }
    // Unroll a short serial loop that is not yet.
    std::vector<const ScheduleNode *> loops;
    for (const ScheduleNode &n : tree_.nodes)
      if (n.kind == ScheduleNodeKind::Loop && n.loop_kind == LoopKind::Serial && n.extent >= 2 && n.extent <= 8)
        loops.push_back(&n);
    if (loops.empty()) return std::nullopt;
    const ScheduleNode &loop = *pick(rng_, loops);
    s.steps.push_back(UnrollStep{StageRef{loop.func, loop.update}, loop.var, std::nullopt});
    return s;
  }

  std::optional<Schedule> parallel_fusion() {
    std::vector<size_t> parallels;
    for (size_t i = 0; i < schedule_.steps.size(); ++i)
      if (const auto *p = std::get_if<ParallelStep>(&schedule_.steps[i]))
        if (!p->task_size && p->stage.update < 0) parallels.push_back(i);
    if (parallels.empty()) return std::nullopt;
    const size_t p = pick(rng_, parallels);
    const ParallelStep parallel = std::get<ParallelStep>(schedule_.steps[p]);
    return below(rng_, 2) == 0 ? fuse_one_more(p, parallel) : unfuse_one(p, parallel);
  }

  /// Renames loop `from` of `stage` to `to` in compute_at/store_at steps (they name loops
  /// of the final state, wherever they stand).
  static void rename_location(Schedule &s, const StageRef &stage, const std::string &from, const std::string &to) {
    for (size_t i = 0; i < s.steps.size(); ++i) {
      if (auto *c = std::get_if<ComputeAtStep>(&s.steps[i]))
        if (c->consumer == stage && c->var == from) c->var = to;
      if (auto *c = std::get_if<StoreAtStep>(&s.steps[i]))
        if (c->consumer == stage && c->var == from) c->var = to;
    }
  }

  /// Fuses the loop just inside the parallel one into it.
  std::optional<Schedule> fuse_one_more(size_t p, const ParallelStep &parallel) {
    const std::vector<const ScheduleNode *> loops = stage_loops(tree_, parallel.stage);
    size_t at = loops.size();
    for (size_t i = 0; i < loops.size(); ++i)
      if (loops[i]->var == parallel.var) at = i;
    if (at + 1 >= loops.size() || loops[at + 1]->loop_kind != LoopKind::Serial) return std::nullopt;
    const std::string inner = loops[at + 1]->var;
    Schedule s = schedule_;
    const std::string fused = fresh_name(s, inner + "_" + parallel.var);
    s.steps.insert(s.steps.begin() + static_cast<long>(p), FuseStep{parallel.stage, inner, parallel.var, fused});
    std::get<ParallelStep>(s.steps[p + 1]).var = fused;
    rename_location(s, parallel.stage, parallel.var, fused);
    rename_location(s, parallel.stage, inner, fused);
    return s;
  }

  /// Undoes the fuse that made the parallel loop: its outer loop runs in parallel, and
  /// whatever was computed at the fused loop is computed at its inner one (the same tile).
  std::optional<Schedule> unfuse_one(size_t p, const ParallelStep &parallel) {
    for (size_t q = p; q-- > 0;) {
      const auto *fuse = std::get_if<FuseStep>(&schedule_.steps[q]);
      if (!fuse || fuse->stage != parallel.stage || fuse->fused != parallel.var) continue;
      const FuseStep undone = *fuse;
      Schedule s = schedule_;
      s.steps.erase(s.steps.begin() + static_cast<long>(q));
      std::get<ParallelStep>(s.steps[p - 1]).var = undone.outer;
      rename_location(s, parallel.stage, undone.fused, undone.inner);
      return s;
    }
    return std::nullopt;
  }

  std::optional<Schedule> compute_location() {
    std::vector<size_t> placements;
    for (size_t i = 0; i < schedule_.steps.size(); ++i)
      if (std::holds_alternative<ComputeAtStep>(schedule_.steps[i])) placements.push_back(i);
    if (placements.empty()) return std::nullopt;
    const size_t i = pick(rng_, placements);
    Schedule s = schedule_;
    auto &step = std::get<ComputeAtStep>(s.steps[i]);
    std::vector<std::string> vars;
    const std::set<std::string> sub_tiles = sub_tile_loops(s, step.consumer);
    for (const ScheduleNode *loop : stage_loops(tree_, step.consumer))
      if ((loop->loop_kind == LoopKind::Serial || loop->loop_kind == LoopKind::Parallel) && loop->var != step.var &&
          !sub_tiles.count(loop->var))
        vars.push_back(loop->var);
    if (vars.empty()) return std::nullopt;
    step.var = pick(rng_, vars);
    return s;
  }

  const ComputeDesc &compute_;
  const Schedule &schedule_;
  const ScheduleTree &tree_;
  CpuTargetDesc target_;
  std::mt19937_64 &rng_;
  std::vector<std::optional<int64_t>> extents_;
};

/// The most accumulators an update stage keeps: the product of its unrolled pure loops
/// around one compute (vectors x rows of a register tile).
int64_t register_tile(const ScheduleTree &tree) {
  int64_t most = 1;
  std::vector<const ScheduleNode *> loops;
  std::function<void(int)> walk = [&](int index) {
    const ScheduleNode &n = tree.nodes[index];
    if (n.kind == ScheduleNodeKind::Compute && n.update >= 0) {
      int64_t tile = 1;
      for (const ScheduleNode *l : loops)
        if (l->func == n.func && l->update == n.update && l->loop_kind == LoopKind::Unrolled && !l->reduction)
          tile *= l->extent;
      most = std::max(most, tile);
    }
    if (n.kind == ScheduleNodeKind::Loop) loops.push_back(&n);
    for (int child : n.children) walk(child);
    if (n.kind == ScheduleNodeKind::Loop) loops.pop_back();
  };
  walk(0);
  return most;
}

bool unrolls_too_much(const ScheduleTree &tree) {
  for (const ScheduleNode &n : tree.nodes)
    if (n.kind == ScheduleNodeKind::Loop && n.loop_kind == LoopKind::Unrolled && n.extent > kMaxUnroll) return true;
  return false;
}

}  // namespace

Result<CoveredSchedule> mutate_replayed_schedule(const ComputeDesc &compute, const Schedule &schedule,
                                                 const ScheduleTree &tree, const CpuTargetDesc &target,
                                                 std::mt19937_64 &rng) {
  // Mutants keep their register tiles within the budget (or within the input's, if larger).
  const int64_t register_limit = std::max<int64_t>(target.accumulator_budget(), register_tile(tree));
  Mutator mutator(compute, schedule, tree, target, rng);
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::optional<Schedule> proposal = mutator.propose();
    if (!proposal) continue;
    Result<CoveredSchedule> repaired = repair_and_validate_exact_cover(compute, *proposal);
    if (!repaired || repaired->schedule == schedule) continue;
    const ScheduleTree &checked = repaired->tree;
    if (unrolls_too_much(checked) || register_tile(checked) > register_limit ||
        !check_unrolled_body(checked, target).ok() || computes_at_sub_tile(repaired->schedule))
      continue;
    return repaired;
  }
  return make_error("no valid mutation of the schedule found in 64 tries");
}

Result<Schedule> mutate_schedule(const ComputeDesc &compute, const Schedule &schedule, const CpuTargetDesc &target,
                                 std::mt19937_64 &rng) {
  Result<ScheduleTree> tree = validate_and_replay(compute, schedule);
  if (!tree) return make_error(tree.error().kind, "the schedule to mutate does not replay: " + tree.error().message);
  TESSEL_TRY(auto mutated, mutate_replayed_schedule(compute, schedule, *tree, target, rng));
  return std::move(mutated.schedule);
}

}  // namespace tessel
