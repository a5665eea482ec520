#pragma once
// FNV-1a 64, the project's one content hash: workload keys, schedule hashes and the hashes of
// an artifact's files. Not cryptographic: it names content and catches accidental damage.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessel {

/// FNV-1a 64's offset basis.
inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;

/// The hash as 16 lower-case hex digits, from `basis` (the standard one unless a stored key
/// was made from another).
std::string fnv1a64_hex(const void *data, size_t size, uint64_t basis = kFnvOffsetBasis);
inline std::string fnv1a64_hex(const std::string &bytes, uint64_t basis = kFnvOffsetBasis) {
  return fnv1a64_hex(bytes.data(), bytes.size(), basis);
}

}  // namespace tessel
