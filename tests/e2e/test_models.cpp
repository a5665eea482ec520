// Whole models exported from PyTorch (tools/export_models.py) must match PyTorch's outputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "graph/onnx_import.h"
#include "runtime/graph_executor.h"
#include "runtime/npy.h"
#include "runtime/optimize_graph.h"

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

void check_model(const std::string &name, bool optimize) {
  const std::string dir = TESSEL_MODELS_DIR;
  const std::string base = dir + "/" + name;
  if (!std::ifstream(base + ".onnx")) FAIL("missing " << base << ".onnx; run tools/export_models.py " << dir);
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
  GraphExecutor executor(std::make_shared<const Graph>(graph.value()));
  auto outputs = executor.run({input.value()});
  INFO((outputs.ok() ? std::string() : outputs.error().message));
  REQUIRE(outputs.ok());
  REQUIRE(outputs->at(0).shape() == expected->shape());
  const double err = relative_l2(outputs->at(0), expected.value());
  std::printf("%s%s: relative L2 error vs PyTorch = %.3g\n", name.c_str(), optimize ? " (optimized)" : "", err);
  CHECK(err < 1e-4);
}

}  // namespace

TEST_CASE("ResNet-18 matches PyTorch", "[e2e]") {
  check_model("resnet18", false);
  check_model("resnet18", true);
}
TEST_CASE("transformer encoder matches PyTorch", "[e2e]") {
  check_model("transformer_encoder", false);
  check_model("transformer_encoder", true);
}
TEST_CASE("bundled tiny CNN matches PyTorch", "[e2e]") {
  check_model("tiny_cnn", false);
  check_model("tiny_cnn", true);
}
