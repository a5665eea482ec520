#include <Halide.h>

#include "schedule/op_compute.h"

namespace tessel {

void register_resize_compute(ComputeRegistry &r) {}

}  // namespace tessel
