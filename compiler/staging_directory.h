#pragma once
// An artifact is written into a temporary sibling of its destination and renamed into place
// only when complete, so a failed or interrupted compile never leaves a partial artifact
// where a whole one is expected.
#include <filesystem>
#include <string>

#include "base/result.h"

namespace tessel {

class StagingDirectory {
 public:
  /// A fresh staging directory next to `output_path`. Refuses to replace anything at
  /// `output_path` but an artifact or an empty directory.
  static Result<StagingDirectory> open(const std::string &output_path);
  StagingDirectory(StagingDirectory &&other) noexcept;
  StagingDirectory(const StagingDirectory &) = delete;
  StagingDirectory &operator=(const StagingDirectory &) = delete;
  StagingDirectory &operator=(StagingDirectory &&) = delete;
  /// Removes the staging directory unless it was committed.
  ~StagingDirectory();

  /// A path inside the staging directory.
  std::string file(const std::string &name) const { return (staging_ / name).string(); }
  /// Renames the staging directory to the destination. An artifact already there is moved
  /// aside first and removed only once the new one is in place.
  Result<void> commit();

 private:
  StagingDirectory(std::string output_path, std::filesystem::path final_path, std::filesystem::path staging);
  void forget_cleanup();

  std::string output_path_;  // as the user gave it, for messages
  std::filesystem::path final_path_, staging_;
  bool owned_ = true;
  int exit_cleanup_ = -1;  // removes the directory should LLVM end the process mid-compile
};

}  // namespace tessel
