#pragma once
// The CUDA device of this machine, read through the driver API (libcuda.so.1, opened at run
// time so that tessel builds and runs where no driver is installed).
#include <cstdint>
#include <string>

#include "base/result.h"
#include "codegen/target.h"
#include "search/gpu/gpu_target.h"

namespace tessel {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int capability_major = 0, capability_minor = 0;
  int multiprocessors = 0;
  int max_threads_per_block = 0;
  int64_t shared_bytes_per_block = 0;
  int registers_per_block = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0;  ///< e.g. 13000 for CUDA 13.0

  int capability() const { return capability_major * 10 + capability_minor; }
  /// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)".
  std::string describe() const;
  GpuTargetDesc target_desc() const;
};

/// The device `ordinal`, or an Error that says why there is none: no driver library, no
/// device, or the driver's error name and code. The driver is initialized in a short-lived
/// child process, never in this one (CUDA does not survive a later fork()), and the
/// answer is kept for the rest of the process.
Result<CudaDeviceInfo> query_cuda_device(int ordinal = 0);

/// `--target cuda` without an architecture means this machine's GPU. Tuning records are keyed
/// by the target's text, so tune, bench and compile must all read it as "cuda -arch=sm_90"
/// (on the first H100 run, compile looked up "cuda" and missed every record tune had written
/// under "cuda -arch=sm_90"). Fills in the device's architecture when the target names none
/// and a device answers; returns the device, or the reason there is none (the target is then
/// left as it is).
Result<CudaDeviceInfo> name_device_architecture(Target &target);

/// Makes the driver's functions visible to Halide's CUDA runtime in this process: that
/// runtime looks them up among the process's symbols before it tries to open "libcuda.so",
/// a name only CUDA's development files install (a container's driver mount has
/// libcuda.so.1 alone). Loads libcuda.so.1 globally, once; initializes nothing, so a later
/// fork() stays safe. An error when there is no driver.
Result<void> make_cuda_driver_visible();

}  // namespace tessel
