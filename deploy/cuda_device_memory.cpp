#include "deploy/cuda_device_memory.h"

#include <dlfcn.h>

#include <algorithm>
#include <type_traits>

namespace tessel::deploy {

namespace {
constexpr int64_t kRowBytes = int64_t{1} << 20;    // the allocation is described as rows of 1 MiB
constexpr int64_t kChunkBytes = int64_t{1} << 30;  // copies go in pieces Halide's int32 extents hold
}  // namespace

struct CudaDeviceMemory::Api {
  const halide_device_interface_t *(*cuda_interface)() = nullptr;
  int (*wrap)(void *, halide_buffer_t *, uint64_t) = nullptr;
  int (*detach)(void *, halide_buffer_t *) = nullptr;
  int (*device_malloc)(void *, halide_buffer_t *, const halide_device_interface_t *) = nullptr;
  int (*device_free)(void *, halide_buffer_t *) = nullptr;
  int (*copy_to_device)(void *, halide_buffer_t *, const halide_device_interface_t *) = nullptr;
  int (*copy_to_host)(void *, halide_buffer_t *) = nullptr;
  int (*buffer_copy)(void *, halide_buffer_t *, const halide_device_interface_t *, halide_buffer_t *) = nullptr;
  int (*device_sync)(void *, halide_buffer_t *) = nullptr;
  int (*reuse_allocations)(void *, bool) = nullptr;
  const halide_device_interface_t *interface = nullptr;
};

Error CudaDeviceMemory::failure(const std::string &what, int code) const {
  std::string why = last_error_ ? last_error_() : std::string();
  if (why.empty()) why = "Halide error code " + std::to_string(code);
  return make_error(what + ": " + why);
}

Result<std::unique_ptr<CudaDeviceMemory>> CudaDeviceMemory::create(void *library, int64_t bytes,
                                                                   std::string (*last_error)()) {
  std::unique_ptr<CudaDeviceMemory> memory(new CudaDeviceMemory());
  memory->last_error_ = last_error;
  memory->api_ = std::make_unique<Api>();
  Api &api = *memory->api_;
  std::string missing;
  auto find = [&](auto &slot, const char *name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(library, name));
    if (!slot) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  find(api.cuda_interface, "halide_cuda_device_interface");
  find(api.wrap, "halide_cuda_wrap_device_ptr");
  find(api.detach, "halide_cuda_detach_device_ptr");
  find(api.device_malloc, "halide_device_malloc");
  find(api.device_free, "halide_device_free");
  find(api.copy_to_device, "halide_copy_to_device");
  find(api.copy_to_host, "halide_copy_to_host");
  find(api.buffer_copy, "halide_buffer_copy");
  find(api.device_sync, "halide_device_sync");
  find(api.reuse_allocations, "halide_reuse_device_allocations");
  if (!missing.empty())
    return make_error(ErrorKind::InvalidInput,
                      "kernels.so lacks Halide's CUDA runtime (" + missing + "): it was not compiled for cuda");

  // Halide's runtime looks the driver's functions up in the process before it tries to
  // open "libcuda.so" (a name only CUDA's development files install): load the driver's
  // own soname globally first.
  dlerror();
  if (!::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
    const char *why = dlerror();
    return make_error(ErrorKind::Unsupported,
                      std::string("this artifact runs on an NVIDIA GPU, and the CUDA driver cannot be loaded here (") +
                      (why ? why : "libcuda.so.1 not found") + ")");
  }
  api.interface = api.cuda_interface();
  // Temporaries a kernel allocates on the device are kept for the next run, not freed.
  api.reuse_allocations(nullptr, true);

  const int64_t rows = std::max<int64_t>(1, (bytes + kRowBytes - 1) / kRowBytes);
  memory->allocation_dims_[0] = halide_dimension_t(0, static_cast<int32_t>(kRowBytes), 1);
  memory->allocation_dims_[1] = halide_dimension_t(0, static_cast<int32_t>(rows), static_cast<int32_t>(kRowBytes));
  halide_buffer_t &a = memory->allocation_;
  a.type = halide_type_t(halide_type_uint, 8);
  a.dimensions = 2;
  a.dim = memory->allocation_dims_;
  if (int rc = api.device_malloc(nullptr, &a, api.interface); rc != 0)
    return memory->failure("cannot allocate " + std::to_string(rows) + " MiB on the GPU (weights, arena, inputs and outputs)",
                           rc);
  memory->base_ = a.device;
  return memory;
}

CudaDeviceMemory::~CudaDeviceMemory() {
  if (api_ && allocation_.device) api_->device_free(nullptr, &allocation_);
}

Result<void> CudaDeviceMemory::wrap(halide_buffer_t &buffer, uint64_t address) {
  buffer.device = 0;
  buffer.device_interface = nullptr;
  if (int rc = api_->wrap(nullptr, &buffer, address); rc != 0) return failure("cannot wrap a device address", rc);
  return {};
}

void CudaDeviceMemory::detach(halide_buffer_t &buffer) {
  if (buffer.device) api_->detach(nullptr, &buffer);
}

template <typename Action>
Result<void> CudaDeviceMemory::in_chunks(uint64_t address, void *host, int64_t bytes, const char *what, Action action) {
  for (int64_t done = 0; done < bytes; done += kChunkBytes) {
    halide_dimension_t dim(0, static_cast<int32_t>(std::min(kChunkBytes, bytes - done)), 1);
    halide_buffer_t b{};
    b.type = halide_type_t(halide_type_uint, 8);
    b.dimensions = 1;
    b.dim = &dim;
    b.host = host ? static_cast<uint8_t *>(host) + done : nullptr;
    if (Result<void> r = wrap(b, address + static_cast<uint64_t>(done)); !r.ok()) return r;
    const int rc = action(b, static_cast<uint64_t>(done));
    detach(b);
    if (rc != 0) return failure(what, rc);
  }
  return {};
}

Result<void> CudaDeviceMemory::upload(const void *host, uint64_t address, int64_t bytes) {
  auto to_device = [&](halide_buffer_t &b, uint64_t) {
    b.flags = halide_buffer_flag_host_dirty;
    return api_->copy_to_device(nullptr, &b, api_->interface);
  };
  return in_chunks(address, const_cast<void *>(host), bytes, "a copy from the host to the GPU failed", to_device);
}

Result<void> CudaDeviceMemory::download(uint64_t address, void *host, int64_t bytes) {
  return in_chunks(address, host, bytes, "a copy from the GPU to the host failed", [&](halide_buffer_t &b, uint64_t) {
    b.flags = halide_buffer_flag_device_dirty;
    return api_->copy_to_host(nullptr, &b);
  });
}

Result<void> CudaDeviceMemory::copy(uint64_t source, uint64_t destination, int64_t bytes) {
  if (source == destination) return {};
  return in_chunks(destination, nullptr, bytes, "a copy on the GPU failed", [&](halide_buffer_t &to, uint64_t done) {
    halide_buffer_t from = to;
    from.device = 0;
    from.device_interface = nullptr;
    if (!wrap(from, source + done).ok()) return -1;
    const int rc = api_->buffer_copy(nullptr, &from, api_->interface, &to);
    detach(from);
    return rc;
  });
}

Result<void> CudaDeviceMemory::synchronize() {
  if (int rc = api_->device_sync(nullptr, &allocation_); rc != 0) return failure("the GPU failed", rc);
  return {};
}

}  // namespace tessel::deploy
