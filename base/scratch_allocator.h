#pragma once
// Memory for kernels' own intermediates (Halide's halide_malloc and halide_free, installed in
// every kernels.so with halide_set_custom_malloc/free). A model's run allocates and frees the
// same large blocks, in the same order, on every run: a padded input and a register-tiled
// conv's output are a few hundred KB to a few MB each. glibc hands such blocks back to the
// kernel when they are freed (munmap, or trimming the heap's top), so each run faulted them
// in again page by page: one 56x56x64 conv took 600 page faults, about a third of its time.
// Freed large blocks are kept here for the next request of the same size instead.
#include <cstddef>

namespace tessel {

/// Halide's halide_malloc signature: `bytes` aligned to kScratchAlignment, or null.
void *scratch_allocate(void *user_context, size_t bytes);
/// Halide's halide_free signature: takes back what scratch_allocate returned (or null).
void scratch_free(void *user_context, void *memory);

/// Alignment of every block: a cache line, and at least what Halide's own allocator gives.
constexpr size_t kScratchAlignment = 128;
/// Blocks at least this large are kept for reuse when freed; smaller ones go back to malloc,
/// which keeps them in its own bins.
constexpr size_t kScratchReuseBytes = 64 * 1024;
/// The most the cache holds in freed blocks; past it, freed blocks are released.
constexpr size_t kScratchCacheLimitBytes = size_t{1} << 30;

/// Bytes held in freed blocks now, kept for reuse.
size_t scratch_cached_bytes();
/// Releases every cached block (a process that is done running models, or a test).
void scratch_release_cached();

}  // namespace tessel
