/*===- kernels_gemm.c - x·Wᵀ for generated code, through OpenBLAS -------===//
 *
 * Called by code that tfm-lower-matmul-to-runtime rewrote: C[m, n] +=
 * A[m, k] · B[n, k] with B a weight in the checkpoint's [out, in] layout.
 * OpenBLAS runs it on every core: sgemm for prefill, sgemv for the single
 * row of a decode step (memory-bound: it streams the weight once).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tfm_model_abi.h"

#include <cblas.h>

void _mlir_ciface_tfm_rt_matmul_nt(tfm_memref2d_f32 *a, tfm_memref2d_f32 *b,
                                   tfm_memref2d_f32 *c) {
  int64_t m = a->sizes[0], k = a->sizes[1], n = b->sizes[0];
  const float *pa = a->aligned + a->offset;
  const float *pb = b->aligned + b->offset;
  float *pc = c->aligned + c->offset;
  if (m == 0 || n == 0)
    return;
  int unit = a->strides[1] == 1 && b->strides[1] == 1 && c->strides[1] == 1;
  if (!unit) {
    /* Not a layout BLAS takes: plain loops (not produced by tfm today). */
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += pa[i * a->strides[0] + p * a->strides[1]] *
                 pb[j * b->strides[0] + p * b->strides[1]];
        pc[i * c->strides[0] + j * c->strides[1]] += sum;
      }
    return;
  }
  if (m == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)n, (blasint)k, 1.0f, pb,
                (blasint)b->strides[0], pa, 1, 1.0f, pc, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)n,
              (blasint)k, 1.0f, pa, (blasint)a->strides[0], pb,
              (blasint)b->strides[0], 1.0f, pc, (blasint)c->strides[0]);
}
