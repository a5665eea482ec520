#pragma once
// The machine a kernel is compiled for, as the CLI's --target names it.
#include <string>

#include "graph/result.h"
#include "schedule/cpu_target.h"

namespace tessel {

/// A compilation target: `llvm` (the host CPU, with its features), `llvm -mcpu=NAME`, or
/// `cuda` (accepted by the parser; CUDA code generation comes with the CUDA issue).
struct Target {
  enum class Kind { Host, Cuda };
  Kind kind = Kind::Host;
  std::string mcpu;  // empty: detect from the host

  std::string to_string() const;
  /// The Halide target string this maps to (e.g. "x86-64-linux-avx512_skylake").
  std::string halide_target() const;
};

/// What the CPU sketch rules need to know about a host target: vector width and register
/// count from its ISA features, threads from HL_NUM_THREADS or the machine.
CpuTargetDesc cpu_target_desc(const Target &target);

/// Parses `llvm`, `llvm -mcpu=skylake-avx512`, `cuda`, `cuda -arch=sm_86`.
Result<Target> parse_target(const std::string &text);

}  // namespace tessel
