#pragma once
// The environment the peer libraries read when they load, before main() could set it.

#include <string>
#include <vector>

namespace tessel::bench {

/// OpenBLAS picks its kernels from OPENBLAS_CORETYPE when the library loads (0.3.21 does not know
/// Zen 5; SkylakeX is its fast choice there, the Haswell this VM's environment presets is ~2x
/// slower), and libgomp (oneDNN) reads OMP_NUM_THREADS at load too. So if OPENBLAS_CORETYPE or the
/// thread variables (OMP_NUM_THREADS, HL_NUM_THREADS, OPENBLAS_NUM_THREADS) differ from what is
/// asked, set them and exec this program again. Returns when the environment is right, or with a
/// warning if exec failed. An empty openblas_coretype leaves OpenBLAS to detect the CPU.
void ensure_bench_environment(char **argv, int threads, const std::string &openblas_coretype);

/// "NAME=value" of each variable above, for the report header.
std::vector<std::string> bench_environment_summary();

}  // namespace tessel::bench
