#pragma once
// Int64 lists (axes, pads, strides, shapes given as values) as text for error messages.
#include <cstdint>
#include <string>
#include <vector>

namespace tessel {

/// "[a, b, c]": the list as an attribute or value input gave it (unlike shape_to_string,
/// -1 prints as -1, not as an unknown dimension).
std::string ints_to_string(const std::vector<int64_t> &values);

}  // namespace tessel
