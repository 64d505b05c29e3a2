/*===- cuda_driver.h - the CUDA driver, opened at run time -------*- C -*-===//
 *
 * Models compiled with --target=cuda run their kernels through the CUDA
 * driver API, which the runtime opens with dlopen("libcuda.so.1") the first
 * time it is needed (TFM_CUDA_DRIVER names another file: tests point it at
 * a missing or a fake driver). Nothing here needs a GPU to build or link;
 * without a driver or a device every function fails with a message that
 * says so.
 *
 * All work goes to one stream of the first device's primary context, in
 * order: kernels are launched without waiting, and only a copy to the host
 * waits for the stream. Errors are sticky: after the first one (a driver
 * missing, a kernel module rejected, a launch failing), everything fails
 * with it, and tfm_cuda_error says what it was.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CUDA_CUDA_DRIVER_H
#define TFM_RUNTIME_CUDA_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/tfm_model_abi.h"

/* Opens the driver and the device (once); 1 when they work and no error
 * happened since, 0 otherwise (tfm_cuda_error says why). */
int tfm_cuda_ready(void);
/* The first error, or NULL. */
const char *tfm_cuda_error(void);

/* Device memory: NULL (with the error recorded) when it cannot be had. */
void *tfm_cuda_alloc(size_t bytes);
void tfm_cuda_free(void *device);
/* Copies to and from device memory, waiting for the stream; 1 on success. */
int tfm_cuda_upload(void *device, const void *host, size_t bytes);
int tfm_cuda_download(void *host, const void *device, size_t bytes);
/* Moves `bytes` within device memory as memmove does (in stream order);
 * 1 on success. */
int tfm_cuda_move(void *to, const void *from, size_t bytes);
/* Zeroes device memory (in stream order); 1 on success. */
int tfm_cuda_zero(void *device, size_t bytes);
/* Waits for everything launched so far; 1 when it all succeeded. */
int tfm_cuda_synchronize(void);

/* What generated code calls (MLIR's gpu-to-llvm lowering names them; the
 * upstream implementations, mlir_cuda_runtime, would need the CUDA
 * toolkit's libraries at link time). */
TFM_EXPORT void *mgpuModuleLoad(void *data, size_t size);
TFM_EXPORT void *mgpuModuleLoadJIT(void *ptx, int optimization_level);
TFM_EXPORT void mgpuModuleUnload(void *module);
TFM_EXPORT void *mgpuModuleGetFunction(void *module, const char *name);
TFM_EXPORT void mgpuLaunchKernel(void *function, intptr_t grid_x,
                                 intptr_t grid_y, intptr_t grid_z,
                                 intptr_t block_x, intptr_t block_y,
                                 intptr_t block_z, int32_t shared_bytes,
                                 void *stream, void **params, void **extra,
                                 size_t num_params);
TFM_EXPORT void *mgpuStreamCreate(void);
TFM_EXPORT void mgpuStreamDestroy(void *stream);
TFM_EXPORT void mgpuStreamSynchronize(void *stream);
TFM_EXPORT void mgpuMemcpy(void *to, void *from, size_t bytes, void *stream);

#endif /* TFM_RUNTIME_CUDA_CUDA_DRIVER_H */
