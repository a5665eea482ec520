// tessel's own shape inference must agree with onnx::shape_inference::InferShapes on every
// conformance model whose ops tessel supports (where both know the full shape).
#include <catch2/catch.hpp>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "graph/infer/shape_inference.h"
#include "graph/onnx/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

using namespace tessel;

namespace {

std::vector<std::string> test_dirs(const std::string &base) {
  std::vector<std::string> dirs;
  if (DIR *d = opendir(base.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.') dirs.push_back(base + "/" + e->d_name);
    closedir(d);
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

/// Fully known shapes ONNX infers, by tensor name.
std::map<std::string, TensorType> onnx_inferred_types(const std::string &model_path) {
  std::map<std::string, TensorType> types;
  onnx::ModelProto model;
  std::ifstream in(model_path, std::ios::binary);
  if (!model.ParseFromIstream(&in)) return types;
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (...) {
    return types;
  }
  auto record = [&](const onnx::ValueInfoProto &vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    TensorType t;
    t.dtype = dtype_from_onnx(vi.type().tensor_type().elem_type());
    for (const auto &d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      t.shape.push_back(d.dim_value());
    }
    types[vi.name()] = t;
  };
  for (const auto &vi : model.graph().value_info()) record(vi);
  for (const auto &vi : model.graph().output()) record(vi);
  return types;
}

}  // namespace

TEST_CASE("shape inference agrees with ONNX's on the conformance models", "[inference][conformance]") {
  int models = 0, compared = 0;
  std::vector<std::string> mismatches;
  for (const char *folder : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const std::string &dir : test_dirs(std::string("/usr/share/libonnx-testdata/data/") + folder)) {
      auto graph = import_onnx_file(dir + "/model.onnx");
      if (!graph.ok() || !check_supported_ops(graph.value()).ok()) continue;
      auto ours = infer_shapes(graph.value());
      if (!ours.ok()) {
        if (ours.error().message.find("unsupported") != std::string::npos) continue;  // e.g. bfloat16
        mismatches.push_back(dir + ": " + ours.error().message);
        continue;
      }
      ++models;
      const auto theirs = onnx_inferred_types(dir + "/model.onnx");
      for (const TensorInfo &t : ours->tensors) {
        auto it = theirs.find(t.name);
        if (it == theirs.end() || !t.type.fully_known()) continue;
        ++compared;
        if (!(t.type == it->second))
          mismatches.push_back(dir + ": " + t.name + " is " + t.type.to_string() + ", ONNX says " +
                               it->second.to_string());
      }
    }
  }
  std::printf("shape inference: %d models, %d tensors compared with ONNX, %zu mismatches\n", models, compared,
              mismatches.size());
  for (const std::string &m : mismatches) std::printf("  %s\n", m.c_str());
  CHECK(models > 100);
  CHECK(mismatches.empty());
}
