#pragma once
// Peer: Halide 14's Adams2019 autoscheduler on plain (unscheduled) Halide algorithms.
// No Halide.h here: only the .cpp needs it.
#include <string>

#include "peers/kernel_row.h"
#include "peers/problems.h"

namespace tessel::bench {

struct Adams2019Options {
  int threads = 2;  // MachineParams parallelism; the JIT thread pool reads HL_NUM_THREADS
  std::string plugin_path = "/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_adams2019.so";
  std::string halide_target;  // Halide target string; empty: adams2019_default_target()
  std::string schedule_dir;   // if set, the generated schedule source is written there
};

/// The host target without avx512_sapphirerapids, the rule of tessel::Target::halide_target()
/// (codegen/target.cpp): Halide 14 reports it on Zen 4/5, which lack the AVX512-FP16 it implies.
/// Kept here so the peers build without tessel's libraries.
std::string adams2019_default_target();

/// Each autoschedules its pipeline (MachineParams(threads, 16 MiB, 40)), JIT-compiles it and
/// returns the row; setup says how long both took. If the plugin cannot be loaded or Halide
/// fails, the row is unavailable with the reason.
KernelRow make_adams2019_matmul(const MatmulProblem &problem, const Adams2019Options &options);
KernelRow make_adams2019_conv(const ConvProblem &problem, const Adams2019Options &options);

}  // namespace tessel::bench
