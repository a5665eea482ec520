#pragma once
// The vector registers the host's CPU kernels are compiled for, as the built-in schedules
// size their register tiles by them (light header: no Halide).
//
// An accumulator tile that fits AVX-512's 32 registers of 16 floats needs twice the
// registers on an AVX2 host, where a 16-float vector is two of its 16 ymm registers: the
// built-in conv and matmul tiles made for AVX-512 spilled there.

namespace tessel {

/// 512 with AVX-512, 256 with AVX2 (or AVX), else 128; TESSEL_VECTOR_BITS (128, 256 or
/// 512) overrides it, for tests of either tiling on any host.
int host_vector_bits();

/// Accumulator registers a built-in register tile may take: three quarters of the host's
/// vector registers (32 with AVX-512, else 16), the rest holding operands.
int accumulator_registers();

}  // namespace tessel
