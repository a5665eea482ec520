#pragma once
// Evicting memory from every level of the CPU's caches, so the next read of it comes from
// DRAM. A kernel timed alone over and over finds its weights in cache; inside a model,
// the layers between two calls of it have long since pushed them out.
#include <cstddef>

namespace tessel {

/// Writes back and evicts every cache line of [data, data + bytes) from all cache levels,
/// then waits until that is done. A no-op on CPUs other than x86-64.
void evict_from_caches(const void *data, size_t bytes);

/// Whether evict_from_caches does anything on this build.
bool cache_eviction_supported();

}  // namespace tessel
