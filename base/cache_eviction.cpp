#include "base/cache_eviction.h"

#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define TESSEL_HAVE_CLFLUSH 1
#endif

namespace tessel {

void evict_from_caches(const void *data, size_t bytes) {
#ifdef TESSEL_HAVE_CLFLUSH
  if (!data || bytes == 0) return;
  // 64-byte lines on every x86-64 CPU tessel targets; a smaller step would only repeat work.
  constexpr uintptr_t kLine = 64;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(kLine - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  // The fences order the flushes after earlier stores and before the next timed load.
  _mm_mfence();
  for (uintptr_t line = begin; line < end; line += kLine) _mm_clflush(reinterpret_cast<const void *>(line));
  _mm_mfence();
#else
  (void)data;
  (void)bytes;
#endif
}

bool cache_eviction_supported() {
#ifdef TESSEL_HAVE_CLFLUSH
  return true;
#else
  return false;
#endif
}

}  // namespace tessel
