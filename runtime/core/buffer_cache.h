/*===- buffer_cache.h - the heap of generated code ---------------*- C -*-===//
 *
 * Compiled models allocate their activations through MLIR's generic
 * allocation functions (finalize-memref-to-llvm with use-generic-functions):
 * _mlir_memref_to_llvm_alloc, _aligned_alloc and _free, which this file's
 * implementation serves. Freed buffers are kept, by size, and handed out
 * again: a model runs the same shapes over and over (every decode step,
 * every prompt of a length seen before), so after the first call it asks
 * the system for nothing. Fresh memory is what costs: glibc serves large
 * blocks with mmap and returns them with munmap, and the page faults of
 * touching them again took half of a prefill in the VMs measured.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CORE_BUFFER_CACHE_H
#define TFM_RUNTIME_CORE_BUFFER_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/tfm_model_abi.h"

/* What generated code calls (declared here for the runtime and tests). */
TFM_EXPORT void *_mlir_memref_to_llvm_alloc(size_t size);
TFM_EXPORT void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size);
TFM_EXPORT void _mlir_memref_to_llvm_free(void *buffer);
/* Device buffers of a --target=cuda model's generated code (MLIR's
 * gpu-to-llvm names them): the CUDA driver's memory, an allocation that
 * fails failing the call as a host one does. */
TFM_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream, int8_t host_shared);
TFM_EXPORT void mgpuMemFree(void *device, void *stream);

/* Tests: after `allocations` more successful allocations, the next one
 * fails (as if out of memory), then all succeed again; negative: none
 * fails (buffers the cache would hand out again count too). */
void tfm_buffer_fail_after(long long allocations);

/* A kernel's own allocation failed: inside a generated call, releases what
 * the call allocated and returns TFM_ERROR_OUT_OF_MEMORY from it (does not
 * return); outside one (a worker thread, a unit test), returns. */
void tfm_buffer_fail_call(void);

/* Releases a buffer that generated code returned (its `allocated`). */
void tfm_buffer_release(void *buffer);

/* Bytes held for reuse now (tests, statistics). */
size_t tfm_buffer_cache_bytes(void);

#endif /* TFM_RUNTIME_CORE_BUFFER_CACHE_H */
