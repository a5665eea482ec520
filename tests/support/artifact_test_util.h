#pragma once
// Helpers shared by the artifact tests (test_artifact.cpp, test_cuda_fake_driver.cpp): scratch
// directories, whole-file reads and writes, load errors, cuda artifacts.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "codegen/target.h"
#include "compiler/artifact_compiler.h"
#include "deploy/module.h"
#include "graph/ir/graph.h"

namespace tessel::testing {

/// A scratch directory removed at the end of the test.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string &name)
      : path(std::filesystem::temp_directory_path() / ("tessel_artifact_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

inline std::string read_text(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
inline void write_text(const std::filesystem::path &p, const std::string &text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

/// Module::load's error message, or "" when it loads.
inline std::string load_error(const std::filesystem::path &artifact) {
  try {
    Module::load(artifact.string());
  } catch (const ModuleError &e) {
    return e.what();
  }
  return "";
}

/// A CUDA artifact of `graph` for `arch` (sm_86, ...), compiled here (no GPU needed).
inline ArtifactCompileSummary compile_cuda_artifact(const Graph &graph, const std::string &arch,
                                                    const std::filesystem::path &artifact) {
  ArtifactCompileOptions options;
  auto target = parse_target("cuda -arch=" + arch);
  REQUIRE(target.ok());
  options.target = target.value();
  auto summary = compile_artifact(graph, options, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  CHECK(summary->default_tasks == summary->kernel_steps);
  return summary.value();
}

}  // namespace tessel::testing
