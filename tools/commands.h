#pragma once
// The CLI's subcommands as functions returning the process exit code (0 ok, 1 error).
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/result.h"

namespace tessel {

/// How the graph optimizer runs before anything else.
struct OptimizeOptions {
  bool enabled = true;
  bool print_after_each = false;
  std::vector<std::string> skip;
  /// The --target the graph is compiled for: layout passes differ per target.
  std::string target = "llvm";
};

struct RunOptions {
  OptimizeOptions optimize;
  std::string model_path;
  std::vector<std::string> inputs;  // NAME=file.npy or file.npy
  std::string output_dir;
  int repeat = 10;
  int threads = 0;
  uint64_t seed = 0;
  std::string target = "llvm";
  bool json = false;
};
int run_command(const RunOptions &options);

struct InspectOptions {
  OptimizeOptions optimize;
  std::string model_path;
  bool print_graph = false;
  bool tasks = false;
  bool json = false;
  std::string dot_path;  // Graphviz of the fused graph here; "-" for stdout
};
int inspect_command(const InspectOptions &options);

/// load_model, then the graph optimizer as the options say; errors are printed by callers.
Result<Graph> load_optimized_model(const std::string &path, const OptimizeOptions &options);

}  // namespace tessel
