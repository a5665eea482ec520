#pragma once
// GPU code generation without a GPU: a kernel pipeline compiled for a CUDA target down to
// the PTX its host code would hand the driver, and that PTX assembled by CUDA's ptxas for
// a given architecture, which reports each kernel's registers, shared memory and spills
// (light header: no Halide).
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "codegen/target.h"

namespace tessel {

struct NodePipeline;

/// The PTX module of `pipeline`'s GPU kernels (Halide's CUDA backend through LLVM's NVPTX).
/// An error when Halide rejects the schedule or the pipeline has no GPU kernel.
Result<std::string> compile_to_ptx(const NodePipeline &pipeline, const Target &target);

/// The `.entry` kernel names of a PTX module, in order.
std::vector<std::string> ptx_kernel_names(const std::string &ptx);

/// What ptxas says about one kernel.
struct PtxasKernelReport {
  std::string name;
  int registers = 0;
  int64_t shared_bytes = 0;
  int64_t spill_store_bytes = 0, spill_load_bytes = 0;
};
struct PtxasReport {
  std::string arch;
  std::vector<PtxasKernelReport> kernels;
  std::string log;  ///< ptxas's own output
};

/// CUDA's ptxas: $CUDA_HOME/bin, /usr/local/cuda/bin or the PATH; nullopt when absent.
std::optional<std::string> find_ptxas();
/// Assembles `ptx` for `arch` (sm_90, ...) with ptxas -v. An error carries ptxas's message.
Result<PtxasReport> assemble_ptx(const std::string &ptxas, const std::string &ptx, const std::string &arch);

}  // namespace tessel
