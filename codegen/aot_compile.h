#pragma once
// Ahead-of-time compilation of a kernel pipeline into an object file and a C header, for
// deployment (light header: no Halide).
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "codegen/target.h"

namespace tessel {

struct NodePipeline;

struct AotOutput {
  std::string object_path;  // <prefix>.o: the kernel, callable as `function_name`
  std::string header_path;  // <prefix>.h: its C declaration
  double compile_seconds = 0;
  /// The function's buffer arguments: these pipeline parameters (indices into the
  /// pipeline's inputs), then these outputs (indices into the node or group outputs).
  std::vector<int> used_inputs;
  std::vector<int> computed_outputs;
  /// GPU kernels: registers per thread the driver may give them (0: Halide's cap of 64).
  int gpu_max_registers = 0;
};

/// Compiles `pipeline` for `target` into <prefix>.o and <prefix>.h. The generated function
/// takes the pipeline's used input buffers in parameter order, then its output buffers
/// (halide_buffer_t *). A Halide or LLVM error is an error value.
Result<AotOutput> compile_to_object(const NodePipeline &pipeline, const Target &target, const std::string &prefix,
                                    const std::string &function_name);

/// Halide's runtime for `target` as one object file: the kernels compiled above leave it
/// out, so a library of them links exactly one copy.
Result<void> compile_runtime_object(const Target &target, const std::string &object_path);

}  // namespace tessel
