/*===- kernels_panel_gemm.h - the f32 panel GEMM for other kernels -*- C -*-===//
 *
 * The panel GEMM's loops (kernels_panel_gemm.c) over one f32 panel that
 * another kernel built: the block kernels widen int8/int4 block panels
 * into one where that multiplies faster than integer products
 * (kernels_blocks.c).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_KERNELS_PANEL_GEMM_H
#define TFM_RUNTIME_KERNELS_KERNELS_PANEL_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C[m, 0:n) = A[m, k] · Wᵀ (+ bias[0:n)) over W in consecutive f32
 * panels of TFM_PANEL_WIDTH (runtime_kernels.h) features, panels[p][k][j]
 * = W[32p + j][k] (features past `n` in the last are ignored), on the
 * calling thread. bias: NULL for none. */
void tfm_panel_gemm_f32_serial(int64_t m, int64_t n, int64_t k,
                               const float *a, int64_t lda, const float *bias,
                               const float *panels, float *c, int64_t ldc);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_KERNELS_KERNELS_PANEL_GEMM_H */
