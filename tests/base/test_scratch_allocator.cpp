// Tests of the scratch allocator kernels' intermediates come from: alignment, reuse of freed
// large blocks of the same size, and the cache's limit.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "base/scratch_allocator.h"

using namespace tessel;

TEST_CASE("scratch blocks are aligned and writable, small and large", "[scratch]") {
  scratch_release_cached();
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{4097}, size_t{64 * 1024}, size_t{3 << 20}}) {
    INFO(bytes);
    auto *p = static_cast<uint8_t *>(scratch_allocate(nullptr, bytes));
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % kScratchAlignment == 0);
    std::memset(p, 0xab, bytes);
    scratch_free(nullptr, p);
  }
  scratch_free(nullptr, nullptr);  // as free(NULL)
  scratch_release_cached();
  CHECK(scratch_cached_bytes() == 0);
}

TEST_CASE("a freed large block is handed out again for the same size; small ones are not kept", "[scratch]") {
  scratch_release_cached();
  void *large = scratch_allocate(nullptr, 800 * 1024 + 12);
  scratch_free(nullptr, large);
  CHECK(scratch_cached_bytes() >= 800 * 1024);
  // A request within the same page count gets the very block back.
  CHECK(scratch_allocate(nullptr, 800 * 1024 + 100) == large);
  CHECK(scratch_cached_bytes() == 0);
  // A different size does not take it.
  scratch_free(nullptr, large);
  void *other = scratch_allocate(nullptr, 2 << 20);
  CHECK(other != large);
  scratch_free(nullptr, other);
  void *small = scratch_allocate(nullptr, 1000);
  const size_t before = scratch_cached_bytes();
  scratch_free(nullptr, small);
  CHECK(scratch_cached_bytes() == before);
  scratch_release_cached();
  CHECK(scratch_cached_bytes() == 0);
}

TEST_CASE("the scratch cache stops keeping blocks at its limit", "[scratch]") {
  scratch_release_cached();
  const size_t block = 256 << 20;  // four of these fill the 1 GiB limit
  std::vector<void *> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(scratch_allocate(nullptr, block));
  for (void *b : blocks) scratch_free(nullptr, b);  // never touched, so never resident
  CHECK(scratch_cached_bytes() == 4 * block);
  scratch_release_cached();
}

TEST_CASE("scratch allocation from several threads at once", "[scratch]") {
  scratch_release_cached();
  std::atomic<int> wrong{0};  // Catch2's assertions are not thread-safe
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < 200; ++i) {
        const size_t bytes = (64 + 4 * ((i + t) % 3)) * 1024;
        auto *p = static_cast<uint8_t *>(scratch_allocate(nullptr, bytes));
        p[0] = p[bytes - 1] = static_cast<uint8_t>(t);
        if (p[0] != t || p[bytes - 1] != t) ++wrong;
        scratch_free(nullptr, p);
      }
    });
  for (std::thread &th : threads) th.join();
  CHECK(wrong == 0);
  CHECK(scratch_cached_bytes() <= 4 * 3 * 72 * 1024);
  scratch_release_cached();
}

TEST_CASE("a forked child allocates from its copy of the scratch cache", "[scratch]") {
  scratch_release_cached();
  scratch_free(nullptr, scratch_allocate(nullptr, 1 << 20));  // the parent caches one block
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    void *p = scratch_allocate(nullptr, 1 << 20);
    scratch_free(nullptr, p);
    _exit(p != nullptr && scratch_cached_bytes() == (1 << 20) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  scratch_release_cached();
}
