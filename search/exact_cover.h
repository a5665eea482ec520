#pragma once
// Splits that stay inside the region a Func computes. validate_and_replay checks outputs
// (their size is pinned), but a non-output Func computed at a tile of its consumer has a
// region too: a round_up split whose factor does not divide it computes past that region,
// which makes the Func read its inputs past their end (only Halide's bounds checks see it,
// at run time). A shift_inwards split by more than the region starts before it, the same
// way. These helpers find such splits and repair them by shrinking the factor.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "schedule/schedule_tree.h"

namespace tessel {

/// A split (or the split of a vectorize/unroll/parallel with a factor, or one half of a
/// tile) that leaves its Func's region.
struct CoverViolation {
  size_t step = 0;
  int part = 0;  ///< a tile step: 0 for its x split, 1 for its y split
  int64_t extent = 0, factor = 0;
  bool rounds_up = true;  ///< false: shifts inwards past the start (factor > extent)
  std::string message;
};

/// For each step, the extent of the loop it splits where its Func is computed (vectorize,
/// unroll and parallel with a factor count as splits; a tile gives its x split); nullopt for
/// other steps and for stages whose region the tree does not give.
std::vector<std::optional<int64_t>> split_extents(const ComputeDesc &compute, const Schedule &schedule,
                                                  const ScheduleTree &tree);

/// The first split that leaves its Func's region, given the replayed tree.
std::optional<CoverViolation> find_cover_violation(const ComputeDesc &compute, const Schedule &schedule,
                                                   const ScheduleTree &tree);

/// validate_and_replay, then find_cover_violation; errors name the step's line.
Result<ScheduleTree> validate_exact_cover(const ComputeDesc &compute, const Schedule &schedule);

/// Shrinks offending factors (to the largest divisor of the extent below them, preferring
/// powers of two for vector widths; to the extent for shift_inwards) until none is left or
/// the schedule stops replaying. Returns the repaired schedule, or the replay's error.
Result<Schedule> repair_exact_cover(const ComputeDesc &compute, Schedule schedule);

/// A repaired schedule with the tree of its last replay, which already passed the cover
/// check: validate_exact_cover of it would replay it again for the same answer.
struct CoveredSchedule {
  Schedule schedule;
  ScheduleTree tree;
};
Result<CoveredSchedule> repair_and_validate_exact_cover(const ComputeDesc &compute, Schedule schedule);

}  // namespace tessel
