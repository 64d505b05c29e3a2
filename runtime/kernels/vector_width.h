/*===- vector_width.h - which vectors the kernels keep in registers -*- C -*-===//
 *
 * The kernels are written for AVX-512: 16-float vectors and tiles sized
 * for its 32 registers. AVX2 has 16 registers of 8 floats, and GCC keeps
 * a 16-float vector there in memory, every operation a round trip through
 * the stack (the panel GEMM ran at 2 GFLOP/s, attention at a tenth of its
 * speed). The hot kernels therefore also have narrow variants (8-float
 * vectors, tiles for 16 registers), used where the CPU has no AVX-512.
 * Tests force the narrow variants to check them on AVX-512 machines too.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_VECTOR_WIDTH_H
#define TFM_RUNTIME_KERNELS_VECTOR_WIDTH_H

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the kernels use their narrow variants: where the CPU has no
 * AVX-512, unless the environment variable TFM_NARROW_KERNELS says 1 or 0
 * (narrow or wide whatever the CPU), or tfm_kernels_use_narrow said
 * otherwise. */
int tfm_kernels_narrow(void);
/* Makes the kernels use their narrow variants (1) or the wide ones (0);
 * returns whether they used the narrow ones before. */
int tfm_kernels_use_narrow(int narrow);

/* Whether the CPU is AMD's. Some kernel choices were measured to differ
 * by vendor on the same instruction set: vdpbf16ps against widening
 * (kernels_panel_bf16_dot.c) and the narrow GEMV's prefetch hint
 * (kernels_panel_gemm.c). */
int tfm_cpu_is_amd(void);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_KERNELS_VECTOR_WIDTH_H */
