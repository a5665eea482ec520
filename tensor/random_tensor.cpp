#include "tensor/random_tensor.h"

#include <random>

namespace tessel {

Tensor random_tensor(const TensorType &type, uint64_t seed) {
  Tensor t(type.dtype, type.shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 7);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype_is_float(type.dtype)) t.set_element_from_double(i, real(rng));
    else if (type.dtype == DType::Bool) t.set_element_from_double(i, small(rng) & 1);
    else t.set_element_from_double(i, small(rng));
  }
  return t;
}

}  // namespace tessel
