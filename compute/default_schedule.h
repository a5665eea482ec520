#pragma once
// Internal to schedule/: the untuned schedule of a node's outputs. Include <Halide.h> first.
#include "compute/op_compute.h"

namespace tessel {

/// Parallel over the fused outer loops and vectorized along the innermost axis when the
/// output is big enough to pay for it; leaves tiny outputs serial.
void apply_default_schedule(TensorFunc &output);

}  // namespace tessel
