/*===- cuda_driver_api.h - the CUDA driver API's types, as used here -*- C -*-===//
 *
 * The handle and result types of the CUDA driver API functions the runtime
 * calls (cuda_driver.c), declared from the API's documentation so that no
 * CUDA header is needed to build. The tests' fake driver defines its
 * functions with these same types: calls through a function pointer of
 * another type are undefined (UBSan checks them).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CUDA_CUDA_DRIVER_API_H
#define TFM_RUNTIME_CUDA_CUDA_DRIVER_API_H

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

enum { CUDA_SUCCESS = 0 };
/* CUjit_option values. */
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };

#endif /* TFM_RUNTIME_CUDA_CUDA_DRIVER_API_H */
