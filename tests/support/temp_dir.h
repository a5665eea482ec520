#pragma once
// A fresh directory under the system's temp dir for one test, removed with everything in it
// when the test ends.
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace tessel::testing {

class TempDir {
 public:
  explicit TempDir(const std::string &prefix = "tessel") {
    namespace fs = std::filesystem;
    std::string pattern = (fs::temp_directory_path() / (prefix + "_XXXXXX")).string();
    path_ = ::mkdtemp(pattern.data());
    // Readable by others: some tests open files as another user would see them.
    fs::permissions(path_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

}  // namespace tessel::testing
