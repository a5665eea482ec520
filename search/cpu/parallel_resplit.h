#pragma once
// Moving a schedule's parallel loop to another of its output's outer loops while keeping
// every inner loop as it is. The tuner times kernels alone, where splitting the work by
// tiles or by channels often costs the same; inside a model the split decides which core
// finds which data in its cache (a Winograd product split by tile streams the whole weight
// on both cores; split by point, each core reads half and the points its producer wrote).
// In-graph selection (tuner/in_graph_selection.h) tries these variants of a record.
#include <vector>

#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"

namespace tessel {

/// For each outer loop of a parallel output stage that lies outside every loop a Func is
/// computed or stored at, is not already part of its parallel loop and runs at least
/// `threads` iterations: `schedule` with that loop moved outermost and run in parallel
/// instead (the loops fused into the old parallel loop become serial loops of their own).
/// Every placed Func keeps the loops inside its level, so it computes the same region. Only
/// variants that replay are returned; none for a stage whose parallel loop has a task size
/// or that places a Func at a fused loop.
std::vector<Schedule> with_parallel_loop_moved(const ComputeDesc &compute, const Schedule &schedule, int threads);

}  // namespace tessel
