#pragma once
// Lists of axes given by attributes or value inputs (Squeeze, Unsqueeze, Slice, Pad), checked
// the same way wherever they are read.
#include <cstdint>
#include <vector>

#include "base/result.h"

namespace tessel {

/// Each axis made non-negative against `rank` (negative ones count from the back). Fails
/// naming an axis out of range or one that repeats.
Result<std::vector<int64_t>> normalize_axis_list(std::vector<int64_t> axes, int64_t rank);

}  // namespace tessel
