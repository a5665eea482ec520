#pragma once
// manifest.json of an artifact (ARTIFACT.md): what it is, what it needs, what it holds.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/fnv_hash.h"
#include "base/result.h"
#include "tensor/dtype.h"

namespace tessel::deploy {

inline constexpr int kArtifactFormatVersion = 1;

struct ArtifactFile {
  std::string path;     // relative to the artifact directory
  int64_t bytes = 0;
  std::string fnv1a64;  // 16 lower-case hex digits
};

struct ArtifactTensor {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
};

struct ArtifactTask {
  std::string kernel;        // symbol in kernels.so
  std::string ops;           // "Conv+Relu"
  std::string workload_key;
  int64_t flops = 0;
  bool tuned = false;        // "schedule": "tuned" | "default"
  std::string schedule_hash;               // tuned only
  std::optional<double> record_median_seconds;  // tuned only
};

struct ArtifactManifest {
  int format_version = kArtifactFormatVersion;
  std::string tessel_version;
  std::string target;         // "llvm"
  std::string halide_target;  // Halide's target string the kernels were compiled for
  std::string arch = "x86-64";
  std::vector<std::string> required_cpu_features;  // __builtin_cpu_supports names
  std::string model_path;
  std::string model_fnv1a64;
  std::string created_utc;
  int64_t arena_bytes = 0;
  std::vector<ArtifactTensor> inputs, outputs;
  std::vector<ArtifactTask> tasks;
  /// cuda artifacts: per kernel symbol, registers per thread the driver may give it when it
  /// compiles the kernel's PTX (base/cuda_jit_registers.h); a symbol not here gets Halide's 64.
  std::map<std::string, int> gpu_max_registers;
  ArtifactFile plan, weights, kernels;
  /// host.json: the nodes of the plan's host steps (host_program.h); only when it has some.
  std::optional<ArtifactFile> host;
};

bool operator==(const ArtifactFile &a, const ArtifactFile &b);
bool operator==(const ArtifactTensor &a, const ArtifactTensor &b);
bool operator==(const ArtifactTask &a, const ArtifactTask &b);
bool operator==(const ArtifactManifest &a, const ArtifactManifest &b);

/// Pretty-printed JSON (ARTIFACT.md's fields, "format": "tessel-artifact").
std::string to_json(const ArtifactManifest &manifest);

/// Parses manifest.json. Checks "format" and that format_version is one this runtime reads
/// (a different one is an error saying both numbers); unknown fields are ignored.
Result<ArtifactManifest> parse_manifest(const std::string &json);


}  // namespace tessel::deploy
