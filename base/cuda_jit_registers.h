#pragma once
// Registers per thread the CUDA driver may give a kernel when it compiles its PTX.
//
// Halide 14's CUDA runtime compiles a pipeline's PTX when the pipeline first runs in a
// context, and caps every kernel of it at 64 registers unless the environment variable
// HL_CUDA_JIT_MAX_REGISTERS says otherwise (64 lets a 1024-thread block launch). A register
// tile of 128 accumulators per thread then spills to local memory: on an H200 a 4 x 32 warp
// tile of matmul 4096^3 took 71 ms capped and 4.07 ms uncapped (bench/results/gpu.md). So
// tessel sets the variable before each GPU pipeline's first run, from the pipeline's largest
// block (gpu_register_cap in search/gpu/gpu_sketch.h).

namespace tessel {

/// Halide's cap when nothing else is known.
constexpr int kHalideCudaJitRegisters = 64;

/// Sets HL_CUDA_JIT_MAX_REGISTERS to `registers` (kHalideCudaJitRegisters when <= 0) for the
/// pipelines that load next, unless the variable was set before this process first called
/// this (the user's override then holds for every kernel). Serialized with itself; call it
/// before a GPU pipeline runs, not while another thread starts one.
void set_cuda_jit_register_cap(int registers);

}  // namespace tessel
