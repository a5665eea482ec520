#pragma once
// Integer division rounded up, for counting blocks and tiles (light header).
#include <cstdint>

namespace tessel {

/// a / b rounded up, for a >= 0 and b > 0: the blocks of b that cover a items.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace tessel
