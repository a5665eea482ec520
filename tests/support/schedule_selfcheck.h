#pragma once
// A light entry point that exercises apply_schedule end to end on a real Halide pipeline,
// for tests and tools that must not include Halide.h.
#include <cstdint>
#include <string>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"

namespace tessel {

/// The pipeline lower_matmul_with_schedule builds, as a ComputeDesc: out(j, i) = acc(j, i)
/// with acc(j, i) = 0 and acc(j, i) += a(k, i) * b(j, k) over an RDom whose variable
/// Halide names "k$x"; j runs over n columns, i over m rows (Halide order: j innermost).
ComputeDesc matmul_compute_desc(int64_t m, int64_t n, int64_t k);

/// Builds that matmul (Funcs "acc" and "out"), applies `schedule`, JIT-compiles and runs it
/// on random inputs and compares the result with a naive C++ loop. Returns Halide's loop
/// nest (Func::print_loop_nest), or an Error from parsing, scheduling, compiling, running
/// or the comparison.
Result<std::string> lower_matmul_with_schedule(int64_t m, int64_t n, int64_t k, const Schedule &schedule);

}  // namespace tessel
