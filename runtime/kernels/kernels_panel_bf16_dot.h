/*===- kernels_panel_bf16_dot.h - bf16 panels by AVX-512 BF16 ----*- C -*-===//
 *
 * The several-row product over bf16 panels with vdpbf16ps: activations
 * rounded to bf16 (as a BF16 model computes), two depths per instruction.
 * Used by kernels_panel_gemm.c where the CPU has AVX512_BF16 and the
 * instruction outruns widening the panels into f32 FMAs (AMD's Zen 4 and
 * 5, not Intel's Xeons); tests switch it on and off to check both paths
 * on the machine that runs them.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_KERNELS_PANEL_BF16_DOT_H
#define TFM_RUNTIME_KERNELS_KERNELS_PANEL_BF16_DOT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether products over bf16 panels of more than one row use vdpbf16ps:
 * by default where the CPU has it and it pays off (AMD); the environment
 * variable TFM_BF16_DOT=1 asks for it wherever the CPU has it, =0 never. */
int tfm_bf16_dot_enabled(void);
/* Turns the vdpbf16ps path on (where the CPU has it) or off; returns
 * whether it was on. */
int tfm_bf16_dot_use(int enabled);

/* C[m, n] = A[m, k] · W[n, k] (+ bias) over W in bf16 panels of 32
 * (panels[p][k][j] = W[32p + j][k]), by vdpbf16ps. Returns 0 if it could
 * not (no AVX512_BF16, or no memory for A's bf16 copy), having written
 * nothing: the caller widens instead. */
/* Row `a` (depth k) as bf16 pairs of depths, `pairs[(k + 1) / 2]`: word
 * c holds a[2c] (low half, rounded to nearest even) and a[2c + 1] (zero
 * past an odd k). Only where the CPU has AVX512-BF16. */
void tfm_bf16_row_pairs(const float *a, int64_t k, uint32_t *pairs);

int tfm_panel_gemm_bf16_dot(int64_t m, int64_t n, int64_t k, const float *a,
                            int64_t lda, const float *bias,
                            const uint16_t *panels, float *c, int64_t ldc);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_KERNELS_KERNELS_PANEL_BF16_DOT_H */
