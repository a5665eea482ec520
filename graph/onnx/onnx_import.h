#pragma once
// ONNX import: ModelProto (through libonnx) to tessel's Graph.
#include <string>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Reads, checks (onnx::checker) and imports an .onnx file. Initializers become constant
/// tensors, external data is read from the model's folder, If/Loop bodies are imported as
/// nested graphs. Every error names the file and the culprit.
Result<Graph> import_onnx_file(const std::string &path);
/// Same, from serialized ModelProto bytes; base_dir resolves external data.
Result<Graph> import_onnx_bytes(const std::string &bytes, const std::string &base_dir,
                                bool run_checker = true);

/// import_onnx_file, then the supported-op check (every unsupported op listed at once)
/// and static shape inference: what every command does before anything else.
Result<Graph> load_model(const std::string &path);

}  // namespace tessel
