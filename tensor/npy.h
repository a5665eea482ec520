#pragma once
// NumPy .npy files (format versions 1-3, little-endian, C order) for `tessel run` I/O.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "base/result.h"
#include "tensor/tensor.h"

namespace tessel {

/// Reads an .npy file; errors name the file and what is wrong with it. An array of more
/// than `max_bytes` is refused before anything is allocated.
Result<Tensor> read_npy(const std::string &path, int64_t max_bytes = std::numeric_limits<int64_t>::max());
/// The input a `--input` spec names: "NAME=file.npy" (first: NAME), or "file.npy" (first:
/// empty, the next unnamed input), read as read_npy does.
Result<std::pair<std::string, Tensor>> read_input_spec(const std::string &spec,
                                                       int64_t max_bytes = std::numeric_limits<int64_t>::max());
/// The same from bytes in memory; errors start with `name`.
Result<Tensor> parse_npy(const std::string &bytes, const std::string &name = "<bytes>");
/// Writes a tensor as an .npy file (version 1.0).
Result<void> write_npy(const std::string &path, const Tensor &tensor);

}  // namespace tessel
