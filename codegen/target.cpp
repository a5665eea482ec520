#include <Halide.h>

#include "codegen/target.h"

#include "codegen/cuda_device.h"

#include <cstdlib>
#include <sstream>
#include <thread>

namespace tessel {

std::string Target::to_string() const {
  std::string s = kind == Kind::Cuda ? "cuda" : "llvm";
  if (!mcpu.empty()) s += (kind == Kind::Cuda ? " -arch=" : " -mcpu=") + mcpu;
  return s;
}

std::string Target::halide_target() const {
  // Halide 14 reports avx512_sapphirerapids on Zen 4/5, which implies AVX512-FP16 they
  // lack; float16 kernels then die on an illegal instruction. Drop it: the remaining
  // avx512_cannonlake features are what these CPUs have.
  Halide::Target host = Halide::get_host_target().without_feature(Halide::Target::AVX512_SapphireRapids);
  if (kind == Kind::Cuda) {
    // Halide 14 knows capabilities up to 8.6; newer GPUs JIT-compile the PTX it writes.
    static const std::pair<int, Halide::Target::Feature> features[] = {
        {30, Halide::Target::CUDACapability30}, {32, Halide::Target::CUDACapability32},
        {35, Halide::Target::CUDACapability35}, {50, Halide::Target::CUDACapability50},
        {61, Halide::Target::CUDACapability61}, {70, Halide::Target::CUDACapability70},
        {75, Halide::Target::CUDACapability75}, {80, Halide::Target::CUDACapability80},
        {86, Halide::Target::CUDACapability86}};
    const int capability = halide_cuda_capability(cuda_capability(*this));
    Halide::Target t = host.with_feature(Halide::Target::CUDA);
    for (const auto &[cc, feature] : features)
      if (cc == capability) t = t.with_feature(feature);
    return t.to_string();
  }
  if (mcpu == "skylake-avx512" || mcpu == "avx512") {
    Halide::Target t("x86-64-linux-avx512_skylake");
    return t.to_string();
  }
  if (mcpu == "haswell" || mcpu == "avx2")
    return Halide::Target("x86-64-linux-avx2-fma-f16c-sse41").to_string();
  return host.to_string();
}

CpuTargetDesc cpu_target_desc(const Target &target) {
  const Halide::Target t(target.halide_target());
  CpuTargetDesc desc;
  if (t.has_feature(Halide::Target::AVX512)) desc = avx512_target();
  else if (t.has_feature(Halide::Target::AVX2)) desc = avx2_target();
  else desc = CpuTargetDesc{2, 128, 16};
  const char *env = std::getenv("HL_NUM_THREADS");
  const int threads = target.threads > 0 ? target.threads
                      : env              ? std::atoi(env)
                                         : static_cast<int>(std::thread::hardware_concurrency());
  desc.threads = std::max(1, threads);
  return desc;
}

int cuda_capability(const Target &target) {
  if (target.mcpu.rfind("sm_", 0) == 0) return std::atoi(target.mcpu.c_str() + 3);
  auto device = query_cuda_device();
  return device.ok() ? device->capability() : 86;
}

int halide_cuda_capability(int capability) {
  int best = 30;
  for (int cc : {30, 32, 35, 50, 61, 70, 75, 80, 86})
    if (cc <= capability) best = cc;
  return best;
}

GpuTargetDesc gpu_target_desc(const Target &target) {
  const int capability = cuda_capability(target);
  auto device = query_cuda_device();
  if (device.ok() && device->capability() == capability) return device->target_desc();
  return gpu_target_for_capability(capability);
}

Result<Target> parse_target(const std::string &text) {
  std::istringstream in(text);
  std::string word;
  Target target;
  if (!(in >> word)) return make_error(ErrorKind::InvalidInput, "empty --target");
  if (word == "llvm" || word == "cpu" || word == "host") target.kind = Target::Kind::Host;
  else if (word == "cuda") target.kind = Target::Kind::Cuda;
  else return make_error(ErrorKind::InvalidInput, "unknown target '" + word + "' (expected llvm or cuda)");
  while (in >> word) {
    if (word.rfind("-mcpu=", 0) == 0 && target.kind == Target::Kind::Host) target.mcpu = word.substr(6);
    else if (word.rfind("-arch=", 0) == 0 && target.kind == Target::Kind::Cuda) {
      target.mcpu = word.substr(6);
      const bool digits = target.mcpu.size() >= 5 && target.mcpu.find_first_not_of("0123456789", 3) == std::string::npos;
      if (target.mcpu.rfind("sm_", 0) != 0 || !digits || std::atoi(target.mcpu.c_str() + 3) < 30)
        return make_error(ErrorKind::InvalidInput,
                          "bad CUDA architecture '" + target.mcpu + "' (expected sm_XY, XY >= 30, e.g. sm_86 or sm_90)");
    }
    else return make_error(ErrorKind::InvalidInput, "unknown target option '" + word + "' in '" + text + "'");
  }
  return target;
}

}  // namespace tessel
