#include "deploy/huge_page_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <utility>

namespace tessel::deploy {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
/// Mapped bytes kept on either side of the buffer. Halide may read a vector's worth past a
/// buffer's edge and discard those lanes: a stride-2 load it widens to a dense one and
/// starts one element early. Measured: a strided depthwise schedule whose input sat at the
/// arena's first byte read the 4 bytes before it, and faulted when nothing was mapped there.
constexpr size_t kGuard = 4096;
}

bool HugePageBuffer::allocate(size_t bytes) {
  *this = HugePageBuffer();
  const size_t rounded = (std::max<size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
  // One huge page more than needed, so that an aligned start exists inside the mapping
  // after the guard, and a guard after the end.
  const size_t mapping_bytes = rounded + kHugePage + 2 * kGuard;
  void *mapping = ::mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return false;
  mapping_ = mapping;
  mapping_bytes_ = mapping_bytes;
  const auto start = reinterpret_cast<uintptr_t>(mapping) + kGuard;
  data_ = reinterpret_cast<uint8_t *>((start + kHugePage - 1) / kHugePage * kHugePage);
  size_ = bytes;
  // Advice only: without transparent huge pages the buffer is ordinary memory.
  ::madvise(data_, rounded, MADV_HUGEPAGE);
  return true;
}

HugePageBuffer::~HugePageBuffer() {
  if (mapping_) ::munmap(mapping_, mapping_bytes_);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer &&other) noexcept { *this = std::move(other); }

HugePageBuffer &HugePageBuffer::operator=(HugePageBuffer &&other) noexcept {
  if (this != &other) {
    if (mapping_) ::munmap(mapping_, mapping_bytes_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace tessel::deploy
