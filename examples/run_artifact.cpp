// Runs a compiled tessel artifact with nothing but the deploy runtime (no Halide JIT, LLVM or
// ONNX in the process):
//
//   tessel_run_artifact model.tsl [--threads N] [--repeat N] [--input x.npy]...
//
// Each input is read from the next --input .npy file (tensor/npy.h) or, without
// one, filled with a fixed pattern. Prints every output's name, shape and first values, and
// the median latency of --repeat runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "deploy/module.h"
#include "tensor/npy.h"

using namespace tessel;

namespace {

// bfloat16 is the upper half of a float32; Tensor's element helpers do not cover it.
float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint16_t float_to_bfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);  // truncation is fine for a test pattern
}

// Deterministic values in a small range, so every dtype (bool, uint8 ...) can hold them.
void fill_pattern(Tensor &t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = dtype_is_float(t.dtype()) ? static_cast<double>((i * 37) % 101) / 101.0 - 0.5
                                               : static_cast<double>((i * 37) % 11);
    if (t.dtype() == DType::BFloat16) t.data_as<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v));
    else t.set_element_from_double(i, v);
  }
}

double element(const Tensor &t, int64_t i) {
  if (t.dtype() == DType::BFloat16) return bfloat16_to_float(t.data_as<uint16_t>()[i]);
  return t.element_as_double(i);
}

/// The .npy file as input `want`: its dtype and shape must match exactly.
bool read_input(const std::string &path, const TensorDesc &want, Tensor &out, std::string &error) {
  auto read = read_npy(path);
  if (!read.ok()) return error = read.error().message, false;
  if (read->dtype() != want.dtype || read->shape() != want.shape)
    return error = path + ": holds " + dtype_name(read->dtype()) + shape_to_string(read->shape()) + ", input '" +
                   want.name + "' is " + dtype_name(want.dtype) + shape_to_string(want.shape),
           false;
  out = std::move(read.value());
  return true;
}

int usage() {
  std::fprintf(stderr, "usage: tessel_run_artifact model.tsl [--threads N] [--repeat N] [--input x.npy]...\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  std::string artifact;
  ModuleOptions options;
  int repeat = 10;
  std::vector<std::string> npy_files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--threads" && has_value) options.threads = std::atoi(argv[++i]);
    else if (arg == "--repeat" && has_value) repeat = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--input" && has_value) npy_files.push_back(argv[++i]);
    else if (arg == "-h" || arg == "--help") return usage();
    else if (!arg.empty() && arg[0] != '-' && artifact.empty()) artifact = arg;
    else return usage();
  }
  if (artifact.empty()) return usage();

  try {
    Module module = Module::load(artifact, options);
    if (npy_files.size() > module.inputs().size()) {
      std::fprintf(stderr, "error: %zu --input files for %zu inputs\n", npy_files.size(), module.inputs().size());
      return 1;
    }
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < module.inputs().size(); ++i) {
      const TensorDesc &d = module.inputs()[i];
      Tensor t(d.dtype, d.shape);
      std::string error;
      if (i < npy_files.size()) {
        if (!read_input(npy_files[i], d, t, error)) {
          std::fprintf(stderr, "error: %s\n", error.c_str());
          return 1;
        }
      } else {
        fill_pattern(t);
      }
      std::printf("input  %s %s%s\n", d.name.c_str(), dtype_name(d.dtype).c_str(), shape_to_string(d.shape).c_str());
      inputs.push_back(t);
    }

    std::vector<Tensor> outputs = module.run(inputs);  // warm-up, and the values printed
    std::vector<double> seconds;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      module.run(inputs);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }

    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor &t = outputs[i];
      std::printf("output %s %s%s:", module.outputs()[i].name.c_str(), dtype_name(t.dtype()).c_str(),
                  shape_to_string(t.shape()).c_str());
      for (int64_t k = 0; k < std::min<int64_t>(t.numel(), 8); ++k) std::printf(" %.6g", element(t, k));
      std::printf(t.numel() > 8 ? " ...\n" : "\n");
    }
    std::sort(seconds.begin(), seconds.end());
    std::printf("kernels %d, arena %lld bytes, median latency %.3f ms over %d runs\n", module.kernel_count(),
                static_cast<long long>(module.arena_bytes()), seconds[seconds.size() / 2] * 1e3, repeat);
  } catch (const ModuleError &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
