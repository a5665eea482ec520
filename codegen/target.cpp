#include <Halide.h>

#include "codegen/target.h"

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
    // Halide 14 accepts up to compute capability 8.6; newer GPUs JIT the PTX.
    return host.with_feature(Halide::Target::CUDA)
        .with_feature(Halide::Target::CUDACapability86)
        .to_string();
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
  const int threads = env ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency());
  desc.threads = std::max(1, threads);
  return desc;
}

Result<Target> parse_target(const std::string &text) {
  std::istringstream in(text);
  std::string word;
  Target target;
  if (!(in >> word)) return make_error("empty --target");
  if (word == "llvm" || word == "cpu" || word == "host") target.kind = Target::Kind::Host;
  else if (word == "cuda") target.kind = Target::Kind::Cuda;
  else return make_error("unknown target '" + word + "' (expected llvm or cuda)");
  while (in >> word) {
    if (word.rfind("-mcpu=", 0) == 0 && target.kind == Target::Kind::Host) target.mcpu = word.substr(6);
    else if (word.rfind("-arch=", 0) == 0 && target.kind == Target::Kind::Cuda) target.mcpu = word.substr(6);
    else return make_error("unknown target option '" + word + "' in '" + text + "'");
  }
  return target;
}

}  // namespace tessel
