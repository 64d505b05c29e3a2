/*===- kernels_blocks.h - the block kernels' instruction sets ----*- C -*-===//
 *
 * kernels_blocks.c has one implementation per instruction set and picks
 * the best the CPU has on first use. Tests force each one in turn, so
 * that every path is checked on the machine that runs them.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_KERNELS_BLOCKS_H
#define TFM_RUNTIME_KERNELS_KERNELS_BLOCKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TFM_BLOCKS_ISA_SCALAR = 0, /* plain C */
  TFM_BLOCKS_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C (vpmaddubsw) */
  TFM_BLOCKS_ISA_VNNI = 2    /* AVX-512 BW/VL + VNNI (vpdpbusd) */
} tfm_blocks_isa;

/* The best instruction set this CPU runs. */
tfm_blocks_isa tfm_blocks_best_isa(void);
/* Makes the kernels use `isa` (at most the best); returns the one they
 * used before. Without a call, they use the best, or the one the
 * environment variable TFM_BLOCKS_ISA names (scalar, avx2, vnni) if that
 * is less. */
tfm_blocks_isa tfm_blocks_use_isa(tfm_blocks_isa isa);

/* Whether a product of `m` rows widens the blocks into f32 panels for the
 * panel GEMM under the instruction set in use (AVX2, many rows) instead
 * of multiplying integer codes: its result is then A times the widened
 * weights, without the activations' rounding to int8. */
int tfm_blocks_widens(int64_t m);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_KERNELS_KERNELS_BLOCKS_H */
