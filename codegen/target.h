#pragma once
// The machine a kernel is compiled for, as the CLI's --target names it.
#include <string>

#include "base/result.h"
#include "search/cpu/cpu_target.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

/// A compilation target: `llvm` (the host CPU, with its features), `llvm -mcpu=NAME`,
/// `cuda` (the GPU of this machine) or `cuda -arch=sm_XY`.
struct Target {
  enum class Kind { Host, Cuda };
  Kind kind = Kind::Host;
  std::string mcpu;  // llvm: CPU name; cuda: sm_XY. Empty: detect from the machine
  /// Threads of a host kernel's parallel loops, which the CPU sketch rules split loops for;
  /// 0: HL_NUM_THREADS or all cores. Not part of to_string (records are keyed by the ISA).
  int threads = 0;

  std::string to_string() const;
  /// The Halide target string this maps to (e.g. "x86-64-linux-avx512_skylake").
  std::string halide_target() const;
};

/// What the CPU sketch rules need to know about a host target: vector width and register
/// count from its ISA features, threads from the target, else HL_NUM_THREADS or the machine.
CpuTargetDesc cpu_target_desc(const Target &target);

/// The compute capability a CUDA target is for: its -arch, else the device's, else 86 when
/// no device is at hand (the highest Halide 14 generates code for).
int cuda_capability(const Target &target);
/// The highest compute capability Halide 14 generates PTX for that is <= `capability`
/// (newer GPUs JIT-compile that PTX in the driver).
int halide_cuda_capability(int capability);
/// The GPU limits schedules for a CUDA target must respect: the device's when it is the
/// one the target names, else those of the target's compute capability.
GpuTargetDesc gpu_target_desc(const Target &target);

/// Parses `llvm`, `llvm -mcpu=skylake-avx512`, `cuda`, `cuda -arch=sm_86`.
Result<Target> parse_target(const std::string &text);

}  // namespace tessel
