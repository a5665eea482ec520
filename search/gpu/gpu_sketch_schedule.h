#pragma once
// The steps a GPU sketch implies for given parameter values (the GPU half of the writer
// pair; search/cpu/sketch_schedule.h is the CPU one, search/sketch_writer.h what they share).
#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

/// The steps of a GPU sketch with `choices`; errors name the parameter the sketch cannot use.
Result<Schedule> build_gpu_sketch_schedule(const ComputeDesc &compute, const Sketch &sketch,
                                           const GpuTargetDesc &target, const SketchChoices &choices);

}  // namespace tessel
