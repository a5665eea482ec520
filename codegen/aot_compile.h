#pragma once
// Ahead-of-time compilation of a kernel pipeline into an object file and a C header, for
// deployment (light header: no Halide).
#include <memory>
#include <string>

#include "codegen/target.h"
#include "graph/result.h"

namespace tessel {

struct NodePipeline;

struct AotOutput {
  std::string object_path;  // <prefix>.o: the kernel, callable as `function_name`
  std::string header_path;  // <prefix>.h: its C declaration
  double compile_seconds = 0;
};

/// Compiles `pipeline` for `target` into <prefix>.o and <prefix>.h. The generated function
/// takes the pipeline's used input buffers in parameter order, then its output buffers
/// (halide_buffer_t *). A Halide or LLVM error is an error value.
Result<AotOutput> compile_to_object(const NodePipeline &pipeline, const Target &target, const std::string &prefix,
                                    const std::string &function_name);

}  // namespace tessel
