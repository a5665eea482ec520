#pragma once
// Internal to schedule/ and codegen/: replays a tessel Schedule onto Halide Funcs.
// Include <Halide.h> before this header; other modules reach it through light wrappers
// (schedule_selfcheck.h, codegen/).
#ifndef HALIDE_H
#error "include <Halide.h> before schedule/apply_schedule.h"
#endif

#include <map>
#include <string>

#include "base/result.h"
#include "schedule/schedule_ir.h"

namespace tessel {

/// Applies each step to the Funcs named in `funcs_by_name` (Func::split, reorder, fuse,
/// tile, vectorize, unroll, parallel, gpu_blocks/threads/lanes, compute_at, store_at,
/// compute_inline, compute_root, store_in, rfactor on update(k) stages). An rfactor adds
/// its new Func to the map under the step's name. Vars are found by name: pure vars,
/// RDom variables and the vars earlier steps created. Afterwards a Func with update
/// definitions that no step placed is computed at root, as validate_and_replay assumes
/// (Halide's own default would compute it at its consumer's innermost loop).
///
/// Expects Funcs fresh from their compute definition, without a schedule. An illegal step,
/// including one Halide rejects, is an Error naming the step's line in to_text(schedule)
/// and its text; the Funcs are then half-scheduled and should be rebuilt.
///
/// compute_at/store_at of an update stage: Halide 14 rejects LoopLevels with an explicit
/// stage index at lowering (measured), so the var alone names the loop; Halide then uses
/// that loop in every stage of the consumer that reads the Func, which validate_and_replay
/// guarantees is the one named.
struct ApplyOptions {
  /// Replays a GPU schedule for the host: bind steps leave their loops serial and
  /// register/shared placements are dropped, so the schedule's loop structure (splits,
  /// tails, compute_at regions) can be run and checked on a machine without a GPU.
  bool gpu_loops_on_host = false;
  /// The kernel may write its output over an input (memory_plan.h: elementwise groups in
  /// place): a split of a pure stage whose tail would shift inwards, computing points twice,
  /// guards them instead. A point computed again after its output overwrote the input it
  /// reads is wrong (RegNet-Y's SE Mul, a 6-wide row in vectors of 4 shifted inwards, scaled
  /// twice: the model's output off by 48%), though the kernel alone measures right.
  bool no_recomputed_tails = false;
};
Result<void> apply_schedule(const Schedule &schedule, std::map<std::string, Halide::Func> &funcs_by_name,
                            const ApplyOptions &options = {});

/// parse_schedule, then apply_schedule.
Result<void> apply_schedule_text(const std::string &text, std::map<std::string, Halide::Func> &funcs_by_name);

}  // namespace tessel
