#pragma once
// The last step of an artifact's code generation: AOT-compiled kernel objects and one copy of
// Halide's runtime linked into one shared library with the system's C++ compiler driver.
#include <string>
#include <vector>

#include "base/result.h"

namespace tessel {

/// Links `objects` into the shared library `library_path` with `linker` (empty:
/// $TESSEL_LINKER, else `c++`). The linker's output goes to `log_path` and into the error.
Result<void> link_shared_library(const std::vector<std::string> &objects, const std::string &library_path,
                                 const std::string &linker, const std::string &log_path);

}  // namespace tessel
