#include <Halide.h>

#include "schedule/op_compute.h"

namespace tessel {

void register_index_ops_compute(ComputeRegistry &r) {}

}  // namespace tessel
