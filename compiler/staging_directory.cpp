#include "compiler/staging_directory.h"

#include <unistd.h>

#include "base/exit_cleanup.h"

namespace tessel {

namespace fs = std::filesystem;

Result<StagingDirectory> StagingDirectory::open(const std::string &output_path) {
  const fs::path final_path = fs::absolute(output_path);
  if (fs::exists(final_path) && !(fs::is_directory(final_path) && (fs::exists(final_path / "manifest.json") ||
                                                                  fs::is_empty(final_path))))
    return make_error(ErrorKind::InvalidInput,
                      output_path + " exists and is not a tessel artifact; not overwriting it");
  const fs::path staging = final_path.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staging, ec);
  if (!fs::create_directories(staging / "objects", ec))
    return make_error(ErrorKind::Io, "cannot create " + staging.string() + ": " + ec.message());
  return StagingDirectory(output_path, final_path, staging);
}

StagingDirectory::StagingDirectory(std::string output_path, fs::path final_path, fs::path staging)
    : output_path_(std::move(output_path)), final_path_(std::move(final_path)), staging_(std::move(staging)) {
  exit_cleanup_ = register_exit_cleanup([staging = staging_] {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
  });
}

StagingDirectory::StagingDirectory(StagingDirectory &&other) noexcept
    : output_path_(std::move(other.output_path_)),
      final_path_(std::move(other.final_path_)),
      staging_(std::move(other.staging_)),
      owned_(other.owned_),
      exit_cleanup_(other.exit_cleanup_) {
  other.owned_ = false;
  other.exit_cleanup_ = -1;
}

void StagingDirectory::forget_cleanup() {
  if (exit_cleanup_ >= 0) unregister_exit_cleanup(exit_cleanup_);
  exit_cleanup_ = -1;
}

StagingDirectory::~StagingDirectory() {
  forget_cleanup();
  if (!owned_) return;
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
}

Result<void> StagingDirectory::commit() {
  std::error_code ec;
  fs::remove_all(staging_ / "objects", ec);
  const fs::path old = final_path_.string() + ".old-" + std::to_string(::getpid());
  const bool replace = fs::exists(final_path_);
  if (replace) {
    fs::rename(final_path_, old, ec);
    if (ec) return make_error(ErrorKind::Io, "cannot move the existing " + output_path_ + " aside: " + ec.message());
  }
  fs::rename(staging_, final_path_, ec);
  if (ec) {
    if (replace) fs::rename(old, final_path_, ec);
    return make_error(ErrorKind::Io, "cannot move the artifact to " + output_path_ + ": " + ec.message());
  }
  owned_ = false;
  forget_cleanup();
  if (replace) fs::remove_all(old, ec);
  return {};
}

}  // namespace tessel
