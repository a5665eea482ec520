#include <Halide.h>

#include "schedule/op_compute.h"

namespace tessel {

void register_reduction_compute(ComputeRegistry &r) {}

}  // namespace tessel
