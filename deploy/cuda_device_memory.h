#pragma once
// The GPU memory of a cuda artifact: one device allocation that holds the weights (uploaded
// once, at load), the arena, and a slot per model input and output. It is made, filled and
// read through the Halide runtime inside the artifact's kernels.so, whose CUDA module owns
// the context the kernels launch in: this runtime links no CUDA library of its own.
//
// Kernel arguments are halide_buffer_t's that wrap addresses inside the allocation
// (halide_cuda_wrap_device_ptr) with no host memory, so a model's kernels hand their
// intermediate tensors to each other on the device and nothing crosses PCIe but the inputs
// and outputs of a run.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "HalideRuntime.h"
#include "base/result.h"

namespace tessel::deploy {

class CudaDeviceMemory {
 public:
  /// Loads the CUDA driver (libcuda.so.1) into the process, finds the Halide runtime entry
  /// points in `library` (kernels.so's dlopen handle) and allocates `bytes` on the GPU
  /// (ordinal HL_GPU_DEVICE, else 0). Errors say what is missing: the driver, a device, or
  /// the runtime's entry points (a kernels.so not compiled for cuda). `last_error` returns
  /// what Halide's error handler last received, for the messages.
  static Result<std::unique_ptr<CudaDeviceMemory>> create(void *library, int64_t bytes, std::string (*last_error)());
  ~CudaDeviceMemory();
  CudaDeviceMemory(const CudaDeviceMemory &) = delete;
  CudaDeviceMemory &operator=(const CudaDeviceMemory &) = delete;

  /// The device address of byte `offset` of the allocation.
  uint64_t address(int64_t offset) const { return base_ + static_cast<uint64_t>(offset); }

  /// Makes `buffer` (type and dims set, host null) refer to device address `address`.
  Result<void> wrap(halide_buffer_t &buffer, uint64_t address);
  /// Forgets the wrapped address again (before the allocation goes away).
  void detach(halide_buffer_t &buffer);

  /// Host to device, device to host and device to device copies of `bytes` bytes.
  Result<void> upload(const void *host, uint64_t address, int64_t bytes);
  Result<void> download(uint64_t address, void *host, int64_t bytes);
  Result<void> copy(uint64_t source, uint64_t destination, int64_t bytes);
  /// Waits until every kernel launched so far has finished.
  Result<void> synchronize();

 private:
  CudaDeviceMemory() = default;
  /// `bytes` at `address` as 1-D byte buffers of at most 1 GiB each, with `host` as their
  /// host side (may be null), handed to `action` one after the other; a failure is
  /// reported as `what`.
  template <typename Action>
  Result<void> in_chunks(uint64_t address, void *host, int64_t bytes, const char *what, Action action);
  Error failure(const std::string &what, int code) const;

  struct Api;
  std::unique_ptr<Api> api_;
  halide_buffer_t allocation_{};
  halide_dimension_t allocation_dims_[2] = {};
  uint64_t base_ = 0;
  std::string (*last_error_)() = nullptr;
};

}  // namespace tessel::deploy
