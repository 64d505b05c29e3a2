/*===- kernels_blocks_internal.h - what the block kernels share -*- C -*-===//
 *
 * kernels_blocks.c (activations, plain C, dispatch) and its instruction-set
 * paths, x86/blocks_avx2.c and x86/blocks_vnni.c, each compiled with its
 * own -m flags: the job they share, the block panels' parts (the layout is
 * in tfm/weight_formats.h) and each path's entry points.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_KERNELS_BLOCKS_INTERNAL_H
#define TFM_RUNTIME_KERNELS_KERNELS_BLOCKS_INTERNAL_H

#include "runtime/kernels/kernels_panel_gemm.h"
#include "tfm/half_floats.h"
#include "tfm/runtime_kernels.h"
#include "tfm/weight_formats.h"

#include <stddef.h>
#include <stdint.h>

enum {
  kRows = TFM_BLOCK_PANEL_ROWS, /* outputs per panel */
  kBlock = TFM_BLOCK_SIZE,
  kTile = 6, /* rows of A per pass over a panel */
  /* q8_channel's with VNNI (job->channel): one int32 chain a row and
   * panel, 16 of the 32 registers, and 128- and 512-row products in whole
   * tiles */
  kChannelTile = 8,
};

/* Rows of A quantized per block: codes[row][k padded to whole blocks],
 * scales and code sums [row][block], and the sums of each half of a block
 * [row][block][2] (q6_k's scales are per half). For q8_channel, rows are
 * quantized per row (every block's scale the row's); for its VNNI tile
 * alone, only row_sums [row] (each row's code sum) and each row's first
 * scale are written. */
typedef struct {
  int8_t *codes;
  float *scales;
  int32_t *sums;
  int32_t *half_sums;
  int32_t *row_sums;
} quantized_rows;

typedef struct {
  const uint8_t *weights;
  int format; /* q8_channel is read as the q8_0 its layout is */
  /* q8_channel with rows of at most kChannelMaxK: one scale a row for
   * weights and activations, so that a row's products stay int32 across
   * the row and are scaled once */
  int channel;
  int64_t m, n, k, blocks, panel_bytes;
  quantized_rows x;
  const float *bias; /* NULL: none */
  float *c;
  int64_t ldc;
  const float *a; /* the f32 activations, for the widened path */
  int64_t lda;
  float *widened; /* the widened path's f32 panel per thread */
} block_job;

/* Whether the format is a K-quant with minimums (q4_k, q5_k): d · scale
 * and dmin · min per block, d and dmin per super-block. */
static inline int is_k_with_min(int format) {
  return format == TFM_FORMAT_Q4_K || format == TFM_FORMAT_Q5_K;
}

/* Elements of a row up to which a q8_channel product's int32 sums hold
 * its result: vpdpbusd's sums wrap modulo 2^32, and so does taking away
 * the code offset's correction, so only the result must fit: the sum of
 * a row's products of codes, each at most 127 · 127 = 16129 in
 * magnitude, fits for up to 133,143 of them (and the correction, 128
 * times the activations' code sum, up to 132,104). Longer rows take the
 * per-block path, which q8_channel's equal block scales also serve. */
enum { kChannelMaxK = 131072 };

/* Whether a block has a minimum to add (times the activations' sum). */
static inline int has_min(int format) {
  return format == TFM_FORMAT_Q4_1 || is_k_with_min(format);
}

/* The weight codes' offset that vpdpbusd's unsigned operand needs. */
static inline int32_t code_offset(int format) {
  switch (format) {
  case TFM_FORMAT_Q8_0:
    return 128;
  case TFM_FORMAT_Q4_0:
    return 8;
  case TFM_FORMAT_Q6_K:
    return 32; /* subtracted per half: two scales */
  case TFM_FORMAT_MXFP4:
    return 12; /* TFM_MXFP4_CODE_LIST's */
  default: return 0;
  }
}

/* MXFP4's codes as the kernels multiply them: each E2M1 nibble's doubled
 * value (TFM_MXFP4_DOUBLED) plus 12, unsigned for vpmaddubsw and vpdpbusd;
 * the weight is 2^(e - 128) · (code - 12). A byte shuffle maps a vector of
 * nibbles at once. */
#define TFM_MXFP4_CODE_LIST 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0

/* Where a panel's block codes start, past its scales (and minimums). */
static inline int64_t codes_start(int format, int64_t blocks) {
  return blocks * tfm_block_meta_bytes(format);
}

/* A block panel's parts (weight_formats.h): f16 scales [block][row]
 * (q4_k, q5_k, q6_k: their super-blocks' d [super-block][row]; none for
 * mxfp4, whose E8M0 exponents [block][row] are its block_scales), minimums
 * after them (q4_1: f16 [block][row]; q4_k, q5_k: dmin [super-block][row];
 * NULL for other formats), q4_k's and q5_k's own 6-bit scales and
 * minimums [block][row] and
 * q6_k's int8 scales [block][half][row] (NULL for others), then the codes,
 * tfm_block_code_bytes(format) a block. */
typedef struct {
  const uint16_t *scales, *mins;
  const uint8_t *block_scales, *block_mins;
  const uint8_t *codes;
} panel_parts;

static inline panel_parts parts_of(const uint8_t *panel, int format, int64_t blocks) {
  const uint16_t *scales = (const uint16_t *)panel;
  panel_parts parts = {scales, NULL, NULL, NULL,
                       panel + codes_start(format, blocks)};
  if (format == TFM_FORMAT_Q4_1)
    parts.mins = scales + blocks * kRows;
  if (is_k_with_min(format)) {
    int64_t supers = blocks / TFM_K_SUPER_BLOCKS;
    parts.mins = scales + supers * kRows;
    parts.block_scales = (const uint8_t *)(parts.mins + supers * kRows);
    parts.block_mins = parts.block_scales + blocks * kRows;
  }
  if (format == TFM_FORMAT_Q6_K)
    parts.block_scales =
        (const uint8_t *)(scales + blocks / TFM_K_SUPER_BLOCKS * kRows);
  if (format == TFM_FORMAT_MXFP4) {
    parts.scales = NULL;
    parts.block_scales = panel;
  }
  return parts;
}

/* Row r's scale of block b, and the minimum added to its weights (0 for
 * formats without): q4_k's and q5_k's are d · scale and -dmin · min,
 * mxfp4's 2^(e - 128) (for its codes' doubled values). */
static inline float block_scale(int format, const panel_parts *parts, int64_t b,
                         int r) {
  if (format == TFM_FORMAT_MXFP4)
    return tfm_e8m0_half(parts->block_scales[b * kRows + r]);
  if (!is_k_with_min(format))
    return tfm_f16_to_float(parts->scales[b * kRows + r]);
  return tfm_f16_to_float(parts->scales[b / TFM_K_SUPER_BLOCKS * kRows + r]) *
         (float)parts->block_scales[b * kRows + r];
}
/* Row r's q6_k scale of half `part` (elements 16·part .. + 15) of block
 * b: d · scale. */
static inline float q6_scale(const panel_parts *parts, int64_t b, int part, int r) {
  return tfm_f16_to_float(parts->scales[b / TFM_K_SUPER_BLOCKS * kRows + r]) *
         (float)(int8_t)parts->block_scales[(2 * b + part) * kRows + r];
}
static inline float block_min(int format, const panel_parts *parts, int64_t b,
                       int r) {
  if (format == TFM_FORMAT_Q4_1)
    return tfm_f16_to_float(parts->mins[b * kRows + r]);
  if (!is_k_with_min(format))
    return 0.0f;
  return -tfm_f16_to_float(parts->mins[b / TFM_K_SUPER_BLOCKS * kRows + r]) *
         (float)parts->block_mins[b * kRows + r];
}

/* Writes one tile's outputs (rows × 16, row-major in `tile`) to C, plus
 * the bias; a last, partial panel writes only its valid columns. */
static inline void store_tile(const block_job *job, int64_t p, int64_t i0, int rows,
                       const float *tile) {
  int64_t first = p * kRows;
  int64_t cols = job->n - first < kRows ? job->n - first : kRows;
  for (int r = 0; r < rows; ++r) {
    float *out = job->c + (i0 + r) * job->ldc + first;
    for (int64_t j = 0; j < cols; ++j)
      out[j] = tile[r * kRows + j] + (job->bias ? job->bias[first + j] : 0);
  }
}


/* Without VNNI, products of many rows multiply faster as f32 FMAs than as
 * integer sums: AVX2's vpmaddubsw needs the sign trick and a vpmaddwd per
 * product vector, and a 124 M LLaMA's int8 prefill ran at 0.76x its f32
 * prefill on a Zen 2. So there each pair of block panels is widened into
 * one f32 panel of 32 features (panel[k][j]), which the panel GEMM
 * multiplies by every row of A: one pass of widening per call, shared by
 * all of its rows. */
enum { kWidenedPanel = TFM_PANEL_WIDTH };
_Static_assert(kWidenedPanel == 2 * kRows, "a widened panel: two block panels");

/* The AVX2 path (x86/blocks_avx2.c): a tile of up to kTile rows of A over
 * panel p, one row over panels [p0, p1), and block panel p widened into
 * columns column0.. of an f32 panel. */
void tfm_blocks_tile_avx2(const block_job *job, int64_t p, int64_t i0,
                          int rows);
void tfm_blocks_row_avx2(const block_job *job, int64_t p0, int64_t p1);
void tfm_blocks_widen_panel_avx2(const block_job *job, int64_t p, int column0,
                                 float *out);
/* The AVX-512 VNNI path (x86/blocks_vnni.c): as AVX2's, a tile over one or
 * two panels. */
void tfm_blocks_row_vnni(const block_job *job, int64_t p0, int64_t p1);
void tfm_blocks_tile_vnni(const block_job *job, int64_t p, int64_t i0,
                          int rows, int panels);

#endif /* TFM_RUNTIME_KERNELS_KERNELS_BLOCKS_INTERNAL_H */
