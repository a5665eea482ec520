#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "base/cuda_jit_registers.h"

using namespace tessel;

TEST_CASE("the CUDA JIT register cap goes into the variable Halide's runtime reads", "[base]") {
  auto cap = [] {
    const char *v = std::getenv("HL_CUDA_JIT_MAX_REGISTERS");
    return v ? std::string(v) : std::string("unset");
  };
  if (std::getenv("HL_CUDA_JIT_MAX_REGISTERS")) {
    // Set before this process touched it: the user's value holds.
    const std::string before = cap();
    set_cuda_jit_register_cap(200);
    CHECK(cap() == before);
    return;
  }
  set_cuda_jit_register_cap(255);
  CHECK(cap() == "255");
  set_cuda_jit_register_cap(128);
  CHECK(cap() == "128");
  set_cuda_jit_register_cap(0);  // unknown: Halide's own
  CHECK(cap() == std::to_string(kHalideCudaJitRegisters));
}
