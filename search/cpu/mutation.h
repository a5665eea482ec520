#pragma once
// Mutation for the evolutionary search: one choice of an existing schedule changes. It
// works on the steps themselves (a schedule may come from the database as text, without
// the sketch and values it was drawn from): a split factor, a vector width, an unroll, the
// number of loops fused into the parallel one, or the loop a Func is computed at. Factors
// that depend on the changed one (an anchor's register tile inside its output's tile) are
// shrunk until they divide again (exact_cover.h).
#include <random>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/cpu_target.h"
#include "search/exact_cover.h"

namespace tessel {

/// A schedule that differs from `schedule` in one choice (and the factors that follow from
/// it), replays (validate_and_replay), stays inside every Func's region, unrolls no loop
/// more than 32 times, keeps register tiles (unrolled pure loops of an update) within the
/// target's accumulator budget, and computes no Func at a loop that splits a tile loop again
/// (Halide 14 gets such bounds wrong, see mutation.cpp). An Error when `schedule` itself does not replay, or when no such
/// mutation was found in 64 tries.
Result<Schedule> mutate_schedule(const ComputeDesc &compute, const Schedule &schedule, const CpuTargetDesc &target,
                                 std::mt19937_64 &rng);

/// mutate_schedule from the parent's replayed tree (`tree` is validate_and_replay of
/// `schedule`, which a search keeps), returning the child with its own replayed tree: the
/// search replays neither again (a replay is most of a mutation's cost).
Result<CoveredSchedule> mutate_replayed_schedule(const ComputeDesc &compute, const Schedule &schedule,
                                                 const ScheduleTree &tree, const CpuTargetDesc &target,
                                                 std::mt19937_64 &rng);

}  // namespace tessel
