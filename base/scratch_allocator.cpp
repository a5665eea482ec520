#include "base/scratch_allocator.h"

#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace tessel {
namespace {

/// Every block starts with this header, kScratchAlignment bytes before what the caller gets.
struct BlockHeader {
  size_t bytes;  // the usable size the block was made with (rounded up)
};
static_assert(sizeof(BlockHeader) <= kScratchAlignment, "the header fits in the alignment padding");

struct ScratchCache {
  std::mutex mutex;
  std::map<size_t, std::vector<void *>> free_blocks;  // usable size -> blocks (their headers)
  size_t cached_bytes = 0;
};

ScratchCache &cache() {
  // Never destroyed: kernels may free at exit. A fork (the tuner forks its workers) happens
  // with the lock held by the forking thread, so the child's copy is never left locked by a
  // thread it does not have.
  static ScratchCache *instance = [] {
    auto *c = new ScratchCache;
    pthread_atfork([] { cache().mutex.lock(); }, [] { cache().mutex.unlock(); }, [] { cache().mutex.unlock(); });
    return c;
  }();
  return *instance;
}

/// Reused sizes are rounded to whole pages, so a request a few bytes off another reuses it.
size_t usable_size(size_t bytes) {
  if (bytes < kScratchReuseBytes) return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
  constexpr size_t page = 4096;
  return (bytes + page - 1) / page * page;
}

void *user_pointer(void *block) { return static_cast<uint8_t *>(block) + kScratchAlignment; }
void *block_of(void *memory) { return static_cast<uint8_t *>(memory) - kScratchAlignment; }

}  // namespace

void *scratch_allocate(void *, size_t bytes) {
  const size_t usable = usable_size(bytes == 0 ? 1 : bytes);
  if (usable >= kScratchReuseBytes) {
    ScratchCache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(usable);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void *block = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= usable;
      return user_pointer(block);
    }
  }
  void *block = std::aligned_alloc(kScratchAlignment, usable + kScratchAlignment);
  if (!block) return nullptr;
  static_cast<BlockHeader *>(block)->bytes = usable;
  return user_pointer(block);
}

void scratch_free(void *, void *memory) {
  if (!memory) return;
  void *block = block_of(memory);
  const size_t usable = static_cast<BlockHeader *>(block)->bytes;
  if (usable >= kScratchReuseBytes) {
    ScratchCache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cached_bytes + usable <= kScratchCacheLimitBytes) {
      c.free_blocks[usable].push_back(block);
      c.cached_bytes += usable;
      return;
    }
  }
  std::free(block);
}

size_t scratch_cached_bytes() {
  ScratchCache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.cached_bytes;
}

void scratch_release_cached() {
  ScratchCache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto &[bytes, blocks] : c.free_blocks)
    for (void *block : blocks) std::free(block);
  c.free_blocks.clear();
  c.cached_bytes = 0;
}

}  // namespace tessel
