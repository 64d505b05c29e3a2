/*===- cuda_driver.c - the CUDA driver API, opened at run time -----------===//
 *
 * See cuda_driver.h. The driver's types and the few constants used come
 * from cuda_driver_api.h: no CUDA header or library is needed to build.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_driver_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static struct {
  pthread_once_t once;
  pthread_mutex_t lock; /* guards `error` */
  char error[1024];
  int failed;
  void *library;
  CUcontext context;
  CUstream stream;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  /* Stream-ordered allocation (CUDA 11.2); NULL on older drivers. */
  CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuGetErrorString)(CUresult, const char **);
} cuda = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER};

/* Records the first error; later ones are consequences of it. */
static void fail(const char *format, ...) {
  pthread_mutex_lock(&cuda.lock);
  if (!cuda.failed) {
    va_list args;
    va_start(args, format);
    vsnprintf(cuda.error, sizeof cuda.error, format, args);
    va_end(args);
    cuda.failed = 1;
  }
  pthread_mutex_unlock(&cuda.lock);
}

static const char *describe(CUresult result) {
  const char *text = NULL;
  if (cuda.cuGetErrorString)
    cuda.cuGetErrorString(result, &text);
  return text ? text : "unknown CUDA error";
}

/* 1 when `result` is success; otherwise records "`what`: <the error>". */
static int check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return 1;
  fail("%s: %s (CUDA error %d)", what, describe(result), result);
  return 0;
}

static int resolve(void **slot, const char *name, int required) {
  *slot = dlsym(cuda.library, name);
  if (!*slot && required) {
    fail("the CUDA driver has no %s", name);
    return 0;
  }
  return 1;
}

static void open_driver(void) {
  const char *path = getenv("TFM_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  cuda.library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!cuda.library) {
    fail("cannot load the CUDA driver (%s): %s; a model compiled with "
         "--target=cuda needs an NVIDIA GPU and its driver",
         path, dlerror());
    return;
  }
  struct {
    void **slot;
    const char *name;
    int required;
  } symbols[] = {
      {(void **)&cuda.cuInit, "cuInit", 1},
      {(void **)&cuda.cuDeviceGetCount, "cuDeviceGetCount", 1},
      {(void **)&cuda.cuDeviceGet, "cuDeviceGet", 1},
      {(void **)&cuda.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1},
      {(void **)&cuda.cuCtxSetCurrent, "cuCtxSetCurrent", 1},
      {(void **)&cuda.cuStreamCreate, "cuStreamCreate", 1},
      {(void **)&cuda.cuStreamSynchronize, "cuStreamSynchronize", 1},
      {(void **)&cuda.cuModuleLoadDataEx, "cuModuleLoadDataEx", 1},
      {(void **)&cuda.cuModuleUnload, "cuModuleUnload", 1},
      {(void **)&cuda.cuModuleGetFunction, "cuModuleGetFunction", 1},
      {(void **)&cuda.cuLaunchKernel, "cuLaunchKernel", 1},
      {(void **)&cuda.cuMemAlloc, "cuMemAlloc_v2", 1},
      {(void **)&cuda.cuMemFree, "cuMemFree_v2", 1},
      {(void **)&cuda.cuMemAllocAsync, "cuMemAllocAsync", 0},
      {(void **)&cuda.cuMemFreeAsync, "cuMemFreeAsync", 0},
      {(void **)&cuda.cuMemcpyAsync, "cuMemcpyAsync", 1},
      {(void **)&cuda.cuMemsetD8Async, "cuMemsetD8Async", 1},
      {(void **)&cuda.cuGetErrorString, "cuGetErrorString", 0},
  };
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i)
    if (!resolve(symbols[i].slot, symbols[i].name, symbols[i].required))
      return;
  if (!check(cuda.cuInit(0), "cannot initialize the CUDA driver"))
    return;
  int devices = 0;
  if (!check(cuda.cuDeviceGetCount(&devices), "cannot count CUDA devices"))
    return;
  if (devices < 1) {
    fail("the CUDA driver sees no GPU");
    return;
  }
  CUdevice device;
  if (!check(cuda.cuDeviceGet(&device, 0), "cannot open CUDA device 0") ||
      !check(cuda.cuDevicePrimaryCtxRetain(&cuda.context, device),
             "cannot create a context on CUDA device 0") ||
      !check(cuda.cuCtxSetCurrent(cuda.context),
             "cannot use the context of CUDA device 0"))
    return;
  check(cuda.cuStreamCreate(&cuda.stream, 0), "cannot create a CUDA stream");
}

/* Opens the driver once, and makes the context current on this thread
 * (the runtime's callers may be any threads). */
static int enter(void) {
  pthread_once(&cuda.once, open_driver);
  if (cuda.failed)
    return 0;
  return check(cuda.cuCtxSetCurrent(cuda.context),
               "cannot use the context of CUDA device 0");
}

int tfm_cuda_ready(void) { return enter(); }

const char *tfm_cuda_error(void) { return cuda.failed ? cuda.error : NULL; }

void *tfm_cuda_alloc(size_t bytes) {
  if (!enter())
    return NULL;
  CUdeviceptr device = 0;
  CUresult result = cuda.cuMemAllocAsync
                        ? cuda.cuMemAllocAsync(&device, bytes ? bytes : 1,
                                               cuda.stream)
                        : cuda.cuMemAlloc(&device, bytes ? bytes : 1);
  if (result != CUDA_SUCCESS) {
    fail("cannot allocate %zu bytes of GPU memory: %s", bytes,
         describe(result));
    return NULL;
  }
  return (void *)(uintptr_t)device;
}

void tfm_cuda_free(void *device) {
  /* Freed even after an error (a model released after a failed kernel):
   * only the first error is reported. */
  if (!device || !cuda.context)
    return;
  cuda.cuCtxSetCurrent(cuda.context);
  CUdeviceptr pointer = (CUdeviceptr)(uintptr_t)device;
  CUresult result = cuda.cuMemFreeAsync
                        ? cuda.cuMemFreeAsync(pointer, cuda.stream)
                        : cuda.cuMemFree(pointer);
  check(result, "cannot free GPU memory");
}

/* Queues a copy on the stream (either side host or device memory). */
static int enqueue_copy(void *to, const void *from, size_t bytes,
                        const char *what) {
  return check(cuda.cuMemcpyAsync((CUdeviceptr)(uintptr_t)to,
                                  (CUdeviceptr)(uintptr_t)from, bytes,
                                  cuda.stream),
               what);
}

static int copy(void *to, const void *from, size_t bytes, const char *what) {
  if (!enter())
    return 0;
  if (bytes == 0)
    return 1;
  return enqueue_copy(to, from, bytes, what) &&
         check(cuda.cuStreamSynchronize(cuda.stream), what);
}

int tfm_cuda_upload(void *device, const void *host, size_t bytes) {
  return copy(device, host, bytes, "cannot copy to the GPU");
}

int tfm_cuda_download(void *host, const void *device, size_t bytes) {
  return copy(host, device, bytes, "cannot copy from the GPU");
}

int tfm_cuda_move(void *to, const void *from, size_t bytes) {
  static const char what[] = "cannot move GPU memory";
  if (!enter())
    return 0;
  uintptr_t t = (uintptr_t)to, f = (uintptr_t)from;
  if (bytes == 0 || t == f)
    return 1;
  if (t + bytes <= f || f + bytes <= t)
    return enqueue_copy(to, from, bytes, what);
  /* Overlapping (a copy's are undefined): through a scratch buffer. */
  void *scratch = tfm_cuda_alloc(bytes);
  int moved = scratch && enqueue_copy(scratch, from, bytes, what) &&
              enqueue_copy(to, scratch, bytes, what);
  tfm_cuda_free(scratch);
  return moved;
}

int tfm_cuda_zero(void *device, size_t bytes) {
  return enter() && check(cuda.cuMemsetD8Async((CUdeviceptr)(uintptr_t)device,
                                                0, bytes, cuda.stream),
                          "cannot clear GPU memory");
}

int tfm_cuda_synchronize(void) {
  return enter() && check(cuda.cuStreamSynchronize(cuda.stream),
                          "a GPU kernel failed");
}

/*===--- TFM_CUDA_PROFILE: where a model's GPU time goes --------------===*/

/* With TFM_CUDA_PROFILE set, every launch waits for its kernel, and the
 * kernels' wall times (launch to completion, per kernel name) are printed
 * to stderr at exit, the costliest first (20 of them; TFM_CUDA_PROFILE=all
 * prints every kernel): a profile without the CUDA toolkit's tools. The
 * waiting costs what the launches overlapped. */
enum { kMaxProfiled = 4096 };
typedef struct {
  void *function;
  char *name;
  double seconds;
  long long launches;
  intptr_t grid[3], block[3]; /* of the last launch */
} profiled_kernel;
static struct {
  int enabled; /* -1: not yet read from the environment */
  int count;
  profiled_kernel kernels[kMaxProfiled];
} profile = {-1};

static int profiling(void) {
  if (profile.enabled < 0)
    profile.enabled = getenv("TFM_CUDA_PROFILE") != NULL;
  return profile.enabled;
}

static int by_time(const void *a, const void *b) {
  double x = ((const profiled_kernel *)a)->seconds;
  double y = ((const profiled_kernel *)b)->seconds;
  return (x < y) - (x > y);
}

static void print_profile(void) {
  double total = 0;
  long long launches = 0;
  for (int i = 0; i < profile.count; ++i) {
    total += profile.kernels[i].seconds;
    launches += profile.kernels[i].launches;
  }
  qsort(profile.kernels, (size_t)profile.count, sizeof profile.kernels[0],
        by_time);
  fprintf(stderr, "TFM_CUDA_PROFILE: %lld launches, %.3f s in kernels\n",
          launches, total);
  const char *setting = getenv("TFM_CUDA_PROFILE");
  int shown = setting && strcmp(setting, "all") == 0 ? profile.count : 20;
  for (int i = 0; i < profile.count && i < shown; ++i)
    fprintf(stderr, "  %8.3f ms %6lld x %s (grid %ld,%ld,%ld block %ld,%ld,%ld)\n",
            profile.kernels[i].seconds * 1e3, profile.kernels[i].launches,
            profile.kernels[i].name, (long)profile.kernels[i].grid[0],
            (long)profile.kernels[i].grid[1], (long)profile.kernels[i].grid[2],
            (long)profile.kernels[i].block[0],
            (long)profile.kernels[i].block[1],
            (long)profile.kernels[i].block[2]);
}

static profiled_kernel *find_kernel(void *function) {
  for (int i = 0; i < profile.count; ++i)
    if (profile.kernels[i].function == function)
      return &profile.kernels[i];
  return NULL;
}

/* Generated code looks each kernel up before each launch. */
static void remember_kernel(void *function, const char *name) {
  if (!profiling() || profile.count >= kMaxProfiled || find_kernel(function))
    return;
  if (profile.count == 0)
    atexit(print_profile);
  profile.kernels[profile.count].function = function;
  profile.kernels[profile.count].name = strdup(name);
  ++profile.count;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void account(void *function, double seconds, const intptr_t grid[3],
                    const intptr_t block[3]) {
  profiled_kernel *kernel = find_kernel(function);
  if (kernel) {
    kernel->seconds += seconds;
    ++kernel->launches;
    memcpy(kernel->grid, grid, sizeof kernel->grid);
    memcpy(kernel->block, block, sizeof kernel->block);
  }
}

/*===--- What generated code calls -----------------------------------===*/

void *mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  return mgpuModuleLoadJIT(data, 3);
}

void *mgpuModuleLoadJIT(void *ptx, int optimization_level) {
  (void)optimization_level; /* the driver's default JIT level is the best */
  if (!enter())
    return NULL;
  char log[4096] = "";
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule module = NULL;
  CUresult result = cuda.cuModuleLoadDataEx(&module, ptx, 2, options, values);
  if (result != CUDA_SUCCESS) {
    fail("the CUDA driver rejected a kernel module's PTX: %s%s%s",
         describe(result), log[0] ? ": " : "", log);
    return NULL;
  }
  return module;
}

void mgpuModuleUnload(void *module) {
  /* At exit, after the driver may be gone: nothing to report to. */
  if (module && !cuda.failed)
    cuda.cuModuleUnload((CUmodule)module);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module || !enter())
    return NULL;
  CUfunction function = NULL;
  CUresult result = cuda.cuModuleGetFunction(&function, (CUmodule)module, name);
  if (result != CUDA_SUCCESS) {
    /* Not always a missing kernel: after a kernel's fault every call of
     * the context fails with that fault's error, which says so. */
    fail("kernel %s could not be loaded from its module: %s (CUDA error %d)",
         name, describe(result), result);
    return NULL;
  }
  remember_kernel(function, name);
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                      intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                      intptr_t block_z, int32_t shared_bytes, void *stream,
                      void **params, void **extra, size_t num_params) {
  (void)stream;
  (void)num_params;
  if (!function || !enter())
    return;
  /* A loop of no iterations launches nothing (the driver refuses an
   * empty grid). */
  if (grid_x <= 0 || grid_y <= 0 || grid_z <= 0 || block_x <= 0 ||
      block_y <= 0 || block_z <= 0)
    return;
  double start = profiling() ? now() : 0;
  check(cuda.cuLaunchKernel((CUfunction)function, (unsigned)grid_x,
                            (unsigned)grid_y, (unsigned)grid_z,
                            (unsigned)block_x, (unsigned)block_y,
                            (unsigned)block_z, (unsigned)shared_bytes,
                            cuda.stream, params, extra),
        "cannot launch a GPU kernel");
  if (profiling() && check(cuda.cuStreamSynchronize(cuda.stream),
                           "a GPU kernel failed"))
    account(function, now() - start, (intptr_t[3]){grid_x, grid_y, grid_z},
            (intptr_t[3]){block_x, block_y, block_z});
}

/* Generated code brackets each launch with a stream of its own; all of a
 * model's work goes to the one stream instead, in order, so that nothing
 * waits until a copy to the host does. */
void *mgpuStreamCreate(void) { return enter() ? cuda.stream : NULL; }
void mgpuStreamDestroy(void *stream) { (void)stream; }
void mgpuStreamSynchronize(void *stream) { (void)stream; }

void mgpuMemcpy(void *to, void *from, size_t bytes, void *stream) {
  (void)stream;
  copy(to, from, bytes, "a GPU kernel or copy failed");
}
