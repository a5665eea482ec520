#pragma once
// Files a model or an artifact names are read only from inside its own folder: a relative
// path that climbs out, an absolute one, or a symbolic link anywhere along the relative
// path is refused. The file is opened one path component at a time, each relative to the
// folder opened before it and never following a link (openat with O_NOFOLLOW), so a link
// swapped in after a check cannot redirect the read: what is checked is what is read.
#include <cstdint>
#include <string>

#include "base/result.h"

namespace tessel {

/// An open file descriptor, closed when it goes.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd &&other) noexcept : fd_(other.release()) {}
  OwnedFd &operator=(OwnedFd &&other) noexcept;
  OwnedFd(const OwnedFd &) = delete;
  OwnedFd &operator=(const OwnedFd &) = delete;
  ~OwnedFd();
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

/// Opens `relative` inside `folder` for reading: it must be a regular file reached without
/// passing through a symbolic link (the folder itself may be one). `what` names the file in
/// errors.
Result<OwnedFd> open_inside(const std::string &folder, const std::string &relative, const std::string &what);

/// The real path of the regular file `relative` inside `folder`, under the same rules as
/// open_inside (for a reader that opens files by name itself, like the ONNX checker).
Result<std::string> resolve_inside(const std::string &folder, const std::string &relative, const std::string &what);

/// The size of the open file `fd`.
Result<int64_t> file_size(const OwnedFd &fd, const std::string &what);

/// Reads exactly `size` bytes of `fd` from `offset` into `destination`.
Result<void> read_exactly_at(const OwnedFd &fd, int64_t offset, void *destination, size_t size, const std::string &what);

}  // namespace tessel
