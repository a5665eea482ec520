#pragma once
// Memory in transparent huge pages for the data every run sweeps through: the arena and the
// weights. With 4 KiB pages ResNet-18's 47 MB of weights span 11,400 pages, about three times
// what this CPU's second-level TLB maps, so the weight streams of every run miss the TLB
// every 4 KiB; in 2 MiB pages they take 24 entries. Linux gives huge pages to regions that
// ask (madvise) when transparent_hugepage is "madvise" or "always"; elsewhere this is plain
// anonymous memory.
#include <cstddef>
#include <cstdint>

namespace tessel::deploy {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  /// Replaces the buffer by `bytes` of zeroed memory, 2 MiB aligned; false (errno set)
  /// when the memory cannot be had.
  bool allocate(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer &&other) noexcept;
  HugePageBuffer &operator=(HugePageBuffer &&other) noexcept;
  HugePageBuffer(const HugePageBuffer &) = delete;
  HugePageBuffer &operator=(const HugePageBuffer &) = delete;

  uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void *mapping_ = nullptr;  // what mmap returned (a 2 MiB larger region, for alignment)
  size_t mapping_bytes_ = 0;
  uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tessel::deploy
