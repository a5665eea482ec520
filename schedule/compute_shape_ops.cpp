#include <Halide.h>

#include "schedule/op_compute.h"

namespace tessel {

void register_shape_ops_compute(ComputeRegistry &r) {}

}  // namespace tessel
