/*===- kernels_panel_gemm.h - the panel GEMM's tile --------------*- C -*-===//
 *
 * kernels_panel_gemm.c keeps a tile of C in vector registers: 8 rows by 32
 * outputs where the CPU has AVX-512's 32 registers, 3 by 32 (the narrow
 * tile) where it has AVX2's 16. Tests force the narrow tile to check it on
 * machines with AVX-512 too.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_PANEL_GEMM_H
#define TFM_RUNTIME_KERNELS_PANEL_GEMM_H

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the panel GEMM use the narrow tile (1) or the wide one (0);
 * returns whether it used the narrow one before. Without a call, the
 * narrow tile is used where the CPU has no AVX-512. */
int tfm_panel_gemm_use_narrow(int narrow);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_KERNELS_PANEL_GEMM_H */
