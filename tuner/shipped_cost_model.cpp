#include "tuner/shipped_cost_model.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace tessel {

std::string shipped_cost_model_path(const Target &target) {
  if (const char *named = std::getenv("TESSEL_COST_MODEL"); named && *named)
    return std::string(named) == "none" ? std::string() : std::string(named);
  if (target.kind != Target::Kind::Host) return {};
  const std::string file = "llvm.json";
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "tessel" / "cost_model" / file);
  candidates.push_back(std::filesystem::path(TESSEL_SOURCE_DIR) / "models" / "cost_model" / file);
  for (const auto &path : candidates)
    if (std::filesystem::is_regular_file(path, ec)) return path.string();
  return {};
}

}  // namespace tessel
