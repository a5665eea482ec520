// A model file's bytes through ONNX import (the checker included), the supported-op check
// and static shape inference: what every command does first with a user's model. External
// data resolves against a folder that does not exist, so nothing outside is read.
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/infer/shape_inference.h"
#include "graph/onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto graph = tessel::import_onnx_bytes(std::string(reinterpret_cast<const char *>(data), size),
                                         "/nonexistent/tessel-fuzz");
  if (graph.ok()) static_cast<void>(tessel::infer_shapes(std::move(graph).value()));
  return 0;
}
