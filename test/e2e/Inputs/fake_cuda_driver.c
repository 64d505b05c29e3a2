/* A stand-in for libcuda.so.1 that fails the way real machines do, so
 * that the CUDA loader's error paths run without a GPU (cuda-target.test).
 * FAKE_CUDA_FAILURE picks the failure:
 *   no-device  cuInit reports CUDA_ERROR_NO_DEVICE (no GPU, or none visible)
 *   bad-ptx    a device works, but the driver rejects the kernels' PTX
 *   launch     modules load, every kernel launch fails */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The types runtime/cuda/cuda_driver.c calls these through: UBSan checks that a
 * call through a function pointer matches the callee's type. */
#include "runtime/cuda/cuda_driver_api.h"

enum {
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_LAUNCH_FAILED = 719
};

static int failure(const char *name) {
  const char *mode = getenv("FAKE_CUDA_FAILURE");
  return mode && strcmp(mode, name) == 0;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == CUDA_ERROR_NO_DEVICE      ? "no CUDA-capable device is detected"
          : error == CUDA_ERROR_INVALID_PTX  ? "a PTX JIT compilation failed"
          : error == CUDA_ERROR_LAUNCH_FAILED ? "unspecified launch failure"
                                             : "fake CUDA error";
  return CUDA_SUCCESS;
}
CUresult cuInit(unsigned flags) {
  (void)flags;
  return failure("no-device") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) { *count = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
/* Handles: addresses of these, never dereferenced. */
static int context, stream, module, function;
CUresult cuDevicePrimaryCtxRetain(CUcontext *out, CUdevice device) {
  (void)device;
  *out = (CUcontext)(void *)&context;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  (void)flags;
  *out = (CUstream)(void *)&stream;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }
CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n,
                            int *options, void **values) {
  (void)image;
  if (!failure("bad-ptx")) {
    *out = (CUmodule)(void *)&module;
    return CUDA_SUCCESS;
  }
  for (unsigned i = 0; i < n; ++i)
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      strcpy((char *)values[i], "ptxas fatal: unsupported .target");
  return CUDA_ERROR_INVALID_PTX;
}
CUresult cuModuleUnload(CUmodule m) { (void)m; return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  (void)m;
  (void)name;
  *out = (CUfunction)(void *)&function;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        CUstream s, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
  (void)smem, (void)s, (void)params, (void)extra;
  return CUDA_ERROR_LAUNCH_FAILED;
}
/* Host memory stands in for device memory: a static pool handed out in
 * order and never reused, so that nothing a failed model leaves allocated
 * counts as a leak under AddressSanitizer. */
static _Alignas(256) unsigned char pool[64 << 20];
static size_t pool_used;
CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes) {
  size_t size = (bytes + 255) / 256 * 256;
  if (size > sizeof pool - pool_used)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *out = (CUdeviceptr)(size_t)(pool + pool_used);
  pool_used += size;
  return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  (void)p;
  return CUDA_SUCCESS;
}
CUresult cuMemcpyAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                       CUstream s) {
  (void)s;
  memcpy((void *)(size_t)to, (const void *)(size_t)from, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t bytes,
                         CUstream s) {
  (void)s;
  memset((void *)(size_t)p, value, bytes);
  return CUDA_SUCCESS;
}
