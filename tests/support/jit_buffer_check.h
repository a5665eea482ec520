#pragma once
// A one-input kernel built by hand, compiled as JitKernel compiles (its buffer assertions
// resolved), for tests that must not include Halide.h.
#include <string>
#include <vector>

#include "base/result.h"

namespace tessel {

/// out(x) = in(x + shift) for x in [0, size), over an input declared with `input_size`
/// elements, run on an input of `passed_size` elements (filled with 0, 1, 2, ...). Returns the
/// output, or the error of compiling, binding or running it.
Result<std::vector<float>> run_shifted_copy(int size, int shift, int input_size, int passed_size);

}  // namespace tessel
