#pragma once
// How much code a schedule asks the compiler to write out: the statements one compute
// becomes once its unrolled loops are expanded, counted in native vectors. Candidates past
// a cap are never proposed: their compile time grows with this number (ResNet-18's 7x7
// stem conv took 2-11 s to compile at 588-2352 vectors against 0.3-0.5 s at 84-168, and
// no task's fastest schedule in a 100-trial tune was above 162), while the measurement that
// follows is the same for all.
#include <cstdint>

#include "base/result.h"
#include "schedule/schedule_tree.h"
#include "search/cpu/cpu_target.h"

namespace tessel {

/// The most vector statements any one compute of `tree` unrolls to: the product of the
/// extents of its enclosing unrolled loops, times its vectorized loops' extents in native
/// vectors of 32-bit lanes.
int64_t unrolled_body_vectors(const ScheduleTree &tree, const CpuTargetDesc &target);

/// The cap: an AVX-512 register tile (28 accumulators) times a 3x3 kernel's taps is 252.
constexpr int64_t kMaxUnrolledBodyVectors = 256;

/// An error naming the size when `tree` unrolls past kMaxUnrolledBodyVectors.
Result<void> check_unrolled_body(const ScheduleTree &tree, const CpuTargetDesc &target);

}  // namespace tessel
