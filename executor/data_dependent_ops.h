#pragma once
// Host ops whose output length depends on the input values: NonZero, Compress and
// NonMaxSuppression (detection models' post-processing). Their output shapes cannot be
// inferred ahead of a run, so they compute them here; a kernel could not be specialized
// on a shape that is not known yet.
#include <vector>

#include "base/result.h"
#include "executor/host_ops.h"

namespace tessel {

/// Runs one of the ops output_shape_depends_on_values() names.
Result<std::vector<Tensor>> run_data_dependent_op(const HostOpContext &ctx);

}  // namespace tessel
