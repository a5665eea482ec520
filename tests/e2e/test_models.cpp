// Whole models exported from PyTorch (scripts/export_models.py) must match PyTorch's outputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "compiler/artifact_compiler.h"
#include "deploy/module.h"
#include "executor/graph_executor.h"
#include "executor/optimize_graph.h"
#include "graph/fusion/fuse.h"
#include "graph/onnx/onnx_import.h"
#include "graph/passes/winograd_conv.h"
#include "tensor/npy.h"

using namespace tessel;

namespace {

double relative_l2(const Tensor &got, const Tensor &want) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.element_as_double(i), w = want.element_as_double(i);
    diff += (g - w) * (g - w);
    norm += w * w;
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

/// Runs the exported model and checks it against PyTorch; returns the executor used.
std::shared_ptr<GraphExecutor> check_model(const std::string &name, bool optimize, bool fuse = true) {
  const std::string dir = TESSEL_MODELS_DIR;
  const std::string base = dir + "/" + name;
  if (!std::ifstream(base + ".onnx")) FAIL("missing " << base << ".onnx; run scripts/export_models.py " << dir);
  auto graph = load_model(base + ".onnx");
  REQUIRE(graph.ok());
  if (optimize) {
    auto optimized = optimize_graph(graph.value());
    INFO((optimized.ok() ? std::string() : optimized.error().message));
    REQUIRE(optimized.ok());
    graph = std::move(optimized);
  }
  auto input = read_npy(base + ".input.npy");
  auto expected = read_npy(base + ".expected.npy");
  REQUIRE(input.ok());
  REQUIRE(expected.ok());
  ExecutorOptions options;
  options.fuse = fuse;
  auto executor = std::make_shared<GraphExecutor>(std::make_shared<const Graph>(graph.value()), Target{}, options);
  auto outputs = executor->run({input.value()});
  // A second run reuses the arena: results must not change.
  auto again = executor->run({input.value()});
  REQUIRE(again.ok());
  INFO((outputs.ok() ? std::string() : outputs.error().message));
  REQUIRE(outputs.ok());
  REQUIRE(outputs->at(0).shape() == expected->shape());
  const double err = relative_l2(outputs->at(0), expected.value());
  std::printf("%s%s%s: relative L2 error vs PyTorch = %.3g, %d kernel launches for %zu nodes\n", name.c_str(),
              optimize ? " (optimized)" : "", fuse ? " (fused)" : "", err, executor->last_kernel_launches(),
              graph->nodes.size());
  CHECK(err < 1e-4);
  CHECK(relative_l2(again->at(0), outputs->at(0)) == 0);
  return executor;
}

/// How many groups of the executor run a kernel (not views or shape queries on the host).
int kernel_groups(const GraphExecutor &executor) {
  int count = 0;
  for (const FusedGroup &group : executor.groups())
    if (group.nodes.size() > 1 || !runs_on_host(executor.graph().nodes[group.nodes[0]].op_type)) ++count;
  return count;
}

/// Compiles the optimized model into an artifact, runs it through the deploy runtime and
/// checks it against PyTorch.
void check_artifact(const std::string &name) {
  const std::string base = std::string(TESSEL_MODELS_DIR) + "/" + name;
  auto graph = load_model(base + ".onnx");
  REQUIRE(graph.ok());
  auto optimized = optimize_graph(graph.value());
  REQUIRE(optimized.ok());
  const std::string artifact = (std::filesystem::temp_directory_path() /
                                ("tessel_e2e_" + name + "_" + std::to_string(::getpid()) + ".tsl")).string();
  ArtifactCompileOptions options;
  options.model_path = base + ".onnx";
  auto compiled = compile_artifact(optimized.value(), options, artifact);
  INFO((compiled.ok() ? std::string() : compiled.error().message));
  REQUIRE(compiled.ok());
  auto input = read_npy(base + ".input.npy");
  auto expected = read_npy(base + ".expected.npy");
  REQUIRE(input.ok());
  REQUIRE(expected.ok());
  Module module = Module::load(artifact);
  const std::vector<Tensor> outputs = module.run({input.value()});
  std::filesystem::remove_all(artifact);
  const double err = relative_l2(outputs.at(0), expected.value());
  std::printf("%s artifact: %d kernel calls, arena %.2f MB, relative L2 error vs PyTorch = %.3g\n", name.c_str(),
              module.kernel_count(), module.arena_bytes() / 1e6, err);
  CHECK(err < 1e-4);
}

}  // namespace

TEST_CASE("compiled artifacts of the exports match PyTorch", "[e2e][artifact]") {
  check_artifact("resnet18");
  check_artifact("mobilenet_v2");
  check_artifact("transformer_encoder");
}

TEST_CASE("MobileNet-V2 matches PyTorch", "[e2e]") {
  check_model("mobilenet_v2", true, true);
}

TEST_CASE("ResNet-18 matches PyTorch", "[e2e]") {
  check_model("resnet18", false, false);
  check_model("resnet18", false, true);
  auto executor = check_model("resnet18", true, true);
  // One kernel per fused group; every ReLU and residual Add runs inside a conv's group (a
  // Winograd conv's output transform, for the convs winograd_conv rewrites).
  CHECK(executor->last_kernel_launches() == kernel_groups(*executor));
  const Graph &g = executor->graph();
  for (const FusedGroup &group : executor->groups()) {
    bool has_conv = false, has_epilogue = false;
    for (int n : group.nodes) {
      has_conv |= g.nodes[n].op_type == "Conv" || g.nodes[n].op_type == kWinogradOutputOp;
      has_epilogue |= g.nodes[n].op_type == "Relu" || g.nodes[n].op_type == "Add";
      CHECK(g.nodes[n].op_type != "BatchNormalization");
    }
    CHECK((has_conv || !has_epilogue));
  }
  // The 3x3 stride-1 convs of every stage (56x56, 28x28: F(4x4, 3x3); 14x14 and 7x7 with
  // 512 channels: F(2x2, 3x3)) run as Winograd convs.
  int winograd = 0;
  for (const Node &node : g.nodes) winograd += node.op_type == kWinogradOutputOp;
  CHECK(winograd == 13);
}
TEST_CASE("transformer encoder matches PyTorch", "[e2e]") {
  check_model("transformer_encoder", false, false);
  check_model("transformer_encoder", false, true);
  auto executor = check_model("transformer_encoder", true, true);
  CHECK(executor->last_kernel_launches() == kernel_groups(*executor));
  CHECK(executor->last_kernel_launches() < static_cast<int>(executor->graph().nodes.size()));
}
TEST_CASE("bundled tiny CNN matches PyTorch", "[e2e]") {
  check_model("tiny_cnn", false, false);
  check_model("tiny_cnn", true, true);
}
