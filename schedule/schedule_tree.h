#pragma once
// The schedule tree (seed 001 §4.2.1): a schedule replayed symbolically over a
// ComputeDesc, without Halide. Root -> loop nodes (func, var, extent, kind) -> storage
// (realize) nodes and compute nodes (one per stage). It checks every step the way Halide
// would (and a few things Halide only finds at lowering), prints a loop nest a person can
// read, and gives the tuner the loop structure as data for features.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"

namespace tessel {

/// How a loop runs.
enum class LoopKind { Serial, Parallel, Vectorized, Unrolled, GpuBlock, GpuThread, GpuLane };
const char *to_text(LoopKind kind);

enum class ScheduleNodeKind { Root, Loop, Realize, Compute };

/// One node of the tree; children are indices into ScheduleTree::nodes, in execution order.
struct ScheduleNode {
  ScheduleNodeKind kind = ScheduleNodeKind::Root;
  std::string func;  ///< loop, realize, compute: the Func concerned
  int update = -1;   ///< loop, compute: the stage (-1 pure definition, k update k)
  int depth = 0;     ///< number of enclosing loop nodes

  // Loop nodes.
  std::string var;
  int64_t extent = 1;
  LoopKind loop_kind = LoopKind::Serial;
  int gpu_index = -1;  ///< GPU loops: 0 = x, 1 = y, 2 = z
  bool reduction = false;

  // Realize nodes: the buffer allocated at this point of the nest. The region is an
  // estimate, innermost dimension first: a producer axis that shares its name with an axis
  // of the Func it is stored in covers that axis's extent inside the storage loop; other
  // axes (and halos) are taken whole.
  std::vector<int64_t> region;
  int64_t bytes = 0;
  std::optional<MemoryKind> memory;  ///< nullopt: Halide chooses
  std::string element_type;

  // Compute nodes.
  int64_t executions = 0;            ///< product of the enclosing loops' extents
  std::vector<std::string> inlined;  ///< Funcs inlined into this stage, producers first

  std::vector<int> children;
};

/// The tree; nodes[0] is the root.
struct ScheduleTree {
  std::vector<ScheduleNode> nodes;

  const ScheduleNode &root() const { return nodes.front(); }
  /// An indented loop nest, one node per line.
  std::string to_text() const;
};

/// Replays `schedule` over `compute` step by step and builds the tree. Every invalid step
/// is an Error naming its line in to_text(schedule) and the reason; checks that need the
/// whole schedule (a compute_at var that a later split removed, a producer read outside
/// the loop it is computed in, ...) run after the last step and name the step concerned.
/// A Func no step places is inlined when it is inlinable and not an output, otherwise
/// computed at root.
Result<ScheduleTree> validate_and_replay(const ComputeDesc &compute, const Schedule &schedule);
/// The index of the step a schedule fails to replay at; nullopt when it replays (or fails as
/// a whole, e.g. its version).
std::optional<size_t> failing_step(const ComputeDesc &compute, const Schedule &schedule);

}  // namespace tessel
