#pragma once
// FNV-1a 64, the project's one content hash: workload keys, schedule hashes and the hashes of
// an artifact's files. Not cryptographic: it names content and catches accidental damage.
#include <cstddef>
#include <string>

namespace tessel {

/// The hash as 16 lower-case hex digits.
std::string fnv1a64_hex(const void *data, size_t size);
inline std::string fnv1a64_hex(const std::string &bytes) { return fnv1a64_hex(bytes.data(), bytes.size()); }

}  // namespace tessel
