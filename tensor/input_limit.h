#pragma once
// How large an input tensor tessel makes (random inputs) or reads (.npy) may be: a model
// may declare any shape and a header may claim one, and filling 8 GB before failing, or
// being killed for memory, is no way to say "too large".
#include <cstdint>
#include <string>

#include "base/result.h"
#include "tensor/tensor.h"

namespace tessel {

/// A quarter of this machine's physical memory (1 GiB when it cannot be read).
int64_t default_max_input_bytes();

/// An error naming `what` and its shape when a tensor of this dtype and shape takes more
/// than `max_bytes` bytes (or its size overflows).
Result<void> check_input_bytes(const std::string &what, DType dtype, const Shape &shape, int64_t max_bytes);

}  // namespace tessel
