#include "compute/vector_isa.h"

#include <Halide.h>

#include <cstdlib>
#include <string>

namespace tessel {

int host_vector_bits() {
  if (const char *forced = std::getenv("TESSEL_VECTOR_BITS")) {
    const std::string text = forced;
    if (text == "128" || text == "256" || text == "512") return std::stoi(text);
  }
  static const int bits = [] {
    const Halide::Target host = Halide::get_host_target();
    if (host.has_feature(Halide::Target::AVX512)) return 512;
    if (host.has_feature(Halide::Target::AVX2) || host.has_feature(Halide::Target::AVX)) return 256;
    return 128;
  }();
  return bits;
}

int accumulator_registers() { return host_vector_bits() >= 512 ? 24 : 12; }

}  // namespace tessel
