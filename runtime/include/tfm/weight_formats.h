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
 *   codes[b][...]           tfm_block_code_bytes(format) bytes per block
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
 * - Q8_CHANNEL (tfmc's own, no checkpoint stores it), int8 per channel:
 *   Q8_0's layout, its scales all equal along a row (the row's largest
 *   magnitude maps to 127), so that every reader of Q8_0 reads it as such;
 *   its kernels quantize activations per row as well and keep a row's
 *   products in int32 across the whole row, one scaling at the end
 *   (ONNX Runtime's quantize_dynamic per channel, at the VNNI peak).
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

#define TFM_BLOCK_SIZE 32
#define TFM_BLOCK_PANEL_ROWS 16
/* The GGML type number of a format no GGUF file stores. */
#define TFM_GGML_NONE 0xFFFFFFFFu
/* Blocks per Q4_K, Q5_K and Q6_K super-block. */
#define TFM_K_SUPER_BLOCKS 8
/* Bytes of one block's f16 scales for the 16 rows of a panel. */
#define TFM_BLOCK_SCALE_BYTES (TFM_BLOCK_PANEL_ROWS * 2)

/* How tfmc keeps a weight a checkpoint stores in a format: */
typedef enum {
  TFM_KEPT_FLOAT,      /* float panels (or rows) of its own width */
  TFM_KEPT_ENCODED,    /* block panels, also encoded from f32 values */
  TFM_KEPT_COPIED,     /* block panels copied from the file's blocks */
  TFM_KEPT_REQUANTIZED /* decoded and requantized to int8 (Q8_0 panels) */
} tfm_format_kept;

/* Every format a checkpoint may store a weight in, one row each, as
 * ggml's type_traits: the one table that the compiler's enum
 * (ir/WeightFormat.h: WeightFormat, which #tfm.block_quant, the frontend
 * and the packager all use), its names and the kernels' panel geometry
 * come from. Adding a format is a row here, its kernels and its tests.
 *
 *   NAME   the checkpoint's spelling (GGUF's, safetensors'): TFM_FORMAT_NAME
 *   GGML   GGML's type number in a GGUF file (TFM_GGML_NONE: tfmc's own
 *          format, which no checkpoint stores)
 *   ELEMS  elements of one of the file's blocks (1: a float)
 *   BYTES  bytes of one of the file's blocks
 *   KEPT   how tfmc keeps it (tfm_format_kept, without TFM_KEPT_)
 *   FORMAT the stored format's name in tfmc: #tfm.block_quant<FORMAT>
 *   DTYPE  what it is kept as, by tfm.checkpoint_dtype's and
 *          --weights-dtype's name. The formats no kernel reads are
 *          requantized into int8, within 1/254 of each block's peak of the
 *          file's numbers: four bits would add an error of the order of
 *          theirs (Q3_K into int4 or int4-min moved test logits 7x as far
 *          from the file's as int8 did); --weights-dtype=int4 asks for it.
 *   BITS   bits of a code in a block panel (0: not kept as blocks)
 *   CODES  bytes of one block's codes for a panel's 16 rows
 *   META   bytes of one block's scales and minimums for a panel's 16 rows
 *          (Q4_K, Q5_K: their 6-bit ones and an eighth of the
 *          super-block's d and dmin; Q6_K: a scale a half and an eighth
 *          of d; MXFP4: an exponent byte)
 *   JOIN   the dtype a weight of the format takes when a join (Q, K and V
 *          fused, gate and up) mixes it with others: a format copied from
 *          the file joins as the encoded one that holds it (Q4_K as
 *          int4-min: Q4_1's grid per block of 32, its f16 step rounded;
 *          Q5_K's 32 levels, Q6_K's 64 and MXFP4's uneven ones as int8);
 *          Q8_CHANNEL as int8, whose finer scales hold its values; any
 *          other as its DTYPE
 *
 * The rows' order is the enum's (GGUF's tensor counts in messages follow
 * it). */
#define TFM_WEIGHT_FORMATS(X)                                                  \
  /* NAME GGML ELEMS BYTES KEPT FORMAT DTYPE BITS CODES META JOIN */           \
  X(F32, 0, 1, 4, FLOAT, "f32", "f32", 0, 0, 0, "f32")                         \
  X(F16, 1, 1, 2, FLOAT, "f16", "f16", 0, 0, 0, "f16")                         \
  X(BF16, 30, 1, 2, FLOAT, "bf16", "bf16", 0, 0, 0, "bf16")                    \
  X(Q8_0, 8, 32, 34, ENCODED, "q8_0", "int8", 8, 512, 32, "int8")              \
  X(Q4_0, 2, 32, 18, ENCODED, "q4_0", "int4", 4, 256, 32, "int4")              \
  X(Q4_1, 3, 32, 20, ENCODED, "q4_1", "int4-min", 4, 256, 64, "int4-min")      \
  X(Q4_K, 12, 256, 144, COPIED, "q4_k", "q4_k", 4, 256, 40, "int4-min")        \
  X(Q6_K, 14, 256, 210, COPIED, "q6_k", "q6_k", 6, 384, 36, "int8")            \
  X(Q5_0, 6, 32, 22, REQUANTIZED, "q5_0", "int8", 0, 0, 0, "int8")             \
  X(Q5_1, 7, 32, 24, REQUANTIZED, "q5_1", "int8", 0, 0, 0, "int8")             \
  X(Q2_K, 10, 256, 84, REQUANTIZED, "q2_k", "int8", 0, 0, 0, "int8")           \
  X(Q3_K, 11, 256, 110, REQUANTIZED, "q3_k", "int8", 0, 0, 0, "int8")          \
  X(Q5_K, 13, 256, 176, COPIED, "q5_k", "q5_k", 5, 320, 40, "int8")            \
  X(IQ4_NL, 20, 32, 18, REQUANTIZED, "iq4_nl", "int8", 0, 0, 0, "int8")        \
  X(IQ4_XS, 23, 256, 136, REQUANTIZED, "iq4_xs", "int8", 0, 0, 0, "int8")      \
  X(MXFP4, 39, 32, 17, COPIED, "mxfp4", "mxfp4", 4, 256, 16, "int8")           \
  X(Q8_CHANNEL, TFM_GGML_NONE, 32, 34, ENCODED, "q8_channel", "int8-channel",  \
    8, 512, 32, "int8")

/* The formats, numbered as the table's rows; what compiled code passes the
 * block kernels (a block panel's format). */
typedef enum {
#define TFM_FORMAT_ENUM_ROW(NAME, GGML, ELEMS, BYTES, KEPT, FORMAT, DTYPE,     \
                            BITS, CODES, META, JOIN)                           \
  TFM_FORMAT_##NAME,
  TFM_WEIGHT_FORMATS(TFM_FORMAT_ENUM_ROW)
#undef TFM_FORMAT_ENUM_ROW
      TFM_FORMAT_COUNT
} tfm_weight_format;

/* A block's bytes in a panel of 16 rows, by format (zero where the format
 * is not kept in block panels). */
typedef struct {
  int16_t codes, meta;
} tfm_block_bytes;
static const tfm_block_bytes tfm_block_bytes_of[TFM_FORMAT_COUNT] = {
#define TFM_FORMAT_BYTES_ROW(NAME, GGML, ELEMS, BYTES, KEPT, FORMAT, DTYPE,    \
                             BITS, CODES, META, JOIN)                          \
  {CODES, META},
    TFM_WEIGHT_FORMATS(TFM_FORMAT_BYTES_ROW)
#undef TFM_FORMAT_BYTES_ROW
};

/* Bytes of one block's codes for the 16 rows of a panel. */
static inline int64_t tfm_block_code_bytes(int format) {
  return tfm_block_bytes_of[format].codes;
}
/* Bytes of one block's scales and minimums for the 16 rows of a panel. */
static inline int64_t tfm_block_meta_bytes(int format) {
  return tfm_block_bytes_of[format].meta;
}

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
         (tfm_block_meta_bytes(format) + tfm_block_code_bytes(format));
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
