#pragma once
// The CPU a schedule is made for, as the sketch rules and the sampler see it: how many
// threads share the parallel loops and how wide and how many the vector registers are.
#include <algorithm>
#include <cstdint>

namespace tessel {

struct CpuTargetDesc {
  int threads = 2;
  int vector_bits = 512;  ///< 512 for AVX-512, 256 for AVX2, 128 for SSE/NEON
  int registers = 32;     ///< vector registers: 32 zmm for AVX-512, 16 for AVX2

  /// Lanes of one vector register for elements of `bytes_per_element` bytes (at least 1).
  int lanes(int64_t bytes_per_element) const {
    const int64_t bits = std::max<int64_t>(8, bytes_per_element * 8);
    return static_cast<int>(std::max<int64_t>(1, vector_bits / bits));
  }
  /// Accumulator registers a register tile may hold: the rest keep the operands loaded
  /// or broadcast in the innermost loop.
  int accumulator_budget() const { return std::max(1, registers - 4); }
};

/// AVX-512 with 2 threads: the machine the benchmarks run on.
inline CpuTargetDesc avx512_target(int threads = 2) { return CpuTargetDesc{threads, 512, 32}; }
/// AVX2 (16 ymm registers).
inline CpuTargetDesc avx2_target(int threads = 2) { return CpuTargetDesc{threads, 256, 16}; }

}  // namespace tessel
