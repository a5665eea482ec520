#include "base/fnv_hash.h"

#include <cstdint>
#include <cstdio>

namespace tessel {

std::string fnv1a64_hex(const void *data, size_t size, uint64_t basis) {
  uint64_t h = basis;
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;  // the FNV prime
  }
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(h));
  return digits;
}

}  // namespace tessel
