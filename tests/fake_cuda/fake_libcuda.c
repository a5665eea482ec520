/* A fake CUDA driver for tests on machines without a GPU (built as libcuda.so.1, never
 * installed). It implements the part of the driver API that Halide 14's CUDA runtime
 * (src/runtime/cuda.cpp, cuda_functions.h) and tessel's device query (codegen/cuda_device.cpp)
 * look up, with "device memory" in host memory: a CUdeviceptr is the host address of a
 * malloc'ed block. It lets the deploy runtime's upload, device-to-device copy, download,
 * allocation and error paths run for real; it never computes: PTX modules "load" (the
 * requested entry must be in the PTX text) and every cuLaunchKernel fails with
 * CUDA_ERROR_NOT_SUPPORTED.
 *
 * Stricter than needed where that catches bugs: every call but the version and error-name
 * queries needs cuInit first, memory calls need a current context, and a copy must lie
 * wholly inside one live allocation (else CUDA_ERROR_INVALID_VALUE, counted as rejected).
 * The device looks like an sm_86 GPU (82 SMs, 24 GiB). fake_cuda.h declares what tests read
 * back (fake_cuda_get_stats) and the knobs that make it fail: a memory limit
 * (fake_cuda_set_memory_limit) and one failing copy (fake_cuda_fail_copy). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct FakeContext *CUcontext;
typedef struct FakeModule *CUmodule;
typedef struct FakeFunction *CUfunction;
typedef void *CUstream;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

static const size_t kTotalMemory = (size_t)24 << 30;
static const unsigned kContextMagic = 0xC0C7u, kModuleMagic = 0x40D1u;

struct FakeContext {
  unsigned magic; /* kContextMagic while alive; contexts are never freed, so a stale one is caught */
  CUdevice device;
};
struct FakeFunction {
  struct FakeFunction *next;
  char name[256];
};
struct FakeModule {
  unsigned magic;
  char *ptx;
  struct FakeFunction *functions;
};
struct Allocation {
  struct Allocation *next;
  uintptr_t begin;
  size_t bytes;
};

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized = 0;
static size_t g_memory_limit = 0;
static long g_copy_failure_countdown = 0;  /* the n-th next copy fails; 0: none */
static struct Allocation *g_allocations = NULL;
static fake_cuda_stats g_stats;

/* The calling thread's context stack, as the driver keeps one per thread. */
enum { kStackDepth = 32 };
static __thread CUcontext t_stack[kStackDepth];
static __thread int t_depth = 0;

#define LOCKED(statement)          \
  do {                             \
    pthread_mutex_lock(&g_mutex);  \
    statement;                     \
    pthread_mutex_unlock(&g_mutex); \
  } while (0)

static int initialized(void) {
  int ok;
  LOCKED(ok = g_initialized);
  return ok;
}

static CUresult need_context(void) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_depth == 0 || t_stack[t_depth - 1]->magic != kContextMagic) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

/* Whether [address, address + bytes) lies inside one live allocation; call with g_mutex held. */
static int inside_allocation(CUdeviceptr address, size_t bytes) {
  for (struct Allocation *a = g_allocations; a; a = a->next)
    if (address >= a->begin && address - a->begin <= a->bytes && bytes <= a->bytes - (address - a->begin)) return 1;
  return 0;
}

/* ---- test hooks (fake_cuda.h) ---------------------------------------------------------- */

EXPORT void fake_cuda_get_stats(fake_cuda_stats *out) { LOCKED(*out = g_stats); }
EXPORT void fake_cuda_set_memory_limit(size_t bytes) { LOCKED(g_memory_limit = bytes); }
EXPORT void fake_cuda_fail_copy(long nth) { LOCKED(g_copy_failure_countdown = nth); }

/* ---- initialization, version, errors ---------------------------------------------------- */

EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  LOCKED(g_initialized = 1);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 12020;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
    case CUDA_ERROR_UNKNOWN: *name = "CUDA_ERROR_UNKNOWN"; break;
    default: *name = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **text) { return cuGetErrorName(error, text); }

/* ---- the device ------------------------------------------------------------------------- */

EXPORT CUresult cuDeviceGetCount(int *count) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  const char *text = "tessel fake CUDA device (sm_86, no compute)";
  strncpy(name, text, (size_t)length - 1);
  name[length - 1] = '\0';
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (!value || attribute <= 0 || attribute > 140) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {  /* an RTX 3090-like sm_86 part */
    case 1: *value = 1024; break;                 /* MAX_THREADS_PER_BLOCK */
    case 2: case 3: *value = 1024; break;         /* MAX_BLOCK_DIM_X, _Y */
    case 4: *value = 64; break;                   /* MAX_BLOCK_DIM_Z */
    case 5: *value = 2147483647; break;           /* MAX_GRID_DIM_X */
    case 6: case 7: *value = 65535; break;        /* MAX_GRID_DIM_Y, _Z */
    case 8: *value = 48 * 1024; break;            /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 9: *value = 64 * 1024; break;            /* TOTAL_CONSTANT_MEMORY */
    case 10: *value = 32; break;                  /* WARP_SIZE */
    case 11: *value = 2147483647; break;          /* MAX_PITCH */
    case 12: *value = 65536; break;               /* MAX_REGISTERS_PER_BLOCK */
    case 13: *value = 1695000; break;             /* CLOCK_RATE, kHz */
    case 14: *value = 512; break;                 /* TEXTURE_ALIGNMENT */
    case 15: *value = 1; break;                   /* GPU_OVERLAP */
    case 16: *value = 82; break;                  /* MULTIPROCESSOR_COUNT */
    case 19: *value = 1; break;                   /* CAN_MAP_HOST_MEMORY */
    case 31: *value = 1; break;                   /* CONCURRENT_KERNELS */
    case 36: *value = 9751000; break;             /* MEMORY_CLOCK_RATE, kHz */
    case 37: *value = 384; break;                 /* GLOBAL_MEMORY_BUS_WIDTH */
    case 38: *value = 6 * 1024 * 1024; break;     /* L2_CACHE_SIZE */
    case 39: *value = 1536; break;                /* MAX_THREADS_PER_MULTIPROCESSOR */
    case 40: *value = 2; break;                   /* ASYNC_ENGINE_COUNT */
    case 41: *value = 1; break;                   /* UNIFIED_ADDRESSING */
    case 75: *value = 8; break;                   /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *value = 6; break;                   /* COMPUTE_CAPABILITY_MINOR */
    case 81: *value = 100 * 1024; break;          /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    case 82: *value = 65536; break;               /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    case 97: *value = 99 * 1024; break;           /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case 106: *value = 16; break;                 /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice device) { return cuDeviceTotalMem_v2(bytes, device); }

/* ---- contexts --------------------------------------------------------------------------- */

EXPORT CUresult cuCtxCreate_v2(CUcontext *context, unsigned flags, CUdevice device) {
  (void)flags;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (!context || t_depth == kStackDepth) return CUDA_ERROR_INVALID_VALUE;
  struct FakeContext *c = (struct FakeContext *)calloc(1, sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  c->magic = kContextMagic;
  c->device = device;
  t_stack[t_depth++] = c;  /* a new context is made current */
  LOCKED(++g_stats.contexts_created);
  *context = c;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxCreate(CUcontext *context, unsigned flags, CUdevice device) {
  return cuCtxCreate_v2(context, flags, device);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext context) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!context || context->magic != kContextMagic) return CUDA_ERROR_INVALID_CONTEXT;
  context->magic = 0;
  /* Off this thread's stack, wherever it is. */
  int kept = 0;
  for (int i = 0; i < t_depth; ++i)
    if (t_stack[i] != context) t_stack[kept++] = t_stack[i];
  t_depth = kept;
  LOCKED(++g_stats.contexts_destroyed);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxDestroy(CUcontext context) { return cuCtxDestroy_v2(context); }

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext context) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!context || context->magic != kContextMagic) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_depth == kStackDepth) return CUDA_ERROR_INVALID_VALUE;
  t_stack[t_depth++] = context;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPushCurrent(CUcontext context) { return cuCtxPushCurrent_v2(context); }

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext top = t_stack[--t_depth];
  if (context) *context = top;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPopCurrent(CUcontext *context) { return cuCtxPopCurrent_v2(context); }

EXPORT CUresult cuCtxGetCurrent(CUcontext *context) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!context) return CUDA_ERROR_INVALID_VALUE;
  *context = t_depth ? t_stack[t_depth - 1] : NULL;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = t_stack[t_depth - 1]->device;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetApiVersion(CUcontext context, unsigned *version) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!context || context->magic != kContextMagic) return CUDA_ERROR_INVALID_CONTEXT;
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 3020;
  return CUDA_SUCCESS;
}

/* Nothing runs asynchronously here: synchronizing only checks the context and counts. */
EXPORT CUresult cuCtxSynchronize(void) {
  CUresult r = need_context();
  if (r == CUDA_SUCCESS) LOCKED(++g_stats.synchronizes);
  return r;
}
EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  (void)stream;
  return cuCtxSynchronize();
}
EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) { return cuStreamSynchronize(stream); }

EXPORT CUresult cuLaunchHostFunc(CUstream stream, void (*fn)(void *), void *data) {
  (void)stream;
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  fn(data);  /* the stream is always idle */
  return CUDA_SUCCESS;
}

EXPORT CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }

EXPORT CUresult cuPointerGetAttribute(void *result, int attribute, CUdeviceptr pointer) {
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  if (!result) return CUDA_ERROR_INVALID_VALUE;
  int known;
  LOCKED(known = inside_allocation(pointer, 0));
  if (!known) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == 1) { /* CU_POINTER_ATTRIBUTE_CONTEXT */
    *(CUcontext *)result = t_stack[t_depth - 1];
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- modules: PTX is kept, never compiled -------------------------------------------- */

EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned count, void *options, void **values) {
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  const char *text = (const char *)image;
  if (!strstr(text, ".version") || !strstr(text, ".target")) return CUDA_ERROR_INVALID_IMAGE;  /* not PTX */
  struct FakeModule *m = (struct FakeModule *)calloc(1, sizeof *m);
  if (!m || !(m->ptx = strdup(text))) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  m->magic = kModuleMagic;
  long max_registers = 0;
  for (unsigned i = 0; i < count && options && values; ++i)
    if (((const int *)options)[i] == 0 /* CU_JIT_MAX_REGISTERS */) max_registers = (long)(uintptr_t)values[i];
  LOCKED(++g_stats.modules_loaded; g_stats.last_jit_max_registers = max_registers);
  *module = m;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  return cuModuleLoadDataEx(module, image, 0, NULL, NULL);
}

EXPORT CUresult cuModuleUnload(CUmodule module) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!module || module->magic != kModuleMagic) return CUDA_ERROR_INVALID_HANDLE;
  module->magic = 0;
  for (struct FakeFunction *f = module->functions, *next; f; f = next) {
    next = f->next;
    free(f);
  }
  free(module->ptx);
  free(module);
  LOCKED(++g_stats.modules_unloaded);
  return CUDA_SUCCESS;
}

/* The function must be an entry of the module's PTX: ".entry <name>(". */
EXPORT CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  if (!function || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!module || module->magic != kModuleMagic) return CUDA_ERROR_INVALID_HANDLE;
  const size_t length = strlen(name);
  if (length >= sizeof(((struct FakeFunction *)0)->name)) return CUDA_ERROR_NOT_FOUND;
  for (struct FakeFunction *f = module->functions; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *function = f;
      return CUDA_SUCCESS;
    }
  int found = 0;
  for (const char *p = module->ptx; (p = strstr(p, ".entry")) != NULL; p += 6) {
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t') ++q;
    if (strncmp(q, name, length) == 0 && (q[length] == '(' || q[length] == ' ' || q[length] == '\n')) {
      found = 1;
      break;
    }
  }
  if (!found) return CUDA_ERROR_NOT_FOUND;
  struct FakeFunction *f = (struct FakeFunction *)calloc(1, sizeof *f);
  if (!f) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(f->name, name, length + 1);
  f->next = module->functions;
  module->functions = f;
  *function = f;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *pointer, size_t *bytes, CUmodule module, const char *name) {
  (void)pointer;
  (void)bytes;
  (void)module;
  (void)name;
  return CUDA_ERROR_NOT_FOUND;
}
EXPORT CUresult cuModuleGetGlobal(CUdeviceptr *pointer, size_t *bytes, CUmodule module, const char *name) {
  return cuModuleGetGlobal_v2(pointer, bytes, module, name);
}

/* Launching is where a fake must stop: the PTX cannot run here. */
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)params,
      (void)extra;
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  LOCKED(++g_stats.launches);
  return CUDA_ERROR_NOT_SUPPORTED;
}
EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

/* ---- memory ----------------------------------------------------------------------------- */

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  if (!pointer || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mutex);
  const size_t live = g_stats.live_bytes;
  const int refused = bytes > kTotalMemory - live ||
                      (g_memory_limit && (live >= g_memory_limit || bytes > g_memory_limit - live));
  if (refused) ++g_stats.failed_allocations;
  pthread_mutex_unlock(&g_mutex);
  if (refused) return CUDA_ERROR_OUT_OF_MEMORY;
  void *block = NULL;
  if (posix_memalign(&block, 256, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;  /* cudaMalloc aligns to 256 */
  memset(block, 0xA5, bytes);  /* device memory starts as garbage, not zeros */
  struct Allocation *a = (struct Allocation *)malloc(sizeof *a);
  if (!a) {
    free(block);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->begin = (uintptr_t)block;
  a->bytes = bytes;
  pthread_mutex_lock(&g_mutex);
  a->next = g_allocations;
  g_allocations = a;
  ++g_stats.allocations;
  ++g_stats.live_allocations;
  g_stats.live_bytes += bytes;
  pthread_mutex_unlock(&g_mutex);
  *pointer = (CUdeviceptr)(uintptr_t)block;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) { return cuMemAlloc_v2(pointer, bytes); }

EXPORT CUresult cuMemFree_v2(CUdeviceptr pointer) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pointer == 0) return CUDA_SUCCESS;
  struct Allocation *found = NULL;
  pthread_mutex_lock(&g_mutex);
  for (struct Allocation **a = &g_allocations; *a; a = &(*a)->next)
    if ((*a)->begin == pointer) {
      found = *a;
      *a = found->next;
      --g_stats.live_allocations;
      g_stats.live_bytes -= found->bytes;
      ++g_stats.frees;
      break;
    }
  pthread_mutex_unlock(&g_mutex);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  free((void *)found->begin);
  free(found);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree(CUdeviceptr pointer) { return cuMemFree_v2(pointer); }

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  LOCKED(if (free_bytes) *free_bytes = kTotalMemory - g_stats.live_bytes; if (total_bytes) *total_bytes = kTotalMemory);
  return CUDA_SUCCESS;
}

/* A copy touching the device: every device range must lie in one live allocation. */
static CUresult checked_copy(void *destination, const void *source, size_t bytes, CUdeviceptr device_a, int check_b,
                             CUdeviceptr device_b, long *count, size_t *total) {
  CUresult r = need_context();
  if (r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  if (!destination || !source) return CUDA_ERROR_INVALID_VALUE;
  int ok, injected = 0;
  pthread_mutex_lock(&g_mutex);
  ok = inside_allocation(device_a, bytes) && (!check_b || inside_allocation(device_b, bytes));
  if (ok && g_copy_failure_countdown > 0 && --g_copy_failure_countdown == 0) {
    injected = 1;
    ++g_stats.injected_copy_failures;
  } else if (ok) {
    ++*count;
    *total += bytes;
  } else {
    ++g_stats.rejected_copies;
  }
  pthread_mutex_unlock(&g_mutex);
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  if (injected) return CUDA_ERROR_UNKNOWN;
  memmove(destination, source, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr destination, const void *source, size_t bytes) {
  return checked_copy((void *)(uintptr_t)destination, source, bytes, destination, 0, 0,
                      &g_stats.copies_host_to_device, &g_stats.bytes_host_to_device);
}
EXPORT CUresult cuMemcpyDtoH_v2(void *destination, CUdeviceptr source, size_t bytes) {
  return checked_copy(destination, (const void *)(uintptr_t)source, bytes, source, 0, 0,
                      &g_stats.copies_device_to_host, &g_stats.bytes_device_to_host);
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr destination, CUdeviceptr source, size_t bytes) {
  return checked_copy((void *)(uintptr_t)destination, (const void *)(uintptr_t)source, bytes, destination, 1, source,
                      &g_stats.copies_device_to_device, &g_stats.bytes_device_to_device);
}
EXPORT CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { return cuMemcpyHtoD_v2(d, s, n); }
EXPORT CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { return cuMemcpyDtoH_v2(d, s, n); }
EXPORT CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { return cuMemcpyDtoD_v2(d, s, n); }
/* The stream is always idle: asynchronous copies complete before they return. */
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream stream) {
  (void)stream;
  return cuMemcpyHtoD_v2(d, s, n);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream stream) {
  (void)stream;
  return cuMemcpyDtoH_v2(d, s, n);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream stream) {
  (void)stream;
  return cuMemcpyDtoD_v2(d, s, n);
}

/* Strided 3-D copies: Halide's runtime declares them and does not call them here. */
EXPORT CUresult cuMemcpy3D_v2(const void *copy) {
  (void)copy;
  return CUDA_ERROR_NOT_SUPPORTED;
}
EXPORT CUresult cuMemcpy3D(const void *copy) { return cuMemcpy3D_v2(copy); }
EXPORT CUresult cuMemcpy3DAsync_v2(const void *copy, CUstream stream) {
  (void)stream;
  return cuMemcpy3D_v2(copy);
}
