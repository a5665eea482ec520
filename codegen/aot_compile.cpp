#include <Halide.h>

#include "codegen/aot_compile.h"

#include <cctype>
#include <chrono>
#include <filesystem>

#include "codegen/halide_errors.h"
#include "compute/node_pipeline_internal.h"

namespace tessel {

Result<AotOutput> compile_to_object(const NodePipeline &pipeline, const Target &target, const std::string &prefix,
                                    const std::string &function_name) {
  install_halide_handlers();
  bool identifier = !function_name.empty() && !std::isdigit(static_cast<unsigned char>(function_name[0]));
  for (char c : function_name) identifier &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  if (!identifier)
    return make_error(ErrorKind::InvalidInput, "kernel name '" + function_name + "' is not a C identifier");
  std::vector<Halide::Argument> arguments;
  AotOutput out;
  out.gpu_max_registers = pipeline.gpu_max_registers;
  for (size_t i = 0; i < pipeline.parameters.size(); ++i)
    if (pipeline.parameter_used[i]) {
      arguments.push_back(pipeline.parameters[i]);
      out.used_inputs.push_back(static_cast<int>(i));
    }
  out.computed_outputs = pipeline.computed_outputs;
  out.object_path = prefix + ".o";
  out.header_path = prefix + ".h";
  try {
    const auto start = std::chrono::steady_clock::now();
    Halide::Target halide_target(target.halide_target());
    // No runtime in the object: a model's kernels share one runtime when linked together.
    halide_target = halide_target.with_feature(Halide::Target::NoRuntime);
    Halide::Pipeline p = pipeline.pipeline;
    p.compile_to({{Halide::OutputFileType::object, out.object_path}, {Halide::OutputFileType::c_header, out.header_path}},
                 arguments, function_name, halide_target);
    out.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const Halide::Error &e) {
    std::error_code ignored;
    std::filesystem::remove(out.object_path, ignored);
    std::filesystem::remove(out.header_path, ignored);
    return make_error(ErrorKind::Internal, "ahead-of-time compilation of '" + function_name + "' failed: " + e.what());
  }
  return out;
}

Result<void> compile_runtime_object(const Target &target, const std::string &object_path) {
  install_halide_handlers();
  try {
    Halide::compile_standalone_runtime(object_path, Halide::Target(target.halide_target()));
  } catch (const Halide::Error &e) {
    std::error_code ignored;
    std::filesystem::remove(object_path, ignored);
    return make_error(ErrorKind::Internal, std::string("compiling Halide's runtime failed: ") + e.what());
  }
  return {};
}

}  // namespace tessel
