#include "codegen/cuda_device.h"

#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include "base/child_process.h"

namespace tessel {
namespace {

// The few driver API entry points used here, with the driver's C signatures (cuda.h is not
// needed to build: every machine may lack it).
using CuResult = int;
using CuDevice = int;
constexpr CuResult kCudaSuccess = 0;
constexpr int kAttrMaxThreadsPerBlock = 1;
constexpr int kAttrSharedPerBlock = 8;
constexpr int kAttrRegistersPerBlock = 12;
constexpr int kAttrMultiprocessors = 16;
constexpr int kAttrCapabilityMajor = 75;
constexpr int kAttrCapabilityMinor = 76;

struct Driver {
  void *library = nullptr;
  CuResult (*init)(unsigned) = nullptr;
  CuResult (*driver_version)(int *) = nullptr;
  CuResult (*device_count)(int *) = nullptr;
  CuResult (*device_get)(CuDevice *, int) = nullptr;
  CuResult (*device_name)(char *, int, CuDevice) = nullptr;
  CuResult (*attribute)(int *, int, CuDevice) = nullptr;
  CuResult (*total_memory)(size_t *, CuDevice) = nullptr;
  CuResult (*error_name)(CuResult, const char **) = nullptr;

  std::string error(CuResult code) const {
    const char *name = nullptr;
    if (error_name) error_name(code, &name);
    return std::string(name ? name : "CUDA error") + " (" + std::to_string(code) + ")";
  }
};

template <typename F>
bool load(void *library, const char *symbol, F &f) {
  f = reinterpret_cast<F>(dlsym(library, symbol));
  return f != nullptr;
}

Result<Driver> open_driver() {
  Driver d;
  d.library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d.library)
    return make_error(ErrorKind::Unsupported, "no CUDA driver on this machine (libcuda.so.1 could not be loaded)");
  const bool ok = load(d.library, "cuInit", d.init) && load(d.library, "cuDriverGetVersion", d.driver_version) &&
                  load(d.library, "cuDeviceGetCount", d.device_count) && load(d.library, "cuDeviceGet", d.device_get) &&
                  load(d.library, "cuDeviceGetName", d.device_name) &&
                  load(d.library, "cuDeviceGetAttribute", d.attribute) &&
                  load(d.library, "cuDeviceTotalMem_v2", d.total_memory);
  load(d.library, "cuGetErrorName", d.error_name);
  if (!ok)
    return make_error(ErrorKind::Unsupported, "the CUDA driver library lacks a driver API entry point tessel needs");
  return d;
}

}  // namespace

std::string CudaDeviceInfo::describe() const {
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(memory_bytes) / (1024.0 * 1024 * 1024));
  return name + " (sm_" + std::to_string(capability()) + ", " + std::to_string(multiprocessors) + " SMs, " + memory + ")";
}

GpuTargetDesc CudaDeviceInfo::target_desc() const {
  GpuTargetDesc desc = gpu_target_for_capability(capability());
  desc.multiprocessors = multiprocessors;
  desc.max_threads_per_block = max_threads_per_block;
  desc.shared_bytes_per_block = shared_bytes_per_block;
  desc.registers_per_block = registers_per_block;
  return desc;
}

namespace {

/// The query itself: initializes the driver in the calling process.
Result<CudaDeviceInfo> query_in_this_process(int ordinal) {
  TESSEL_TRY(const Driver d, open_driver());
  if (CuResult r = d.init(0); r != kCudaSuccess)
    return make_error(ErrorKind::Unsupported, "cuInit failed: " + d.error(r) + "; no usable CUDA device");
  int count = 0;
  if (CuResult r = d.device_count(&count); r != kCudaSuccess)
    return make_error(ErrorKind::Internal, "cuDeviceGetCount failed: " + d.error(r));
  if (ordinal < 0 || ordinal >= count)
    return make_error(ErrorKind::NotFound,
                      "CUDA device " + std::to_string(ordinal) + " does not exist (" + std::to_string(count) +
                      " device(s) found)");
  CuDevice device = 0;
  if (CuResult r = d.device_get(&device, ordinal); r != kCudaSuccess)
    return make_error(ErrorKind::Internal, "cuDeviceGet failed: " + d.error(r));
  CudaDeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  d.device_name(name, sizeof name - 1, device);
  info.name = name;
  int value = 0;
  auto attribute = [&](int which) {
    value = 0;
    d.attribute(&value, which, device);
    return value;
  };
  info.capability_major = attribute(kAttrCapabilityMajor);
  info.capability_minor = attribute(kAttrCapabilityMinor);
  info.multiprocessors = attribute(kAttrMultiprocessors);
  info.max_threads_per_block = attribute(kAttrMaxThreadsPerBlock);
  info.shared_bytes_per_block = attribute(kAttrSharedPerBlock);
  info.registers_per_block = attribute(kAttrRegistersPerBlock);
  size_t bytes = 0;
  d.total_memory(&bytes, device);
  info.memory_bytes = static_cast<int64_t>(bytes);
  d.driver_version(&info.driver_version);
  return info;
}

/// One line: "ok ordinal major minor sms threads shared registers memory driver name", or
/// "error message".
std::string encode(const Result<CudaDeviceInfo> &r) {
  if (!r.ok()) return "error " + r.error().message;
  const CudaDeviceInfo &i = r.value();
  std::ostringstream out;
  out << "ok " << i.ordinal << ' ' << i.capability_major << ' ' << i.capability_minor << ' ' << i.multiprocessors << ' '
      << i.max_threads_per_block << ' ' << i.shared_bytes_per_block << ' ' << i.registers_per_block << ' '
      << i.memory_bytes << ' ' << i.driver_version << ' ' << i.name;
  return out.str();
}

Result<CudaDeviceInfo> decode(const std::string &line) {
  std::istringstream in(line);
  std::string status;
  in >> status;
  std::string rest;
  std::getline(in, rest);
  if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
  if (status != "ok") return make_error(status == "error" ? rest : "the CUDA device query process reported nothing");
  CudaDeviceInfo i;
  std::istringstream fields(rest);
  fields >> i.ordinal >> i.capability_major >> i.capability_minor >> i.multiprocessors >> i.max_threads_per_block >>
      i.shared_bytes_per_block >> i.registers_per_block >> i.memory_bytes >> i.driver_version;
  std::getline(fields, i.name);
  if (!i.name.empty() && i.name[0] == ' ') i.name.erase(0, 1);
  return i;
}

/// Long enough for a driver that initializes many devices without persistence mode.
constexpr double kQueryTimeoutSeconds = 120;

/// The query in a child process: CUDA does not survive a fork once the driver is
/// initialized, and the tuner forks its measuring workers after asking for the device.
Result<CudaDeviceInfo> query_in_child(int ordinal) {
  TESSEL_TRY(const ChildOutcome child,
             run_in_child([ordinal] { return encode(query_in_this_process(ordinal)); }, kQueryTimeoutSeconds));
  if (child.exit.kind == ChildExit::Kind::TimedOut)
    return make_error(ErrorKind::Timeout, "the CUDA device query took more than " +
                                              std::to_string(static_cast<int>(kQueryTimeoutSeconds)) + " s");
  if (!child.exit.finished())
    return make_error(ErrorKind::Crash, "the CUDA device query process failed: " + child.exit.describe());
  return decode(child.output);
}

}  // namespace

Result<CudaDeviceInfo> query_cuda_device(int ordinal) {
  // Asked once per ordinal and process (targets ask on every compile).
  static std::mutex mutex;
  static std::map<int, Result<CudaDeviceInfo>> answers;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = answers.find(ordinal);
  if (it == answers.end()) it = answers.emplace(ordinal, query_in_child(ordinal)).first;
  return it->second;
}

Result<void> make_cuda_driver_visible() {
  static const bool loaded = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr;
  if (!loaded)
    return make_error(ErrorKind::Unsupported, "no CUDA driver on this machine (libcuda.so.1 could not be loaded)");
  return {};
}

Result<CudaDeviceInfo> name_device_architecture(Target &target) {
  auto device = query_cuda_device();
  if (device.ok() && target.kind == Target::Kind::Cuda && target.mcpu.empty())
    target.mcpu = "sm_" + std::to_string(device->capability());
  return device;
}

}  // namespace tessel
