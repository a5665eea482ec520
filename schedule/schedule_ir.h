#pragma once
// tessel's own schedule: an ordered list of primitive steps over named Funcs, stages and
// loop variables (Ansor's replayable record of steps). It is plain data with one canonical
// text form, so the tuner can mutate it, the database can store it and a fresh compute
// can replay it (schedule_tree.h symbolically, apply_schedule.h onto Halide Funcs).
//
// Text form, one step per line after a version line; fields are separated by one space,
// loop variables are listed innermost first as in Halide:
//
//   tessel-schedule v1
//   split STAGE VAR OUTER INNER FACTOR TAIL        TAIL: auto|guard|shift_inwards|round_up
//   reorder STAGE VAR VAR...                       innermost first
//   fuse STAGE INNER OUTER FUSED
//   tile STAGE X Y XO YO XI YI XFACTOR YFACTOR TAIL
//   vectorize STAGE VAR [WIDTH]
//   unroll STAGE VAR [FACTOR]
//   parallel STAGE VAR [TASK_SIZE]
//   bind STAGE VAR gpu_block|gpu_thread|gpu_lane INDEX
//   compute_at FUNC CONSUMER_STAGE VAR
//   store_at FUNC CONSUMER_STAGE VAR
//   compute_inline FUNC
//   compute_root FUNC
//   store_in FUNC register|stack|heap|gpu_shared
//   rfactor STAGE NEW_FUNC RVAR:VAR [RVAR:VAR...]
//   cache_inputs STAGE VAR                         GPU: operands staged in shared memory
//
// A STAGE is `func` (the pure definition) or `func.uK` (update K). Names are letters,
// digits, '_' and '$' (Halide names RDom variables r$x), not starting with a digit.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"

namespace tessel {

/// One stage of a Func: its pure definition (update == -1) or update `update`.
struct StageRef {
  std::string func;
  int update = -1;

  /// "func" or "func.uK".
  std::string to_text() const;
};
bool operator==(const StageRef &a, const StageRef &b);
inline bool operator!=(const StageRef &a, const StageRef &b) { return !(a == b); }

/// What a split does with the last, partial piece when the factor does not divide the
/// extent (Halide's TailStrategy). Auto: shift_inwards in pure definitions, round_up for
/// pure vars of updates, guard for reduction vars.
enum class TailStrategy { Auto, Guard, ShiftInwards, RoundUp };

/// Which GPU loop level a bind step maps a loop to.
enum class GpuAxis { Block, Thread, Lane };

/// Where a Func's buffer lives.
enum class MemoryKind { Register, Stack, Heap, GpuShared };

const char *to_text(TailStrategy tail);
const char *to_text(GpuAxis axis);
const char *to_text(MemoryKind memory);

/// var -> outer (ceil(extent / factor)) and inner (factor).
struct SplitStep {
  StageRef stage;
  std::string var, outer, inner;
  int64_t factor = 1;
  TailStrategy tail = TailStrategy::Auto;
};
/// Reorders the listed loops among the positions they hold (innermost first, like Halide's
/// Func::reorder); loops not listed keep their places.
struct ReorderStep {
  StageRef stage;
  std::vector<std::string> vars;
};
/// inner, outer -> fused (at inner's position, extent = product).
struct FuseStep {
  StageRef stage;
  std::string inner, outer, fused;
};
/// Two splits and a reorder (xi, yi, xo, yo), kept as one step so the text stays readable.
struct TileStep {
  StageRef stage;
  std::string x, y, xo, yo, xi, yi;
  int64_t x_factor = 1, y_factor = 1;
  TailStrategy tail = TailStrategy::Auto;
};
/// Vectorizes a loop; with a width, first splits var -> var (outer), vectorized_inner_name(var).
struct VectorizeStep {
  StageRef stage;
  std::string var;
  std::optional<int64_t> width;
};
/// Unrolls a loop; with a factor, first splits var -> var (outer), unrolled_inner_name(var).
struct UnrollStep {
  StageRef stage;
  std::string var;
  std::optional<int64_t> factor;
};
/// Runs a loop in parallel; with a task size, first splits var -> var (outer, parallel),
/// parallel_task_name(var) (serial inside each task).
struct ParallelStep {
  StageRef stage;
  std::string var;
  std::optional<int64_t> task_size;
};
/// Maps a loop to GPU block, thread or lane index `index` (0 = x, 1 = y, 2 = z).
struct BindStep {
  StageRef stage;
  std::string var;
  GpuAxis axis = GpuAxis::Block;
  int index = 0;
};
/// Computes `func` inside loop `var` of stage `consumer`.
struct ComputeAtStep {
  std::string func;
  StageRef consumer;
  std::string var;
};
/// Allocates `func`'s buffer inside loop `var` of stage `consumer`.
struct StoreAtStep {
  std::string func;
  StageRef consumer;
  std::string var;
};
/// Substitutes `func` into its consumers' expressions (pure Funcs only).
struct ComputeInlineStep {
  std::string func;
};
/// Computes all of `func` before its consumers, outside every loop.
struct ComputeRootStep {
  std::string func;
};
/// Places `func`'s buffer in the given memory.
struct StoreInStep {
  std::string func;
  MemoryKind memory = MemoryKind::Heap;
};
/// Splits an update's reduction: each listed RVar becomes a new pure var of a new Func
/// `new_func` that computes partial results; the update then folds those partials.
struct RfactorStep {
  StageRef stage;
  std::string new_func;
  std::vector<std::pair<std::string, std::string>> rvar_to_var;
};

/// GPU: every buffer or Func the stage's Func reads directly is copied, at each iteration of
/// loop `var`, into a GPU shared-memory tile (Halide's Func::in wrappers) that the block's
/// threads load together, one warp-wide row of elements at a time, before a barrier; the
/// stage then reads the tiles. On the host the copies are plain loops.
struct CacheInputsStep {
  StageRef stage;
  std::string var;
  /// Warps of the block that load the tiles together (the loads' second thread dimension).
  int64_t warps = 1;
  /// Elements each thread loads at once (4: float4 loads where the tile's rows allow).
  int64_t vector = 1;
};

using ScheduleStep = std::variant<SplitStep, ReorderStep, FuseStep, TileStep, VectorizeStep, UnrollStep,
                                  ParallelStep, BindStep, ComputeAtStep, StoreAtStep, ComputeInlineStep,
                                  ComputeRootStep, StoreInStep, RfactorStep, CacheInputsStep>;

bool operator==(const SplitStep &a, const SplitStep &b);
bool operator==(const ReorderStep &a, const ReorderStep &b);
bool operator==(const FuseStep &a, const FuseStep &b);
bool operator==(const TileStep &a, const TileStep &b);
bool operator==(const VectorizeStep &a, const VectorizeStep &b);
bool operator==(const UnrollStep &a, const UnrollStep &b);
bool operator==(const ParallelStep &a, const ParallelStep &b);
bool operator==(const BindStep &a, const BindStep &b);
bool operator==(const ComputeAtStep &a, const ComputeAtStep &b);
bool operator==(const StoreAtStep &a, const StoreAtStep &b);
bool operator==(const ComputeInlineStep &a, const ComputeInlineStep &b);
bool operator==(const ComputeRootStep &a, const ComputeRootStep &b);
bool operator==(const StoreInStep &a, const StoreInStep &b);
bool operator==(const RfactorStep &a, const RfactorStep &b);
bool operator==(const CacheInputsStep &a, const CacheInputsStep &b);

/// A versioned, ordered list of steps.
struct Schedule {
  int version = 1;
  std::vector<ScheduleStep> steps;
};
bool operator==(const Schedule &a, const Schedule &b);
inline bool operator!=(const Schedule &a, const Schedule &b) { return !(a == b); }

/// Names of the loops that vectorize/unroll/parallel with a factor split off (x -> x_vec,
/// x_unroll, x_task); the outer loop keeps the name of the original one.
std::string vectorized_inner_name(const std::string &var);
std::string unrolled_inner_name(const std::string &var);
std::string parallel_task_name(const std::string &var);

/// The line number a step has in to_text(schedule): the version line is line 1.
inline int step_line_number(size_t step_index) { return static_cast<int>(step_index) + 2; }

/// One step as its canonical line (no newline).
std::string to_text(const ScheduleStep &step);
/// The canonical text: the version line, then one line per step, each ending in '\n'.
std::string to_text(const Schedule &schedule);

/// Parses one step line; errors say what is wrong (not which line).
Result<ScheduleStep> parse_step(const std::string &line);
/// Parses a schedule text. Blank lines and lines starting with '#' are skipped; errors name
/// the line number and what is wrong.
Result<Schedule> parse_schedule(const std::string &text);

/// FNV-1a 64 of to_text(schedule), as 16 lowercase hex digits.
std::string schedule_hash(const Schedule &schedule);

}  // namespace tessel
