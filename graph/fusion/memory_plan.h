#pragma once
// Static memory planning over a partitioned graph: every intermediate tensor gets an offset
// in one arena, chosen so tensors alive at the same time never overlap (seed 002 §3).
#include <cstdint>
#include <vector>

#include "graph/fusion/fuse.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Where each tensor lives. Graph inputs, outputs and constants are not in the arena (the
/// caller or the model owns them); values internal to a fused group need no buffer at all.
struct MemoryPlan {
  static constexpr int64_t kNotInArena = -1;
  std::vector<int64_t> arena_offset;  // by tensor id, bytes; kNotInArena otherwise
  std::vector<int> alias_of;          // by tensor id: the tensor whose bytes it shares, or -1
  int64_t arena_bytes = 0;            // size of the arena
  int64_t unshared_bytes = 0;         // bytes if every intermediate had its own buffer
  int views = 0;                      // view ops (Reshape ...) that alias instead of copying
  int in_place = 0;                   // elementwise groups writing over a dead input
  std::vector<bool> concat_in_place;  // by node: a Concat whose inputs are its output's slices
  int concats_in_place = 0;
};

struct MemoryPlanOptions {
  /// By group: may its outputs be placed inside another tensor's bytes (true for groups that
  /// run as kernels writing wherever the plan says). Empty: no Concat is done in place.
  std::vector<bool> writes_anywhere;
};

/// Plans the arena for executing `groups` in order: liveness from the producing group to
/// the last reading group, views aliasing their input, elementwise groups writing in place
/// over an input of the same size that dies there, then greedy-by-size offset assignment
/// (largest first, lowest offset that overlaps no tensor alive at the same time).
/// With options.writes_anywhere, a Concat whose axis has only unit dimensions before it
/// (batch 1 NCHW), whose inputs all come from such groups and whose slices start 64-byte
/// aligned (as every arena tensor does) is done in place: each input
/// is laid out as its slice of the output, and the Concat has nothing left to copy (the
/// caller skips the nodes marked in concat_in_place).
/// Needs fully known intermediate shapes; tensors of unknown size are left out of the plan.
MemoryPlan plan_memory(const Graph &graph, const std::vector<FusedGroup> &groups,
                       const MemoryPlanOptions &options = {});

}  // namespace tessel
