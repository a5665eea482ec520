// open_inside: files a model or an artifact names are read from inside its folder, through
// no symbolic link, and what was opened is what is read.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/path_inside.h"

using namespace tessel;
namespace fs = std::filesystem;

namespace {

/// A fresh folder with model/w.bin ("weights"), model/sub/x.bin and outside/secret.bin.
struct Folders {
  fs::path root;
  Folders() {
    char pattern[] = "/tmp/tessel_path_inside_XXXXXX";
    root = ::mkdtemp(pattern);
    fs::create_directories(root / "model" / "sub");
    fs::create_directories(root / "outside");
    std::ofstream(root / "model" / "w.bin") << "weights";
    std::ofstream(root / "model" / "sub" / "x.bin") << "inner";
    std::ofstream(root / "outside" / "secret.bin") << "secret";
  }
  ~Folders() { fs::remove_all(root); }
  std::string model() const { return (root / "model").string(); }
};

std::string read_all(const OwnedFd &fd) {
  Result<int64_t> size = file_size(fd, "f");
  REQUIRE(size.ok());
  std::string bytes(static_cast<size_t>(size.value()), '\0');
  REQUIRE(read_exactly_at(fd, 0, bytes.data(), bytes.size(), "f").ok());
  return bytes;
}

}  // namespace

TEST_CASE("open_inside reads regular files inside the folder", "[base][path]") {
  Folders f;
  Result<OwnedFd> w = open_inside(f.model(), "w.bin", "weights");
  REQUIRE(w.ok());
  CHECK(read_all(w.value()) == "weights");
  Result<OwnedFd> x = open_inside(f.model(), "./sub//x.bin", "data");
  REQUIRE(x.ok());
  CHECK(read_all(x.value()) == "inner");
  char part[3] = {};
  CHECK(read_exactly_at(x.value(), 3, part, 2, "data").ok());
  CHECK(std::string(part) == "er");
  CHECK_THAT(read_exactly_at(x.value(), 4, part, 2, "data").error().message, Catch::Contains("shrank"));
}

TEST_CASE("open_inside refuses paths out of the folder, links, folders and missing files", "[base][path]") {
  Folders f;
  const fs::path m = f.model();
  fs::create_symlink("../outside/secret.bin", m / "out.bin");  // leads out
  fs::create_symlink("w.bin", m / "alias.bin");                 // stays inside, still a link
  fs::create_symlink("sub", m / "linked_sub");                  // a folder link on the way
  struct Case {
    std::string relative, expected;
  };
  for (const Case &c : std::vector<Case>{
           {"../outside/secret.bin", "must be a relative path inside"},
           {"sub/../../outside/secret.bin", "must be a relative path inside"},
           {(f.root / "outside" / "secret.bin").string(), "must be a relative path inside"},
           {"", "must be a relative path inside"},
           {"out.bin", "is or goes through a symbolic link (out.bin)"},
           {"alias.bin", "is or goes through a symbolic link (alias.bin)"},
           {"linked_sub/x.bin", "is or goes through a symbolic link (linked_sub)"},
           {"sub", "is not a regular file"},
           {"w.bin/x", "w.bin is not a folder"},
           {"nothing.bin", "missing"},
       }) {
    INFO(c.relative);
    Result<OwnedFd> fd = open_inside(f.model(), c.relative, "data");
    REQUIRE_FALSE(fd.ok());
    CHECK_THAT(fd.error().message, Catch::Contains(c.expected));
  }
  CHECK(open_inside(f.model(), "nothing.bin", "data").error().kind == ErrorKind::NotFound);
}

TEST_CASE("a file swapped for a link after it was opened is not what gets read", "[base][path]") {
  Folders f;
  const fs::path m = f.model();
  Result<OwnedFd> w = open_inside(f.model(), "w.bin", "weights");
  REQUIRE(w.ok());
  // Swapped after the open: the descriptor still reads the file that was checked, and a
  // new open refuses the link.
  fs::remove(m / "w.bin");
  fs::create_symlink("../outside/secret.bin", m / "w.bin");
  CHECK(read_all(w.value()) == "weights");
  CHECK_FALSE(open_inside(f.model(), "w.bin", "weights").ok());
}

TEST_CASE("resolve_inside gives the real path of a file open_inside accepts", "[base][path]") {
  Folders f;
  Result<std::string> real = resolve_inside(f.model(), "sub/x.bin", "data");
  REQUIRE(real.ok());
  CHECK(real.value() == fs::canonical(f.root / "model" / "sub" / "x.bin").string());
  fs::create_symlink("w.bin", fs::path(f.model()) / "alias.bin");
  CHECK_FALSE(resolve_inside(f.model(), "alias.bin", "data").ok());
}
