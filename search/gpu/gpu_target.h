#pragma once
// The NVIDIA GPU a schedule is made for, as the GPU sketch rules and the sampler see it:
// the limits a kernel launch must respect (threads, shared memory, registers) and how many
// multiprocessors there are to fill.
#include <algorithm>
#include <cstdint>
#include <string>

namespace tessel {

struct GpuTargetDesc {
  int compute_capability = 86;  ///< major * 10 + minor (sm_86 -> 86)
  int max_threads_per_block = 1024;
  /// Shared memory one block may use without opting in to more (48 KiB on every GPU
  /// since Kepler; Halide 14's CUDA runtime does not opt in).
  int64_t shared_bytes_per_block = 48 * 1024;
  int registers_per_block = 64 * 1024;
  int max_registers_per_thread = 255;
  int multiprocessors = 108;
  int warp_size = 32;

  /// Accumulators one thread may keep in registers: the rest hold operands, addresses and
  /// loop counters, and 64 accumulators already cost a block of 256 threads a quarter of
  /// the register file.
  int accumulator_budget() const { return 64; }
  /// The most a schedule may keep (what the check lets through): 128 accumulators still
  /// assemble without spills (~190 registers for a 4 x 32 warp tile, ptxas sm_90), at the
  /// cost of fewer warps per multiprocessor.
  int max_accumulators() const { return 128; }
  /// Threads per block a register tile of `accumulators` per thread still fits, given
  /// ~32 registers of overhead per thread.
  int max_threads_for(int accumulators) const {
    const int per_thread = std::min(max_registers_per_thread, accumulators + 32);
    return std::max(warp_size, std::min(max_threads_per_block, registers_per_block / per_thread));
  }
  std::string arch() const { return "sm_" + std::to_string(compute_capability); }
};

/// The limits of a compute capability (the CUDA programming guide's tables), for targets
/// named by -arch without the device at hand.
inline GpuTargetDesc gpu_target_for_capability(int capability) {
  GpuTargetDesc desc;
  desc.compute_capability = capability;
  desc.multiprocessors = capability >= 90 ? 132 : capability >= 80 ? 108 : 80;
  return desc;
}

}  // namespace tessel
