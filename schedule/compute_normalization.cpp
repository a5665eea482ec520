#include <Halide.h>

#include "schedule/op_compute.h"

namespace tessel {

void register_normalization_compute(ComputeRegistry &r) {}

}  // namespace tessel
