/*===- weight_formats.h - how narrow weights lie in the blob -----*- C -*-===//
 *
 * The storage of weights that tfm-quantize-weights narrows, as the
 * packager writes them (codegen/linalg/WeightFormats.cpp) and the kernels read
 * them (kernels_panel_gemm.c, kernels_blocks.c). One header for both, so
 * that a change shows everywhere at once.
 *
 * bf16 and f16 matrices that only GEMMs read are panels like f32 ones
 * (runtime_kernels.h: panels[p][k][j] = W[32p + j][k]), two bytes an
 * element; the kernels widen them in registers.
 *
 * Block formats (#tfm.block_quant) are always stored as block panels of
 * TFM_BLOCK_PANEL_ROWS rows. A row is cut into blocks of TFM_BLOCK_SIZE
 * elements (the last zero-padded); each row's block has an f16 scale
 * (and, for Q4_1, an f16 minimum). Panel p (rows 16p .. 16p + 15, the last
 * panel's missing rows zero) holds first the scales of all its blocks,
 * then Q4_1's minimums, then their codes:
 *
 *   scales[b][r]            f16, block b of row 16p + r
 *   mins[b][r]              f16, Q4_1 only
 *   codes[b][...]           TFM_BLOCK_CODE_BYTES(format) bytes per block
 *
 * Codes of a block are in groups of four consecutive elements of a row,
 * so that one AVX-512 VNNI instruction (vpdpbusd: 16 lanes, each a dot
 * product of four unsigned by four signed bytes) multiplies a group for
 * all 16 rows:
 *
 * - Q8_0, w = scale · q, q in [-127, 127]: eight groups of 64 bytes; byte
 *   4r + i of group g is q[16p + r][32b + 4g + i] + 128 (unsigned, so that
 *   it is vpdpbusd's unsigned operand; the kernel subtracts 128 times the
 *   sum of the activations' block).
 * - Q4_0, w = scale · (q - 8), q in [0, 15]: four 64-byte vectors; byte
 *   4r + i of vector v holds group 2v in its low nibble and group 2v + 1
 *   in its high nibble (element 32b + 8v + i, and 32b + 8v + 4 + i).
 * - Q4_1, w = scale · q + min, q in [0, 15]: codes as Q4_0's (the kernel
 *   adds min times the activations' block sum instead of subtracting 8
 *   scales of it).
 * - Q4_K (GGUF's, its blocks copied), w = d · scale · q - dmin · min, q in
 *   [0, 15]: codes as Q4_0's; rows are whole super-blocks of 8 blocks
 *   (256 elements), and the panel's metadata is, for S = blocks / 8
 *   super-blocks:
 *
 *     d[s][r], dmin[s][r]     f16, super-block s of row 16p + r
 *     scales[b][r], mins[b][r] uint8 (6 bits), block b of row 16p + r
 *
 *   40 bytes a block for 16 rows against Q4_1's 64 (4.625 bits a weight).
 * - Q5_K (GGUF's, its blocks copied), w = d · scale · q - dmin · min, q in
 *   [0, 31]: Q4_K's metadata; its codes are Q4_0's nibbles (256 bytes: the
 *   low 4 bits) followed by one 64-byte vector of fifth bits: bit 2v of
 *   byte 4r + i is that of the low nibble of byte 4r + i of nibble vector
 *   v, bit 2v + 1 that of its high nibble. 40 bytes a block for 16 rows,
 *   320 of codes (5.625 bits a weight).
 * - Q6_K (GGUF's, its blocks copied), w = d · scale · (q - 32), q in
 *   [0, 63]: rows are whole super-blocks of 8 blocks; each block has a
 *   signed 8-bit scale per half (elements 0-15, 16-31). Its codes are
 *   Q4_0's nibbles (256 bytes: the low 4 bits) followed by two 64-byte
 *   vectors of the high 2 bits: byte 4r + i of vector h holds, from bit 0
 *   up, those of the low and the high nibble of byte 4r + i of nibble
 *   vector 2h, then of nibble vector 2h + 1. Its metadata:
 *
 *     d[s][r]                 f16, super-block s of row 16p + r
 *     scales[b][half][r]      int8, half of block b of row 16p + r
 *
 *   36 bytes a block for 16 rows, 384 of codes (6.5625 bits a weight).
 * - MXFP4 (OCP's, as gpt-oss and GGUF store it; its blocks copied),
 *   w = 2^(e - 127) · FP4[q], q an E2M1 code in [0, 15] naming
 *   {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, ..., -6}: its codes are Q4_0's
 *   nibbles; its metadata is one E8M0 exponent byte per block and row,
 *
 *     exponents[b][r]         uint8, block b of row 16p + r
 *
 *   16 bytes a block for 16 rows, 256 of codes (4.25 bits a weight, as in
 *   the file). The kernels map a code through TFM_MXFP4_DOUBLED (twice
 *   its value: integers) and scale by 2^(e - 128).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_WEIGHT_FORMATS_H
#define TFM_WEIGHT_FORMATS_H

#include <stdint.h>

/* The block formats (tfm::BlockFormat's values). */
typedef enum {
  TFM_BLOCKS_Q8_0 = 0,
  TFM_BLOCKS_Q4_0 = 1,
  TFM_BLOCKS_Q4_1 = 2,
  TFM_BLOCKS_Q4_K = 3,
  TFM_BLOCKS_Q6_K = 4,
  TFM_BLOCKS_Q5_K = 5,
  TFM_BLOCKS_MXFP4 = 6
} tfm_block_format;

#define TFM_BLOCK_SIZE 32
#define TFM_BLOCK_PANEL_ROWS 16
/* Blocks per Q4_K, Q5_K and Q6_K super-block. */
#define TFM_K_SUPER_BLOCKS 8
/* Bytes of one block's codes for the 16 rows of a panel. */
#define TFM_BLOCK_CODE_BYTES(format)                                           \
  ((format) == TFM_BLOCKS_Q8_0 ? TFM_BLOCK_PANEL_ROWS * TFM_BLOCK_SIZE         \
   : (format) == TFM_BLOCKS_Q6_K                                               \
       ? TFM_BLOCK_PANEL_ROWS * TFM_BLOCK_SIZE * 3 / 4                         \
   : (format) == TFM_BLOCKS_Q5_K                                               \
       ? TFM_BLOCK_PANEL_ROWS * TFM_BLOCK_SIZE * 5 / 8                         \
       : TFM_BLOCK_PANEL_ROWS * TFM_BLOCK_SIZE / 2)
/* Bytes of one block's scales for the 16 rows of a panel (f16 each). */
#define TFM_BLOCK_SCALE_BYTES (TFM_BLOCK_PANEL_ROWS * 2)
/* Bytes of one block's scales and minimums for a panel's 16 rows (Q4_K,
 * Q5_K: its own 6-bit ones, and an eighth of its super-block's d and dmin;
 * Q6_K: a scale per half, and an eighth of its super-block's d). */
#define TFM_BLOCK_META_BYTES(format)                                           \
  ((format) == TFM_BLOCKS_Q4_1 ? 2 * TFM_BLOCK_SCALE_BYTES                     \
   : (format) == TFM_BLOCKS_Q4_K || (format) == TFM_BLOCKS_Q5_K                \
       ? 2 * TFM_BLOCK_PANEL_ROWS +                                            \
             2 * TFM_BLOCK_SCALE_BYTES / TFM_K_SUPER_BLOCKS                    \
   : (format) == TFM_BLOCKS_Q6_K                                               \
       ? 2 * TFM_BLOCK_PANEL_ROWS + TFM_BLOCK_SCALE_BYTES / TFM_K_SUPER_BLOCKS \
   : (format) == TFM_BLOCKS_MXFP4 ? TFM_BLOCK_PANEL_ROWS                     \
       : TFM_BLOCK_SCALE_BYTES)

/* MXFP4's E2M1 values doubled, by code: integers in [-12, 12]. */
#define TFM_MXFP4_DOUBLED                                                      \
  { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 }

/* 2^(e - 128), MXFP4's block scale for its doubled values, exactly (e 0
 * and 1 give subnormals). e = 255, a NaN in E8M0, never reaches a kernel:
 * the frontend refuses it. */
static inline float tfm_e8m0_half(uint8_t e) {
  union {
    uint32_t bits;
    float value;
  } scale;
  scale.bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
  return scale.value;
}

/* Blocks of a row of `cols` elements. */
static inline int64_t tfm_blocks_per_row(int64_t cols) {
  return (cols + TFM_BLOCK_SIZE - 1) / TFM_BLOCK_SIZE;
}
/* Bytes of one block panel of a matrix with `cols` columns. */
static inline int64_t tfm_block_panel_bytes(int format, int64_t cols) {
  return tfm_blocks_per_row(cols) *
         (TFM_BLOCK_META_BYTES(format) + TFM_BLOCK_CODE_BYTES(format));
}
/* Bytes of a [rows, cols] matrix in block panels. */
static inline int64_t tfm_block_matrix_bytes(int format, int64_t rows,
                                             int64_t cols) {
  int64_t panels = (rows + TFM_BLOCK_PANEL_ROWS - 1) / TFM_BLOCK_PANEL_ROWS;
  return panels * tfm_block_panel_bytes(format, cols);
}

/* GGUF Q4_K's (and Q5_K's) 6-bit scale and min of sub-block `j` (0..7) from its
 * 12 packed bytes: sub-blocks 0-3 hold theirs in the low 6 bits of bytes j and
 * j + 4; 4-7 take 4 low bits from byte j + 4 and 2 high bits from the top
 * of bytes j - 4 (scale) and j (min). The packager (into q4_k panels) and
 * the frontend (decoding Q4_K tensors) both unpack them with this. */
static inline void tfm_q4k_scale_min(int j, const uint8_t *packed, int *scale,
                                     int *min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = (packed[j + 4] & 0xf) | ((packed[j - 4] >> 6) << 4);
    *min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

#endif /* TFM_WEIGHT_FORMATS_H */
