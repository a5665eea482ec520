#pragma once
/* The test-only fake CUDA driver (fake_libcuda.c, built as libcuda.so.1): what the tests read
 * back from it and the knobs they turn. Reached with dlsym on the fake's handle, so the test
 * binary does not link it. */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fake_cuda_stats {
  long live_allocations;  /* cuMemAlloc'ed and not yet cuMemFree'd */
  size_t live_bytes;
  long allocations, frees, failed_allocations;
  long copies_host_to_device, copies_device_to_host, copies_device_to_device;
  size_t bytes_host_to_device, bytes_device_to_host, bytes_device_to_device;
  long rejected_copies;  /* a device range outside every live allocation */
  long injected_copy_failures;  /* fake_cuda_fail_copy */
  long contexts_created, contexts_destroyed;
  long modules_loaded, modules_unloaded;
  long last_jit_max_registers;  /* CU_JIT_MAX_REGISTERS of the last module load; 0: not given */
  long launches;  /* cuLaunchKernel calls, every one refused */
  long synchronizes;
} fake_cuda_stats;

typedef void (*fake_cuda_get_stats_fn)(fake_cuda_stats *);
/* The most bytes live at once; cuMemAlloc beyond it is CUDA_ERROR_OUT_OF_MEMORY. 0: no limit. */
typedef void (*fake_cuda_set_memory_limit_fn)(size_t);
/* The nth next copy (1: the next one) of any direction fails with CUDA_ERROR_UNKNOWN,
 * copying nothing. 0: none. */
typedef void (*fake_cuda_fail_copy_fn)(long);

#ifdef __cplusplus
}
#endif
