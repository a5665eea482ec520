#pragma once
// Moving a convolution's zero-padded input copy (FuncDesc::placeable_source) into the
// parallel loop of the output its anchor is computed in. The tuner times kernels alone,
// where the root copy is cheap; inside a model the copy at root is one more full pass over
// memory, split across threads unlike the convolution, and the in-graph selection
// (tuner/in_graph_selection.h) tries this variant of the best records.
#include <optional>

#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"

namespace tessel {

/// `schedule` with every placeable source that it leaves at root computed inside the
/// parallel loop of its anchor's output (the anchor must be computed inside that loop),
/// when the result replays; nothing when no source can move.
std::optional<Schedule> with_sources_in_parallel_loop(const ComputeDesc &compute, const Schedule &schedule);

}  // namespace tessel
