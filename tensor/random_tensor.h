#pragma once
// Seeded random tensors: inputs for measuring kernels and running models without data.
#include <cstdint>

#include "tensor/tensor.h"

namespace tessel {

/// A tensor of the given type filled from a seeded generator: floats uniform in [-1, 1),
/// integers in [0, 8), bools half true. Never all zeros.
Tensor random_tensor(const TensorType &type, uint64_t seed);

}  // namespace tessel
