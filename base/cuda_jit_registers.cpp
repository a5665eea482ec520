#include "base/cuda_jit_registers.h"

#include <cstdlib>
#include <mutex>
#include <string>

namespace tessel {

void set_cuda_jit_register_cap(int registers) {
  static std::mutex mutex;
  static int current = 0;  // what this process last set (0: nothing yet)
  const int wanted = registers > 0 ? registers : kHalideCudaJitRegisters;
  std::lock_guard<std::mutex> lock(mutex);
  // A value the user set before tessel first touched the variable stays (Halide reads it
  // as a global override; measuring under one cap is what it is for).
  static const bool set_by_user = std::getenv("HL_CUDA_JIT_MAX_REGISTERS") != nullptr;
  if (set_by_user || wanted == current) return;
  ::setenv("HL_CUDA_JIT_MAX_REGISTERS", std::to_string(wanted).c_str(), 1);
  current = wanted;
}

}  // namespace tessel
