#pragma once
// The CLI's subcommands as functions returning the process exit code (0 ok, 1 error).
#include <cstdint>
#include <string>
#include <vector>

namespace tessel {

struct RunOptions {
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
  std::string model_path;
  bool print_graph = false;
  bool tasks = false;
  bool json = false;
};
int inspect_command(const InspectOptions &options);

}  // namespace tessel
