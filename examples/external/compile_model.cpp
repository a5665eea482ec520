// Compiles an ONNX model into a deploy artifact with tessel's libraries, runs the artifact on
// an input and compares the output with an expected one:
//
//   compile_model model.onnx out.tsl input.npy expected.npy
//
// Untuned (built-in schedules); `tessel tune` and a database would pick tuned ones.
#include <cmath>
#include <cstdio>

#include "compiler/artifact_compiler.h"
#include "deploy/module.h"
#include "executor/load_model.h"
#include "tensor/npy.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: compile_model model.onnx out.tsl input.npy expected.npy\n");
    return 2;
  }
  auto graph = tessel::load_optimized_model(argv[1], tessel::OptimizeOptions{});
  if (!graph.ok()) return std::fprintf(stderr, "error: %s\n", graph.error().message.c_str()), 1;
  tessel::ArtifactCompileOptions options;
  options.model_path = argv[1];
  auto compiled = tessel::compile_artifact(graph.value(), options, argv[2]);
  if (!compiled.ok()) return std::fprintf(stderr, "error: %s\n", compiled.error().message.c_str()), 1;
  auto input = tessel::read_npy(argv[3]);
  auto expected = tessel::read_npy(argv[4]);
  if (!input.ok() || !expected.ok()) return std::fprintf(stderr, "error: cannot read the .npy files\n"), 1;

  tessel::Module module = tessel::Module::load(argv[2]);
  const tessel::Tensor output = module.run({input.value()}).at(0);
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < output.numel(); ++i) {
    worst = std::max(worst, std::abs(output.element_as_double(i) - expected->element_as_double(i)));
    scale = std::max(scale, std::abs(expected->element_as_double(i)));
  }
  std::printf("%d kernel calls, max relative difference %.3g\n", compiled->kernel_steps, worst / scale);
  return worst / scale < 1e-4 ? 0 : 1;
}
