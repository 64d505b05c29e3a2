/*===- kernels_blocks.c - x·Wᵀ over weights in int8/int4 blocks ---------===//
 *
 * Called where tfm-select-cpu-kernels found a weight in block panels
 * (#tfm.block_quant; the layout is in weight_formats.h): C[m, n] = A[m, k]
 * · W[n, k]ᵀ (+ bias). Decode reads the weight once per token, so what
 * matters is streaming its bytes (8.5 or 4.5 bits a weight) at memory
 * speed; prefill is compute-bound, so the products are integer ones:
 *
 * - each row of A is quantized per block of 32 like the weights (a scale,
 *   codes in [-127, 127], and their sum), once per call;
 * - a block's dot products are then exact int32 sums: with AVX-512 VNNI,
 *   vpdpbusd multiplies four weight codes of each of a panel's 16 rows by
 *   four broadcast activation codes and adds them in one instruction (64
 *   multiply-adds against an FMA's 16); AVX2 uses vpmaddubsw + vpmaddwd;
 * - each block's sum is scaled by the weight row's and the activation
 *   row's scales into f32 accumulators.
 *
 * vpdpbusd takes unsigned × signed bytes: weight codes are stored with an
 * offset (q8_0: +128; q4_0's nibbles are 0..15, offset 8; q6_k's codes
 * 0..63, offset 32), and the offset times the block's activation sum is
 * subtracted; q4_1's and q4_k's nibbles need no offset, and their minimum
 * times the activation sum is added in f32. GGUF's K-quants scale in two
 * levels: q4_k's blocks by d · scale (a 6-bit scale per block, an f16 d
 * per super-block of 8 blocks), q6_k's halves of a block each by their
 * own d · scale (so its activations' sums are kept per half too). The
 * result is the same on every path up to the order of the f32 additions.
 *
 * Panels are split over the runtime's threads; within a panel, rows of A
 * go a tile of up to 8 at a time, so that each weight vector loaded serves
 * them all. Without VNNI, products of many rows (prefill) multiply faster
 * as f32 FMAs: there pairs of block panels are widened into f32 panels
 * for the panel GEMM (kernels_panel_gemm.h) instead.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "tfm/half_floats.h"
#include "runtime/kernels/kernels_blocks.h"
#include "runtime/kernels/kernels_panel_gemm.h"
#include "tfm/runtime_kernels.h"
#include "runtime/kernels/simd.h"
#include "runtime/core/thread_pool.h"
#include "runtime/kernels/vector_width.h"
#include "tfm/weight_formats.h"

#include <immintrin.h>
#include <math.h>
#include <stdlib.h>

enum {
  kRows = TFM_BLOCK_PANEL_ROWS, /* outputs per panel */
  kBlock = TFM_BLOCK_SIZE,
  kTile = 6, /* rows of A per pass over a panel */
};

/* Rows of A quantized per block: codes[row][k padded to whole blocks],
 * scales and code sums [row][block], and the sums of each half of a block
 * [row][block][2] (q6_k's scales are per half). */
typedef struct {
  int8_t *codes;
  float *scales;
  int32_t *sums;
  int32_t *half_sums;
} quantized_rows;

typedef struct {
  const uint8_t *weights;
  int format;
  int64_t m, n, k, blocks, panel_bytes;
  quantized_rows x;
  const float *bias; /* NULL: none */
  float *c;
  int64_t ldc;
  const float *a; /* the f32 activations, for the widened path */
  int64_t lda;
  float *widened; /* the widened path's f32 panel per thread */
} block_job;

/* Whether a block has a minimum to add (times the activations' sum). */
static int has_min(int format) {
  return format == TFM_BLOCKS_Q4_1 || format == TFM_BLOCKS_Q4_K;
}

/* The weight codes' offset that vpdpbusd's unsigned operand needs. */
static int32_t code_offset(int format) {
  switch (format) {
  case TFM_BLOCKS_Q8_0: return 128;
  case TFM_BLOCKS_Q4_0: return 8;
  case TFM_BLOCKS_Q6_K: return 32; /* subtracted per half: two scales */
  default: return 0;
  }
}

/* Where a panel's block codes start, past its scales (and minimums). */
static int64_t codes_start(int format, int64_t blocks) {
  return blocks * TFM_BLOCK_META_BYTES(format);
}

/* A block panel's parts (weight_formats.h): f16 scales [block][row]
 * (q4_k, q6_k: their super-blocks' d [super-block][row]), minimums after
 * them (q4_1: f16 [block][row]; q4_k: dmin [super-block][row]; NULL for
 * other formats), q4_k's own 6-bit scales and minimums [block][row] and
 * q6_k's int8 scales [block][half][row] (NULL for others), then the codes,
 * TFM_BLOCK_CODE_BYTES(format) a block. */
typedef struct {
  const uint16_t *scales, *mins;
  const uint8_t *block_scales, *block_mins;
  const uint8_t *codes;
} panel_parts;

static panel_parts parts_of(const uint8_t *panel, int format, int64_t blocks) {
  const uint16_t *scales = (const uint16_t *)panel;
  panel_parts parts = {scales, NULL, NULL, NULL,
                       panel + codes_start(format, blocks)};
  if (format == TFM_BLOCKS_Q4_1)
    parts.mins = scales + blocks * kRows;
  if (format == TFM_BLOCKS_Q4_K) {
    int64_t supers = blocks / TFM_K_SUPER_BLOCKS;
    parts.mins = scales + supers * kRows;
    parts.block_scales = (const uint8_t *)(parts.mins + supers * kRows);
    parts.block_mins = parts.block_scales + blocks * kRows;
  }
  if (format == TFM_BLOCKS_Q6_K)
    parts.block_scales =
        (const uint8_t *)(scales + blocks / TFM_K_SUPER_BLOCKS * kRows);
  return parts;
}

/* Row r's scale of block b, and the minimum added to its weights (0 for
 * formats without): q4_k's are d · scale and -dmin · min. */
static float block_scale(int format, const panel_parts *parts, int64_t b,
                         int r) {
  if (format != TFM_BLOCKS_Q4_K)
    return tfm_f16_to_float(parts->scales[b * kRows + r]);
  return tfm_f16_to_float(parts->scales[b / TFM_K_SUPER_BLOCKS * kRows + r]) *
         (float)parts->block_scales[b * kRows + r];
}
/* Row r's q6_k scale of half `part` (elements 16·part .. + 15) of block
 * b: d · scale. */
static float q6_scale(const panel_parts *parts, int64_t b, int part, int r) {
  return tfm_f16_to_float(parts->scales[b / TFM_K_SUPER_BLOCKS * kRows + r]) *
         (float)(int8_t)parts->block_scales[(2 * b + part) * kRows + r];
}
static float block_min(int format, const panel_parts *parts, int64_t b,
                       int r) {
  if (format == TFM_BLOCKS_Q4_1)
    return tfm_f16_to_float(parts->mins[b * kRows + r]);
  if (format != TFM_BLOCKS_Q4_K)
    return 0.0f;
  return -tfm_f16_to_float(parts->mins[b / TFM_K_SUPER_BLOCKS * kRows + r]) *
         (float)parts->block_mins[b * kRows + r];
}

/* Writes one tile's outputs (rows × 16, row-major in `tile`) to C, plus
 * the bias; a last, partial panel writes only its valid columns. */
static void store_tile(const block_job *job, int64_t p, int64_t i0, int rows,
                       const float *tile) {
  int64_t first = p * kRows;
  int64_t cols = job->n - first < kRows ? job->n - first : kRows;
  for (int r = 0; r < rows; ++r) {
    float *out = job->c + (i0 + r) * job->ldc + first;
    for (int64_t j = 0; j < cols; ++j)
      out[j] = tile[r * kRows + j] + (job->bias ? job->bias[first + j] : 0);
  }
}

/*===- Activations ----------------------------------------------------===*/

typedef struct {
  const float *a;
  int64_t lda, k, blocks;
  quantized_rows x;
} quantize_job;

/* Each row's blocks of 32 as int8 codes, a scale and their sum. Defined
 * for 16-float vectors (AVX-512) and 8-float ones (AVX2, where GCC keeps
 * 16-float vectors in memory: vector_width.h). Codes round to the nearest
 * integer, ties to even, by adding and taking away 1.5 · 2^23 (|v| <=
 * 127). */
#define TFM_DEFINE_QUANTIZE_ROWS(NAME, VF, VI, LANES, LOAD, MAX, STORE_CODES) \
  TFM_CLONED                                                                   \
  static void NAME(const quantize_job *job, int64_t begin, int64_t end) {      \
    enum { kVectors = kBlock / LANES };                                        \
    const float magic = 12582912.0f;                                           \
    for (int64_t i = begin; i < end; ++i) {                                    \
      const float *row = job->a + i * job->lda;                                \
      int8_t *codes = job->x.codes + i * job->blocks * kBlock;                 \
      for (int64_t b = 0; b < job->blocks; ++b) {                              \
        float values[kBlock] = {0};                                            \
        int64_t first = b * kBlock;                                            \
        int64_t count = job->k - first < kBlock ? job->k - first : kBlock;     \
        memcpy(values, row + first, (size_t)count * sizeof(float));            \
        VF v[kVectors], magnitude = {0};                                       \
        for (int q = 0; q < kVectors; ++q) {                                   \
          v[q] = LOAD(values + q * LANES);                                     \
          magnitude = MAX(magnitude, MAX(v[q], -v[q]));                        \
        }                                                                      \
        float amax = 0;                                                        \
        for (int j = 0; j < LANES; ++j)                                        \
          amax = magnitude[j] > amax ? magnitude[j] : amax;                    \
        float inverse = amax > 0 ? 127.0f / amax : 0.0f;                       \
        VI sums[2] = {{0}, {0}};                                               \
        for (int q = 0; q < kVectors; ++q) {                                   \
          VI code =                                                            \
              __builtin_convertvector((v[q] * inverse + magic) - magic, VI);   \
          STORE_CODES(codes + b * kBlock + q * LANES, code);                   \
          sums[q / (kVectors / 2)] += code;                                    \
        }                                                                      \
        int32_t half[2] = {0, 0};                                              \
        for (int j = 0; j < LANES; ++j)                                        \
          half[0] += sums[0][j], half[1] += sums[1][j];                        \
        job->x.scales[i * job->blocks + b] = amax / 127.0f;                    \
        job->x.sums[i * job->blocks + b] = half[0] + half[1];                  \
        job->x.half_sums[2 * (i * job->blocks + b)] = half[0];                 \
        job->x.half_sums[2 * (i * job->blocks + b) + 1] = half[1];             \
      }                                                                        \
    }                                                                          \
  }
/* A vector's int32 codes (in [-127, 127]) as bytes: a conversion (one
 * vpmovdb) for 16 lanes; for 8 lanes, GCC 12 extracts a generic int32 to
 * int8 conversion lane by lane on AVX2, and a shuffle of the low bytes is
 * two vpshufb, a vpermq and a vpor. */
typedef int8_t codes16 __attribute__((vector_size(16)));
typedef int8_t codes8 __attribute__((vector_size(8)));
typedef int8_t bytes32 __attribute__((vector_size(32)));
TFM_INLINE void store_codes16(int8_t *out, vi16 code) {
  codes16 packed = __builtin_convertvector(code, codes16);
  memcpy(out, &packed, sizeof packed);
}
TFM_INLINE void store_codes8(int8_t *out, vi8 code) {
  bytes32 bytes = (bytes32)code;
  codes8 packed =
      __builtin_shufflevector(bytes, bytes, 0, 4, 8, 12, 16, 20, 24, 28);
  memcpy(out, &packed, sizeof packed);
}
TFM_DEFINE_QUANTIZE_ROWS(quantize_rows, v16, vi16, 16, load16, vmax,
                         store_codes16)
TFM_DEFINE_QUANTIZE_ROWS(quantize_rows8, v8, vi8, 8, load8, vmax8, store_codes8)
#undef TFM_DEFINE_QUANTIZE_ROWS

static void quantize_chunk(void *context, int64_t begin, int64_t end,
                           int thread) {
  (void)thread;
  if (tfm_kernels_narrow())
    quantize_rows8(context, begin, end);
  else
    quantize_rows(context, begin, end);
}

/* Scratch for the quantized activations (or the widened panels), kept
 * per thread between calls (a decode step calls this kernel for every
 * projection). NULL when it cannot grow. */
static _Thread_local void *scratch;
static _Thread_local size_t scratch_size;

static void *scratch_of(size_t need) {
  if (need > scratch_size) {
    void *grown = realloc(scratch, need);
    if (!grown)
      return NULL;
    scratch = grown, scratch_size = need;
  }
  return scratch;
}

static int quantize_activations(const float *a, int64_t m, int64_t k,
                                int64_t lda, int64_t blocks,
                                quantized_rows *x) {
  size_t codes = (size_t)(m * blocks * kBlock);
  size_t need =
      codes + (size_t)(m * blocks) * (sizeof(float) + 3 * sizeof(int32_t)) + 64;
  char *base = scratch_of(need);
  if (!base)
    return 0;
  x->codes = (int8_t *)base;
  /* Scales and sums after the codes, 4-byte aligned (codes are whole
   * blocks of 32 bytes). */
  x->scales = (float *)(base + codes);
  x->sums = (int32_t *)(x->scales + m * blocks);
  x->half_sums = x->sums + m * blocks;
  quantize_job job = {a, lda, k, blocks, *x};
  tfm_parallel_for(m, m > 8 ? 8 : m, quantize_chunk, &job);
  return 1;
}

/*===- Plain C ---------------------------------------------------------===*/

/* The stored code of row `r` (of the panel), element `e` of a block:
 * q8_0's q + 128 (0..255), q4's q (0..15), q6_k's q (0..63: a nibble and
 * two high bits). The weight is the block's (q6_k: the half's) scale
 * times (code - code_offset), plus its minimum. */
static int32_t stored_code(int format, const uint8_t *block_codes, int r,
                           int e) {
  if (format == TFM_BLOCKS_Q8_0)
    return block_codes[(e / 4) * 64 + r * 4 + e % 4];
  uint8_t byte = block_codes[(e / 8) * 64 + r * 4 + e % 4];
  int32_t nibble = e % 8 < 4 ? byte & 0x0F : byte >> 4;
  if (format != TFM_BLOCKS_Q6_K)
    return nibble;
  int part = (e / 8) % 2 * 2 + (e % 8 >= 4); /* its two bits' place */
  uint8_t bits = block_codes[256 + (e / 16) * 64 + r * 4 + e % 4];
  return nibble | ((bits >> (2 * part)) & 3) << 4;
}

static void tile_scalar(const block_job *job, int64_t p, int64_t i0,
                        int rows) {
  panel_parts parts = parts_of(job->weights + p * job->panel_bytes,
                               job->format, job->blocks);
  const uint8_t *codes = parts.codes;
  int64_t code_bytes = TFM_BLOCK_CODE_BYTES(job->format);
  int32_t offset = code_offset(job->format);
  float tile[kTile * kRows] = {0};
  for (int64_t b = 0; b < job->blocks; ++b) {
    const uint8_t *block_codes = codes + b * code_bytes;
    for (int r = 0; r < rows; ++r) {
      int64_t i = i0 + r;
      const int8_t *x = job->x.codes + (i * job->blocks + b) * kBlock;
      float xs = job->x.scales[i * job->blocks + b];
      int32_t xsum = job->x.sums[i * job->blocks + b];
      for (int o = 0; o < kRows; ++o) {
        if (job->format == TFM_BLOCKS_Q6_K) {
          for (int part = 0; part < 2; ++part) {
            int32_t dot = 0;
            for (int e = 16 * part; e < 16 * part + 16; ++e)
              dot += stored_code(job->format, block_codes, o, e) * x[e];
            dot -= offset * job->x.half_sums[2 * (i * job->blocks + b) + part];
            tile[r * kRows + o] += (float)dot * xs * q6_scale(&parts, b, part, o);
          }
          continue;
        }
        int32_t dot = 0;
        for (int e = 0; e < kBlock; ++e)
          dot += stored_code(job->format, block_codes, o, e) * x[e];
        tile[r * kRows + o] += (float)(dot - offset * xsum) * xs *
                               block_scale(job->format, &parts, b, o);
        tile[r * kRows + o] +=
            block_min(job->format, &parts, b, o) * xs * (float)xsum;
      }
    }
  }
  store_tile(job, p, i0, rows, tile);
}

/*===- AVX2 -----------------------------------------------------------===*/

#define TFM_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TFM_AVX2_INLINE                                                        \
  static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* Eight f16 or uint8 values from `at`, as f32. */
TFM_AVX2_INLINE __m256 halves8_avx2(const uint16_t *at) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)at));
}
TFM_AVX2_INLINE __m256 bytes8_avx2(const uint8_t *at) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)at)));
}

/* Block b's scales, and the minimums added to its weights, of rows
 * 8·half .. 8·half + 7 of a panel (block_scale, block_min). */
TFM_AVX2_INLINE __m256 scales8_avx2(int format, const panel_parts *parts,
                                    int64_t b, int half) {
  if (format != TFM_BLOCKS_Q4_K)
    return halves8_avx2(parts->scales + b * kRows + half * 8);
  return _mm256_mul_ps(
      halves8_avx2(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows + half * 8),
      bytes8_avx2(parts->block_scales + b * kRows + half * 8));
}
TFM_AVX2_INLINE __m256 mins8_avx2(int format, const panel_parts *parts,
                                  int64_t b, int half) {
  if (format == TFM_BLOCKS_Q4_1)
    return halves8_avx2(parts->mins + b * kRows + half * 8);
  if (format != TFM_BLOCKS_Q4_K)
    return _mm256_setzero_ps();
  return _mm256_mul_ps(
      halves8_avx2(parts->mins + b / TFM_K_SUPER_BLOCKS * kRows + half * 8),
      _mm256_sub_ps(_mm256_setzero_ps(),
                    bytes8_avx2(parts->block_mins + b * kRows + half * 8)));
}

/* Row-half `half`'s q6_k scales of half `part` of block b (q6_scale). */
TFM_AVX2_INLINE __m256 q6_scales8_avx2(const panel_parts *parts, int64_t b,
                                       int part, int half) {
  return _mm256_mul_ps(
      halves8_avx2(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows + half * 8),
      _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(
          parts->block_scales + (2 * b + part) * kRows + half * 8)))));
}

/* Nibble vector v's 32 bytes of q6_k codes at `codes` (a block's, offset
 * to the rows wanted) as whole codes: its low nibbles' (elements 8v + i)
 * and its high nibbles' (8v + 4 + i), each with its two high bits. */
TFM_AVX2_INLINE void q6_codes_avx2(const uint8_t *codes, int v, __m256i *low,
                                   __m256i *high) {
  __m256i raw = _mm256_loadu_si256((const __m256i *)(codes + v * 64));
  __m256i bits =
      _mm256_loadu_si256((const __m256i *)(codes + 256 + v / 2 * 64));
  if (v % 2)
    bits = _mm256_srli_epi16(bits, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
  *low = _mm256_or_si256(_mm256_and_si256(raw, nibble),
                         _mm256_and_si256(_mm256_slli_epi16(bits, 4), top));
  *high = _mm256_or_si256(
      _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble),
      _mm256_and_si256(_mm256_slli_epi16(bits, 2), top));
}

/* Sums of four products of unsigned `w` and signed `x` bytes per lane;
 * products of pairs must fit int16 (codes of at most 127 by 127). */
TFM_AVX2_INLINE __m256i dot4_avx2(__m256i w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}

/* Nibble vector v's 32 bytes of a q4 or q6_k block's codes at `codes`, as
 * the codes of its low nibbles' elements (8v + i) and its high ones'
 * (8v + 4 + i): the nibbles, and q6_k's with their two high bits. */
TFM_AVX2_INLINE void nibble_codes_avx2(int format, const uint8_t *codes, int v,
                                       __m256i *low, __m256i *high) {
  if (format == TFM_BLOCKS_Q6_K) {
    q6_codes_avx2(codes, v, low, high);
    return;
  }
  __m256i raw = _mm256_loadu_si256((const __m256i *)(codes + v * 64));
  *low = _mm256_and_si256(raw, _mm256_set1_epi8(0x0F));
  *high = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0F));
}

/* Adds nibble vector v's products with `rows` rows of activations (x[r]:
 * each row's block) to dot[r]. */
TFM_AVX2_INLINE void add_nibble_products_avx2(int format, const uint8_t *codes,
                                              int v, const int8_t *const *x,
                                              int rows, __m256i *dot) {
  __m256i low, high;
  nibble_codes_avx2(format, codes, v, &low, &high);
  for (int r = 0; r < rows; ++r) {
    int32_t first, second;
    memcpy(&first, x[r] + 8 * v, 4);
    memcpy(&second, x[r] + 8 * v + 4, 4);
    dot[r] = _mm256_add_epi32(dot[r], dot4_avx2(low, _mm256_set1_epi32(first)));
    dot[r] = _mm256_add_epi32(dot[r], dot4_avx2(high, _mm256_set1_epi32(second)));
  }
}

/* One half (8 outputs) of a panel for up to 4 rows of A. q8_0's codes are
 * made signed again (the offset removed) so that the sign trick keeps
 * vpmaddubsw's pair sums inside int16. */
TFM_AVX2_INLINE void half_tile_avx2(const block_job *job, int format,
                                    int64_t p, int64_t i0, int rows, int half,
                                    float *tile) {
  panel_parts parts = parts_of(job->weights + p * job->panel_bytes,
                               format, job->blocks);
  const uint8_t *codes = parts.codes;
  int64_t code_bytes = TFM_BLOCK_CODE_BYTES(format);
  int q8 = format == TFM_BLOCKS_Q8_0;
  int with_min = has_min(format);
  int32_t offset = code_offset(format);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < job->blocks; ++b) {
    const uint8_t *block_codes = codes + b * code_bytes + half * 32;
    const int8_t *x[4];
    __m256i dot[4];
    for (int r = 0; r < rows; ++r) {
      x[r] = job->x.codes + ((i0 + r) * job->blocks + b) * kBlock;
      dot[r] = _mm256_setzero_si256();
    }
    if (format == TFM_BLOCKS_Q6_K) {
      /* Each half of the block (nibble vectors 2·part, 2·part + 1) with
       * its own scale. Codes of at most 63 by 127: pair sums fit int16. */
      for (int part = 0; part < 2; ++part) {
        for (int r = 0; r < rows; ++r)
          dot[r] = _mm256_setzero_si256();
        for (int v = 2 * part; v < 2 * part + 2; ++v)
          add_nibble_products_avx2(format, block_codes, v, x, rows, dot);
        __m256 ws = q6_scales8_avx2(&parts, b, part, half);
        for (int r = 0; r < rows; ++r) {
          int64_t i = (i0 + r) * job->blocks + b;
          __m256i correction =
              _mm256_set1_epi32(offset * job->x.half_sums[2 * i + part]);
          acc[r] = _mm256_fmadd_ps(
              _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[r], correction)),
              _mm256_mul_ps(ws, _mm256_set1_ps(job->x.scales[i])), acc[r]);
        }
      }
      continue;
    }
    __m256 ws = scales8_avx2(format, &parts, b, half);
    if (q8) {
      for (int g = 0; g < kBlock / 4; ++g) {
        __m256i w = _mm256_xor_si256(
            _mm256_loadu_si256((const __m256i *)(block_codes + g * 64)),
            _mm256_set1_epi8((char)0x80));
        __m256i magnitude = _mm256_sign_epi8(w, w);
        for (int r = 0; r < rows; ++r) {
          int32_t four;
          memcpy(&four, x[r] + 4 * g, 4);
          dot[r] = _mm256_add_epi32(
              dot[r], dot4_avx2(magnitude, _mm256_sign_epi8(
                                               _mm256_set1_epi32(four), w)));
        }
      }
    } else {
      for (int v = 0; v < kBlock / 8; ++v)
        add_nibble_products_avx2(format, block_codes, v, x, rows, dot);
    }
    for (int r = 0; r < rows; ++r) {
      int64_t i = (i0 + r) * job->blocks + b;
      /* q8_0 codes are signed here: no offset to remove. */
      int32_t correction = q8 ? 0 : offset * job->x.sums[i];
      __m256 products = _mm256_cvtepi32_ps(
          _mm256_sub_epi32(dot[r], _mm256_set1_epi32(correction)));
      acc[r] = _mm256_fmadd_ps(
          products, _mm256_mul_ps(ws, _mm256_set1_ps(job->x.scales[i])),
          acc[r]);
      if (with_min)
        acc[r] = _mm256_fmadd_ps(
            mins8_avx2(format, &parts, b, half),
            _mm256_set1_ps(job->x.scales[i] * (float)job->x.sums[i]), acc[r]);
    }
  }
  for (int r = 0; r < rows; ++r)
    _mm256_storeu_ps(tile + r * kRows + half * 8, acc[r]);
}

TFM_AVX2 static void tile_avx2(const block_job *job, int64_t p, int64_t i0,
                               int rows) {
  float tile[kTile * kRows];
  for (int r0 = 0; r0 < rows; r0 += 4) {
    int count = rows - r0 < 4 ? rows - r0 : 4;
    /* A constant row count at each call keeps the sums in registers (a
     * variable one left them on the stack: decode half as fast), and a
     * constant format keeps the others' branches out of the block loop
     * (as tile_vnni's: with TFM_BLOCKS_ISA=avx2 on an Intel Xeon, the
     * 124M LLaMA's Q4_0 file prefilled 40 tokens at 1039 tokens/s with
     * one instance for all formats, 1217 so; its Q4_K_M file 841 and
     * 1026). */
#define TFM_HALF_TILES(FORMAT)                                                 \
  for (int half = 0; half < 2; ++half)                                         \
    switch (count) {                                                           \
    case 4: half_tile_avx2(job, FORMAT, p, i0 + r0, 4, half, tile + r0 * kRows); break; \
    case 3: half_tile_avx2(job, FORMAT, p, i0 + r0, 3, half, tile + r0 * kRows); break; \
    case 2: half_tile_avx2(job, FORMAT, p, i0 + r0, 2, half, tile + r0 * kRows); break; \
    default: half_tile_avx2(job, FORMAT, p, i0 + r0, 1, half, tile + r0 * kRows); break; \
    }
    switch (job->format) {
    case TFM_BLOCKS_Q8_0: TFM_HALF_TILES(TFM_BLOCKS_Q8_0) break;
    case TFM_BLOCKS_Q4_0: TFM_HALF_TILES(TFM_BLOCKS_Q4_0) break;
    case TFM_BLOCKS_Q4_1: TFM_HALF_TILES(TFM_BLOCKS_Q4_1) break;
    case TFM_BLOCKS_Q4_K: TFM_HALF_TILES(TFM_BLOCKS_Q4_K) break;
    default: TFM_HALF_TILES(TFM_BLOCKS_Q6_K) break;
    }
#undef TFM_HALF_TILES
  }
  store_tile(job, p, i0, rows, tile);
}

/* One row of A (a decode step) against `count` (<= kRowPanelsAvx2, a
 * constant at every call) consecutive panels, both halves of each in one
 * pass: every 64-byte line of codes is loaded once, and each block's
 * activation broadcasts serve all of them. Each panel's codes are
 * prefetched 512 bytes ahead (int8's next block, int4's second next) as
 * non-temporal (prefetchnta): the weights are read once a step, and the
 * hint keeps them out of the outer caches. On a Zen 2 (`bench/gemv_stream.c`,
 * read probe 31.2 GB/s) that streamed int8 at 31.3 GB/s and int4 at 31.1,
 * against 25.3 and 22.4 with prefetcht0 a block ahead; 1024 or 2048 bytes
 * ahead, or into L2 only, were slower. */
enum { kRowPanelsAvx2 = 2, kPrefetchBytes = 512 };
TFM_AVX2_INLINE void row_panels_avx2(const block_job *job, int format,
                                     int64_t p, int count, float *out) {
  int64_t code_bytes = TFM_BLOCK_CODE_BYTES(format);
  int q8 = format == TFM_BLOCKS_Q8_0;
  int32_t offset = code_offset(format);
  const uint8_t *panel[kRowPanelsAvx2];
  panel_parts parts[kRowPanelsAvx2];
  __m256 acc[kRowPanelsAvx2][2];
#pragma GCC unroll 2
  for (int j = 0; j < count; ++j) {
    panel[j] = job->weights + (p + j) * job->panel_bytes;
    parts[j] = parts_of(panel[j], format, job->blocks);
    acc[j][0] = acc[j][1] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t *x = job->x.codes;
  for (int64_t b = 0; b < job->blocks; ++b, x += kBlock) {
    int64_t codes = codes_start(format, job->blocks) + b * code_bytes;
    /* Past a panel's end this reaches into the next panel, or past the
     * matrix: a prefetch does not fault. */
#pragma GCC unroll 2
    for (int j = 0; j < count; ++j)
      for (int64_t line = 0; line < code_bytes; line += 64)
        __builtin_prefetch(panel[j] + codes + kPrefetchBytes + line, 0, 0);
    __m256i dot[kRowPanelsAvx2][2];
    if (format == TFM_BLOCKS_Q6_K) {
      /* Each half of the block with its own scale (half_tile_avx2). */
      for (int part = 0; part < 2; ++part) {
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
          dot[j][0] = dot[j][1] = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int v = 2 * part; v < 2 * part + 2; ++v) {
          int32_t first, second;
          memcpy(&first, x + 8 * v, 4);
          memcpy(&second, x + 8 * v + 4, 4);
          __m256i x0 = _mm256_set1_epi32(first), x1 = _mm256_set1_epi32(second);
#pragma GCC unroll 2
          for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
              __m256i low, high;
              q6_codes_avx2(panel[j] + codes + h * 32, v, &low, &high);
              dot[j][h] = _mm256_add_epi32(
                  dot[j][h], _mm256_add_epi32(dot4_avx2(low, x0),
                                              dot4_avx2(high, x1)));
            }
        }
        __m256 xs = _mm256_set1_ps(job->x.scales[b]);
        __m256i correction =
            _mm256_set1_epi32(offset * job->x.half_sums[2 * b + part]);
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h)
            acc[j][h] = _mm256_fmadd_ps(
                _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[j][h], correction)),
                _mm256_mul_ps(q6_scales8_avx2(&parts[j], b, part, h), xs),
                acc[j][h]);
      }
      continue;
    }
    if (q8) {
#pragma GCC unroll 2
      for (int j = 0; j < count; ++j)
        dot[j][0] = dot[j][1] = _mm256_setzero_si256();
#pragma GCC unroll 1
      for (int g = 0; g < kBlock / 4; ++g) {
        int32_t four;
        memcpy(&four, x + 4 * g, 4);
        __m256i xg = _mm256_set1_epi32(four);
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            /* Signed again (the offset removed), and the sign moved onto
             * the activations: vpmaddubsw's pair sums stay in int16. */
            __m256i w = _mm256_xor_si256(
                _mm256_loadu_si256(
                    (const __m256i *)(panel[j] + codes + g * 64 + h * 32)),
                _mm256_set1_epi8((char)0x80));
            dot[j][h] = _mm256_add_epi32(
                dot[j][h], dot4_avx2(_mm256_sign_epi8(w, w),
                                     _mm256_sign_epi8(xg, w)));
          }
      }
    } else {
      /* Nibbles times codes of at most 127: a pair's sum is at most
       * 3810, so a block's eight vpmaddubsw results add up in int16
       * (30480) and widen once. */
      const __m256i nibble = _mm256_set1_epi8(0x0F);
      __m256i sum16[kRowPanelsAvx2][2];
#pragma GCC unroll 2
      for (int j = 0; j < count; ++j)
        sum16[j][0] = sum16[j][1] = _mm256_setzero_si256();
#pragma GCC unroll 1
      for (int v = 0; v < kBlock / 8; ++v) {
        int32_t first, second;
        memcpy(&first, x + 8 * v, 4);
        memcpy(&second, x + 8 * v + 4, 4);
        __m256i x0 = _mm256_set1_epi32(first), x1 = _mm256_set1_epi32(second);
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            __m256i raw = _mm256_loadu_si256(
                (const __m256i *)(panel[j] + codes + v * 64 + h * 32));
            __m256i low = _mm256_and_si256(raw, nibble);
            __m256i high = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
            sum16[j][h] =
                _mm256_add_epi16(sum16[j][h], _mm256_maddubs_epi16(low, x0));
            sum16[j][h] =
                _mm256_add_epi16(sum16[j][h], _mm256_maddubs_epi16(high, x1));
          }
      }
#pragma GCC unroll 2
      for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
          dot[j][h] = _mm256_madd_epi16(sum16[j][h], ones);
    }
    __m256 xs = _mm256_set1_ps(job->x.scales[b]);
    __m256i correction = _mm256_set1_epi32(q8 ? 0 : offset * job->x.sums[b]);
#pragma GCC unroll 2
    for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m256 products =
            _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[j][h], correction));
        acc[j][h] = _mm256_fmadd_ps(
            products, _mm256_mul_ps(scales8_avx2(format, &parts[j], b, h), xs),
            acc[j][h]);
        if (has_min(format))
          acc[j][h] = _mm256_fmadd_ps(
              mins8_avx2(format, &parts[j], b, h),
              _mm256_set1_ps(job->x.scales[b] * (float)job->x.sums[b]),
              acc[j][h]);
      }
  }
#pragma GCC unroll 2
  for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
      _mm256_storeu_ps(out + j * kRows + h * 8, acc[j][h]);
}

/* Panels [p0, p1) for one row of A, `format` a constant at each call:
 * the block loop then carries no test of the format (its branches, and
 * the accumulators they spilled, made the kernel 8% slower on weights in
 * cache). */
TFM_AVX2_INLINE void row_format_avx2(const block_job *job, int format,
                                     int64_t p0, int64_t p1) {
  float tile[kRowPanelsAvx2 * kRows];
  for (int64_t p = p0; p < p1; p += kRowPanelsAvx2) {
    int count = p1 - p < kRowPanelsAvx2 ? (int)(p1 - p) : kRowPanelsAvx2;
    if (count == 2)
      row_panels_avx2(job, format, p, 2, tile);
    else
      row_panels_avx2(job, format, p, 1, tile);
    for (int j = 0; j < count; ++j)
      store_tile(job, p + j, 0, 1, tile + j * kRows);
  }
}

TFM_AVX2 static void row_avx2(const block_job *job, int64_t p0, int64_t p1) {
  switch (job->format) {
  case TFM_BLOCKS_Q8_0: row_format_avx2(job, TFM_BLOCKS_Q8_0, p0, p1); break;
  case TFM_BLOCKS_Q4_0: row_format_avx2(job, TFM_BLOCKS_Q4_0, p0, p1); break;
  case TFM_BLOCKS_Q4_1: row_format_avx2(job, TFM_BLOCKS_Q4_1, p0, p1); break;
  case TFM_BLOCKS_Q4_K: row_format_avx2(job, TFM_BLOCKS_Q4_K, p0, p1); break;
  default: row_format_avx2(job, TFM_BLOCKS_Q6_K, p0, p1); break;
  }
}

/*===- AVX-512 VNNI -----------------------------------------------------===*/

#define TFM_VNNI_TARGET "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c"
#define TFM_VNNI __attribute__((target(TFM_VNNI_TARGET)))
#define TFM_VNNI_INLINE                                                        \
  static inline __attribute__((always_inline, target(TFM_VNNI_TARGET)))

/* Sixteen f16 or uint8 values from `at`, as f32. */
TFM_VNNI_INLINE __m512 halves16_vnni(const uint16_t *at) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)at));
}
TFM_VNNI_INLINE __m512 bytes16_vnni(const uint8_t *at) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)at)));
}
TFM_VNNI_INLINE __m512 signed_bytes16_vnni(const uint8_t *at) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)at)));
}

/* Block b's scales, and the minimums added to its weights, of a panel's
 * 16 rows (block_scale, block_min). */
TFM_VNNI_INLINE __m512 scales16_vnni(int format, const panel_parts *parts,
                                     int64_t b) {
  if (format != TFM_BLOCKS_Q4_K)
    return halves16_vnni(parts->scales + b * kRows);
  return _mm512_mul_ps(
      halves16_vnni(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows),
      bytes16_vnni(parts->block_scales + b * kRows));
}
TFM_VNNI_INLINE __m512 mins16_vnni(int format, const panel_parts *parts,
                                   int64_t b) {
  if (format == TFM_BLOCKS_Q4_1)
    return halves16_vnni(parts->mins + b * kRows);
  if (format != TFM_BLOCKS_Q4_K)
    return _mm512_setzero_ps();
  return _mm512_mul_ps(
      halves16_vnni(parts->mins + b / TFM_K_SUPER_BLOCKS * kRows),
      _mm512_sub_ps(_mm512_setzero_ps(),
                    bytes16_vnni(parts->block_mins + b * kRows)));
}

/* A panel's q6_k scales of half `part` of block b (q6_scale). */
TFM_VNNI_INLINE __m512 q6_scales16_vnni(const panel_parts *parts, int64_t b,
                                        int part) {
  return _mm512_mul_ps(
      halves16_vnni(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows),
      signed_bytes16_vnni(parts->block_scales + (2 * b + part) * kRows));
}

/* Nibble vector v of a block's q6_k codes at `codes` as whole codes, as
 * q6_codes_avx2 for a panel's 16 rows. */
TFM_VNNI_INLINE void q6_codes_vnni(const uint8_t *codes, int v, __m512i *low,
                                   __m512i *high) {
  __m512i raw = _mm512_loadu_si512(codes + v * 64);
  __m512i bits = _mm512_loadu_si512(codes + 256 + v / 2 * 64);
  if (v % 2)
    bits = _mm512_srli_epi16(bits, 4);
  const __m512i nibble = _mm512_set1_epi8(0x0F), top = _mm512_set1_epi8(0x30);
  *low = _mm512_or_si512(_mm512_and_si512(raw, nibble),
                         _mm512_and_si512(_mm512_slli_epi16(bits, 4), top));
  *high = _mm512_or_si512(
      _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble),
      _mm512_and_si512(_mm512_slli_epi16(bits, 2), top));
}

/* Four activation codes of a row, broadcast to every lane. */
TFM_VNNI_INLINE __m512i broadcast4(const int8_t *x) {
  int32_t four;
  memcpy(&four, x, 4);
  return _mm512_set1_epi32(four);
}

/* Nibble vector v of a q4 or q6_k block's codes at `codes` for a panel's
 * 16 rows, as nibble_codes_avx2. */
TFM_VNNI_INLINE void nibble_codes_vnni(int format, const uint8_t *codes, int v,
                                       __m512i *low, __m512i *high) {
  if (format == TFM_BLOCKS_Q6_K) {
    q6_codes_vnni(codes, v, low, high);
    return;
  }
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512i raw = _mm512_loadu_si512(codes + v * 64);
  *low = _mm512_and_si512(raw, nibble);
  *high = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
}

/* Adds nibble vector v's products (block codes at `codes` in each of `np`
 * panels) with `rows` rows of activations (x: the first row's block, rows
 * row_stride apart) to dot[r][j]: each code vector serves every row, each
 * broadcast every panel. */
TFM_VNNI_INLINE void add_nibble_products_vnni(int format,
                                              const uint8_t *const *panel,
                                              int64_t codes, const int8_t *x,
                                              int64_t row_stride, int v,
                                              int rows, int np,
                                              __m512i dot[][2]) {
  __m512i low[2], high[2];
#pragma GCC unroll 2
  for (int j = 0; j < np; ++j)
    nibble_codes_vnni(format, panel[j] + codes, v, &low[j], &high[j]);
#pragma GCC unroll 6
  for (int r = 0; r < rows; ++r) {
    __m512i x0 = broadcast4(x + r * row_stride + 8 * v);
    __m512i x1 = broadcast4(x + r * row_stride + 8 * v + 4);
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j) {
      dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], low[j], x0);
      dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], high[j], x1);
    }
  }
}

/* `np` (1 or 2) whole panels (16 outputs each) for `rows` (2 to 6) rows
 * of A, both constants at every call so that the accumulators stay in
 * registers: one int32 chain and one f32 accumulator per row and panel
 * (2 x 6 x 2 = 24 of the 32 vector registers); each weight vector loaded
 * serves every row, each activation broadcast both panels. One row goes
 * to row_vnni. `format`: a constant at each call, as the row count. */
TFM_VNNI_INLINE void panel_tile_vnni(const block_job *job, int format,
                                     int64_t p, int64_t i0, int rows, int np,
                                     float tile[2][kTile * kRows]) {
  int64_t code_bytes = TFM_BLOCK_CODE_BYTES(format);
  int q8 = format == TFM_BLOCKS_Q8_0;
  int with_min = has_min(format);
  int32_t offset = code_offset(format);
  int64_t row_stride = job->blocks * kBlock;
  const uint8_t *panel[2] = {job->weights + p * job->panel_bytes,
                             job->weights + (p + np - 1) * job->panel_bytes};
  panel_parts parts[2] = {parts_of(panel[0], format, job->blocks),
                          parts_of(panel[1], format, job->blocks)};
  __m512 acc[kTile][2];
#pragma GCC unroll 6
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      acc[r][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < job->blocks; ++b) {
    int64_t codes = codes_start(format, job->blocks) + b * code_bytes;
    const int8_t *x = job->x.codes + i0 * row_stride + b * kBlock;
    __m512i dot[kTile][2];
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 2
      for (int j = 0; j < np; ++j)
        dot[r][j] = _mm512_setzero_si512();
    if (format == TFM_BLOCKS_Q6_K) {
      /* Each half of the block with its own scale, folded into the f32
       * accumulators before the next: the same registers as the others. */
      for (int part = 0; part < 2; ++part) {
#pragma GCC unroll 2
        for (int v = 2 * part; v < 2 * part + 2; ++v)
          add_nibble_products_vnni(format, panel, codes, x, row_stride, v,
                                   rows, np, dot);
        __m512 ws[2];
#pragma GCC unroll 2
        for (int j = 0; j < np; ++j)
          ws[j] = q6_scales16_vnni(&parts[j], b, part);
#pragma GCC unroll 6
        for (int r = 0; r < rows; ++r) {
          int64_t i = (i0 + r) * job->blocks + b;
          __m512i correction =
              _mm512_set1_epi32(offset * job->x.half_sums[2 * i + part]);
          __m512 xs = _mm512_set1_ps(job->x.scales[i]);
#pragma GCC unroll 2
          for (int j = 0; j < np; ++j) {
            acc[r][j] = _mm512_fmadd_ps(
                _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[r][j], correction)),
                _mm512_mul_ps(ws[j], xs), acc[r][j]);
            dot[r][j] = _mm512_setzero_si512();
          }
        }
      }
      continue;
    }
    if (q8) {
#pragma GCC unroll 8
      for (int g = 0; g < kBlock / 4; ++g) {
        __m512i w[2];
#pragma GCC unroll 2
        for (int j = 0; j < np; ++j)
          w[j] = _mm512_loadu_si512(panel[j] + codes + g * 64);
#pragma GCC unroll 6
        for (int r = 0; r < rows; ++r) {
          __m512i xr = broadcast4(x + r * row_stride + 4 * g);
#pragma GCC unroll 2
          for (int j = 0; j < np; ++j)
            dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], w[j], xr);
        }
      }
    } else {
#pragma GCC unroll 4
      for (int v = 0; v < kBlock / 8; ++v)
        add_nibble_products_vnni(format, panel, codes, x, row_stride, v, rows,
                                 np, dot);
    }
    __m512 ws[2];
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      ws[j] = scales16_vnni(format, &parts[j], b);
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r) {
      int64_t i = (i0 + r) * job->blocks + b;
      __m512i correction = _mm512_set1_epi32(offset * job->x.sums[i]);
      __m512 xs = _mm512_set1_ps(job->x.scales[i]);
#pragma GCC unroll 2
      for (int j = 0; j < np; ++j)
        acc[r][j] = _mm512_fmadd_ps(
            _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[r][j], correction)),
            _mm512_mul_ps(ws[j], xs), acc[r][j]);
    }
    if (with_min) {
      __m512 wm[2];
#pragma GCC unroll 2
      for (int j = 0; j < np; ++j)
        wm[j] = mins16_vnni(format, &parts[j], b);
#pragma GCC unroll 6
      for (int r = 0; r < rows; ++r) {
        int64_t i = (i0 + r) * job->blocks + b;
        __m512 xsum = _mm512_set1_ps(job->x.scales[i] * (float)job->x.sums[i]);
#pragma GCC unroll 2
        for (int j = 0; j < np; ++j)
          acc[r][j] = _mm512_fmadd_ps(wm[j], xsum, acc[r][j]);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      _mm512_storeu_ps(tile[j] + r * kRows, acc[r][j]);
}

/* Bytes ahead of the codes it reads that the VNNI row kernel prefetches
 * each panel, into L1 (prefetcht0). Measured on an Intel Xeon (family 6,
 * model 207; `bench/gemv_stream.c tinyllama`, read probe 29.5 GB/s): int8
 * blocks streamed at 31.2 GB/s unprefetched and 33.3 1 KiB ahead, int4
 * 27.2 and 30.9 (512 bytes: 32.7 and 29.1; 4 KiB: 31.9 and 29.1). */
enum { kVnniRowPrefetchBytes = 1024 };

/* After block b, the K-quant row kernel's step at the end of a
 * super-block: its sums by scale times d (and, q4_k, its sums by minimum
 * times dmin, subtracted) into the accumulators, and the sums restarted. */
TFM_VNNI_INLINE void end_super_block_vnni(int format, const panel_parts *parts,
                                          int count, int64_t b, __m512 *acc,
                                          __m512 *by_scale, __m512 *by_min) {
  if (b % TFM_K_SUPER_BLOCKS != TFM_K_SUPER_BLOCKS - 1)
    return;
  int64_t super = b / TFM_K_SUPER_BLOCKS * kRows;
#pragma GCC unroll 4
  for (int j = 0; j < count; ++j) {
    acc[j] = _mm512_fmadd_ps(by_scale[j], halves16_vnni(parts[j].scales + super),
                             acc[j]);
    if (format == TFM_BLOCKS_Q4_K)
      acc[j] = _mm512_fnmadd_ps(by_min[j], halves16_vnni(parts[j].mins + super),
                                acc[j]);
    by_scale[j] = by_min[j] = _mm512_setzero_ps();
  }
}

/* One row of A (a decode step) against `count` (<= kRowPanels) consecutive
 * panels in `format`, both constants at every call: each block's
 * activation broadcasts serve all of them, and the panels' independent
 * chains and streams keep the memory system busy. */
enum { kRowPanels = 4 };
TFM_VNNI_INLINE void row_panels_vnni(const block_job *job, int format,
                                     int64_t p, int count, float *out) {
  int64_t code_bytes = TFM_BLOCK_CODE_BYTES(format);
  int q8 = format == TFM_BLOCKS_Q8_0;
  int with_min = has_min(format);
  int32_t offset = code_offset(format);
  const uint8_t *panel[kRowPanels];
  panel_parts parts[kRowPanels];
  /* q4_k: the current super-block's sums by scale and by minimum. */
  __m512 acc[kRowPanels], by_scale[kRowPanels], by_min[kRowPanels];
#pragma GCC unroll 4
  for (int j = 0; j < count; ++j) {
    panel[j] = job->weights + (p + j) * job->panel_bytes;
    parts[j] = parts_of(panel[j], format, job->blocks);
    acc[j] = by_scale[j] = by_min[j] = _mm512_setzero_ps();
  }
  const int8_t *x = job->x.codes;
  for (int64_t b = 0; b < job->blocks; ++b, x += kBlock) {
    __m512i even[kRowPanels], odd[kRowPanels];
#pragma GCC unroll 4
    for (int j = 0; j < count; ++j)
      even[j] = odd[j] = _mm512_setzero_si512();
    /* Where block b's codes start in each panel. */
    int64_t codes = codes_start(format, job->blocks) + b * code_bytes;
    if (format == TFM_BLOCKS_Q6_K) {
      /* The block's halves in `even` and `odd`, each with its scale. */
#pragma GCC unroll 4
      for (int v = 0; v < kBlock / 8; ++v) {
        __m512i x0 = broadcast4(x + 8 * v), x1 = broadcast4(x + 8 * v + 4);
#pragma GCC unroll 4
        for (int j = 0; j < count; ++j) {
          const uint8_t *at = panel[j] + codes;
          __builtin_prefetch(at + v * 64 + kVnniRowPrefetchBytes, 0, 3);
          if (v < 2)
            __builtin_prefetch(at + 256 + v * 64 + kVnniRowPrefetchBytes, 0, 3);
          __m512i low, high;
          q6_codes_vnni(at, v, &low, &high);
          if (v < 2)
            even[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(even[j], low, x0),
                                          high, x1);
          else
            odd[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(odd[j], low, x0),
                                         high, x1);
        }
      }
      /* As q4_k's below: the super-block's d scales its sums once. */
      __m512 xs = _mm512_set1_ps(job->x.scales[b]);
      __m512i first = _mm512_set1_epi32(offset * job->x.half_sums[2 * b]);
      __m512i second = _mm512_set1_epi32(offset * job->x.half_sums[2 * b + 1]);
#pragma GCC unroll 4
      for (int j = 0; j < count; ++j) {
        const uint8_t *half_scales = parts[j].block_scales + 2 * b * kRows;
        by_scale[j] = _mm512_fmadd_ps(
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(even[j], first)), xs),
            signed_bytes16_vnni(half_scales), by_scale[j]);
        by_scale[j] = _mm512_fmadd_ps(
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(odd[j], second)), xs),
            signed_bytes16_vnni(half_scales + kRows), by_scale[j]);
      }
      end_super_block_vnni(format, parts, count, b, acc, by_scale, by_min);
      continue;
    }
    if (q8) {
#pragma GCC unroll 4
      for (int g = 0; g < kBlock / 4; g += 2) {
        __m512i x0 = broadcast4(x + 4 * g), x1 = broadcast4(x + 4 * g + 4);
#pragma GCC unroll 4
        for (int j = 0; j < count; ++j) {
          const uint8_t *at = panel[j] + codes + g * 64;
          __builtin_prefetch(at + kVnniRowPrefetchBytes, 0, 3);
          __builtin_prefetch(at + 64 + kVnniRowPrefetchBytes, 0, 3);
          even[j] = _mm512_dpbusd_epi32(even[j], _mm512_loadu_si512(at), x0);
          odd[j] = _mm512_dpbusd_epi32(odd[j], _mm512_loadu_si512(at + 64), x1);
        }
      }
    } else {
      /* The high nibbles stay in place (16 times their value: no shift
       * per vector); their sum, a multiple of 16, is shifted once. */
      const __m512i low_nibble = _mm512_set1_epi8(0x0F);
      const __m512i high_nibble = _mm512_set1_epi8((char)0xF0);
#pragma GCC unroll 4
      for (int v = 0; v < kBlock / 8; ++v) {
        __m512i x0 = broadcast4(x + 8 * v), x1 = broadcast4(x + 8 * v + 4);
#pragma GCC unroll 4
        for (int j = 0; j < count; ++j) {
          const uint8_t *at = panel[j] + codes + v * 64;
          __builtin_prefetch(at + kVnniRowPrefetchBytes, 0, 3);
          __m512i raw = _mm512_loadu_si512(at);
          even[j] = _mm512_dpbusd_epi32(
              even[j], _mm512_and_si512(raw, low_nibble), x0);
          odd[j] = _mm512_dpbusd_epi32(
              odd[j], _mm512_and_si512(raw, high_nibble), x1);
        }
      }
#pragma GCC unroll 4
      for (int j = 0; j < count; ++j)
        odd[j] = _mm512_srai_epi32(odd[j], 4);
    }
    __m512 xs = _mm512_set1_ps(job->x.scales[b]);
    __m512 xsum = _mm512_set1_ps(job->x.scales[b] * (float)job->x.sums[b]);
    if (format == TFM_BLOCKS_Q4_K) {
      /* A super-block's d and dmin scale its blocks' sums once: each
       * block's products add up by its 6-bit scale (and minimum) first. */
#pragma GCC unroll 4
      for (int j = 0; j < count; ++j) {
        __m512 products = _mm512_mul_ps(
            _mm512_cvtepi32_ps(_mm512_add_epi32(even[j], odd[j])), xs);
        by_scale[j] = _mm512_fmadd_ps(
            products, bytes16_vnni(parts[j].block_scales + b * kRows),
            by_scale[j]);
        by_min[j] = _mm512_fmadd_ps(
            bytes16_vnni(parts[j].block_mins + b * kRows), xsum, by_min[j]);
      }
      end_super_block_vnni(format, parts, count, b, acc, by_scale, by_min);
      continue;
    }
    __m512i correction = _mm512_set1_epi32(offset * job->x.sums[b]);
#pragma GCC unroll 4
    for (int j = 0; j < count; ++j) {
      __m512 ws = scales16_vnni(format, &parts[j], b);
      __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(even[j], odd[j]),
                                     correction);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(ws, xs),
                               acc[j]);
      if (with_min)
        acc[j] = _mm512_fmadd_ps(mins16_vnni(format, &parts[j], b), xsum,
                                 acc[j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < count; ++j)
    _mm512_storeu_ps(out + j * kRows, acc[j]);
}

/* Panels [p0, p1) for one row of A, `format` a constant at each call (as
 * row_format_avx2's). */
TFM_VNNI_INLINE void row_format_vnni(const block_job *job, int format,
                                     int64_t p0, int64_t p1) {
  float tile[kRowPanels * kRows];
  for (int64_t p = p0; p < p1; p += kRowPanels) {
    int count = p1 - p < kRowPanels ? (int)(p1 - p) : kRowPanels;
    switch (count) {
    case 4: row_panels_vnni(job, format, p, 4, tile); break;
    case 3: row_panels_vnni(job, format, p, 3, tile); break;
    case 2: row_panels_vnni(job, format, p, 2, tile); break;
    default: row_panels_vnni(job, format, p, 1, tile); break;
    }
    for (int j = 0; j < count; ++j)
      store_tile(job, p + j, 0, 1, tile + j * kRows);
  }
}

TFM_VNNI static void row_vnni(const block_job *job, int64_t p0, int64_t p1) {
  switch (job->format) {
  case TFM_BLOCKS_Q8_0: row_format_vnni(job, TFM_BLOCKS_Q8_0, p0, p1); break;
  case TFM_BLOCKS_Q4_0: row_format_vnni(job, TFM_BLOCKS_Q4_0, p0, p1); break;
  case TFM_BLOCKS_Q4_1: row_format_vnni(job, TFM_BLOCKS_Q4_1, p0, p1); break;
  case TFM_BLOCKS_Q4_K: row_format_vnni(job, TFM_BLOCKS_Q4_K, p0, p1); break;
  default: row_format_vnni(job, TFM_BLOCKS_Q6_K, p0, p1); break;
  }
}

/* Rows [i0, i0 + rows) of A against panels [p, p + np), np 1 or 2. Each
 * format has instances of its own, as the row kernel's: with one instance
 * for all, testing the format in the block loop, the 124M LLaMA shape
 * prefilled Q8_0 and Q4_0 files 0.8x as fast (2350 against 2970 tokens/s
 * on an Intel Xeon), and Q4_K_M 0.75x once Q6_K's halves joined the loop. */
TFM_VNNI static void tile_vnni(const block_job *job, int64_t p, int64_t i0,
                               int rows, int np) {
  float tile[2][kTile * kRows];
#define TFM_TILE_ROWS(FORMAT, NP)                                              \
  switch (rows) {                                                              \
  case 6: panel_tile_vnni(job, FORMAT, p, i0, 6, NP, tile); break;             \
  case 5: panel_tile_vnni(job, FORMAT, p, i0, 5, NP, tile); break;             \
  case 4: panel_tile_vnni(job, FORMAT, p, i0, 4, NP, tile); break;             \
  case 3: panel_tile_vnni(job, FORMAT, p, i0, 3, NP, tile); break;             \
  case 2: panel_tile_vnni(job, FORMAT, p, i0, 2, NP, tile); break;             \
  default: panel_tile_vnni(job, FORMAT, p, i0, 1, NP, tile); break;            \
  }
#define TFM_TILE_CASES(FORMAT)                                                 \
  if (np == 2)                                                                 \
    TFM_TILE_ROWS(FORMAT, 2)                                                   \
  else                                                                         \
    TFM_TILE_ROWS(FORMAT, 1)
  switch (job->format) {
  case TFM_BLOCKS_Q4_K: TFM_TILE_CASES(TFM_BLOCKS_Q4_K) break;
  case TFM_BLOCKS_Q6_K: TFM_TILE_CASES(TFM_BLOCKS_Q6_K) break;
  case TFM_BLOCKS_Q8_0: TFM_TILE_CASES(TFM_BLOCKS_Q8_0) break;
  case TFM_BLOCKS_Q4_0: TFM_TILE_CASES(TFM_BLOCKS_Q4_0) break;
  default: TFM_TILE_CASES(TFM_BLOCKS_Q4_1) break;
  }
#undef TFM_TILE_CASES
#undef TFM_TILE_ROWS
  for (int j = 0; j < np; ++j)
    store_tile(job, p + j, i0, rows, tile[j]);
}

/*===- Widened into f32 panels ----------------------------------------===*/

/* Without VNNI, products of many rows multiply faster as f32 FMAs than as
 * integer sums: AVX2's vpmaddubsw needs the sign trick and a vpmaddwd per
 * product vector, and a 124 M LLaMA's int8 prefill ran at 0.76x its f32
 * prefill on a Zen 2. So there each pair of block panels is widened into
 * one f32 panel of 32 features (panel[k][j]), which the panel GEMM
 * multiplies by every row of A: one pass of widening per call, shared by
 * all of its rows. */
enum { kWidenedPanel = TFM_PANEL_WIDTH };
_Static_assert(kWidenedPanel == 2 * kRows, "a widened panel: two block panels");

/* Eight rows' four codes (32 bytes: row r's at 4r) as four vectors of
 * eight bytes, code i of every row in vector i (the low 8 bytes). */
TFM_AVX2_INLINE void transpose_codes_avx2(__m256i bytes, __m128i out[4]) {
  /* Within each 128-bit lane (four rows): code i of the four rows in
   * dword i; then dword i of both lanes side by side. */
  const __m256i by_code = _mm256_setr_epi8(
      0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
      0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m256i grouped = _mm256_shuffle_epi8(bytes, by_code);
  __m256i pairs = _mm256_permutevar8x32_epi32(
      grouped, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  out[0] = _mm256_castsi256_si128(pairs);
  out[1] = _mm_unpackhi_epi64(out[0], out[0]);
  out[2] = _mm256_extracti128_si256(pairs, 1);
  out[3] = _mm_unpackhi_epi64(out[2], out[2]);
}

/* Element e (if inside the row's `elements`) of eight rows, their codes
 * the low 8 bytes of `codes`, widened: (code - offset) · scale + minimum,
 * into row e of a widened panel's column. */
TFM_AVX2_INLINE void store_widened_avx2(float *column, int64_t e,
                                        int64_t elements, __m128i codes,
                                        __m256 offset, __m256 scale,
                                        __m256 minimum) {
  if (e < elements)
    _mm256_storeu_ps(
        column + e * kWidenedPanel,
        _mm256_fmadd_ps(
            _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes)), offset),
            scale, minimum));
}

/* Block panel p's rows as features [column0, column0 + 16) of `out`
 * ([k][kWidenedPanel]); past the matrix's last panel (the second of an
 * odd count's last pair, which is not stored), zeros. Eight rows at a
 * time: a 32-byte run of codes holds four elements of each
 * (weight_formats.h), transposed in registers. */
TFM_AVX2 static void widen_block_panel(const block_job *job, int64_t p,
                                       int column0, float *out) {
  if (p * kRows >= job->n) {
    for (int64_t kk = 0; kk < job->k; ++kk)
      memset(out + kk * kWidenedPanel + column0, 0, kRows * sizeof(float));
    return;
  }
  panel_parts parts = parts_of(job->weights + p * job->panel_bytes,
                               job->format, job->blocks);
  const uint8_t *codes = parts.codes;
  int64_t code_bytes = TFM_BLOCK_CODE_BYTES(job->format);
  int q8 = job->format == TFM_BLOCKS_Q8_0;
  const __m256 offset = _mm256_set1_ps((float)code_offset(job->format));
  for (int64_t b = 0; b < job->blocks; ++b) {
    const uint8_t *block_codes = codes + b * code_bytes;
    /* Elements of this block inside the row (the last block may stop
     * short; the panel keeps room for a whole one). */
    int64_t elements = job->k - b * kBlock < kBlock ? job->k - b * kBlock : kBlock;
    for (int h = 0; h < 2; ++h) {
      float *column = out + b * kBlock * kWidenedPanel + column0 + h * 8;
      __m256 minimum = mins8_avx2(job->format, &parts, b, h);
      if (q8) {
        /* Eight runs, elements 4g + i. */
        __m256 scale = scales8_avx2(job->format, &parts, b, h);
        for (int g = 0; g < 8; ++g) {
          __m128i four[4];
          transpose_codes_avx2(
              _mm256_loadu_si256((const __m256i *)(block_codes + g * 64 + h * 32)),
              four);
          for (int i = 0; i < 4; ++i)
            store_widened_avx2(column, 4 * g + i, elements, four[i], offset,
                               scale, minimum);
        }
        continue;
      }
      /* Four nibble vectors, elements 8v + i (low) and 8v + 4 + i (high);
       * q6_k's halves of a block each with its own scale. */
      for (int v = 0; v < 4; ++v) {
        __m256 scale = job->format == TFM_BLOCKS_Q6_K
                           ? q6_scales8_avx2(&parts, b, v / 2, h)
                           : scales8_avx2(job->format, &parts, b, h);
        __m256i low, high;
        nibble_codes_avx2(job->format, block_codes + h * 32, v, &low, &high);
        __m128i lows[4], highs[4];
        transpose_codes_avx2(low, lows);
        transpose_codes_avx2(high, highs);
        for (int i = 0; i < 4; ++i) {
          store_widened_avx2(column, 8 * v + i, elements, lows[i], offset,
                             scale, minimum);
          store_widened_avx2(column, 8 * v + 4 + i, elements, highs[i], offset,
                             scale, minimum);
        }
      }
    }
  }
}

/* Pairs of block panels [begin, end) for every row of A. */
static void widened_chunk(void *context, int64_t begin, int64_t end,
                          int thread) {
  const block_job *job = context;
  float *panel = job->widened + thread * job->k * kWidenedPanel;
  for (int64_t q = begin; q < end; ++q) {
    widen_block_panel(job, 2 * q, 0, panel);
    widen_block_panel(job, 2 * q + 1, kRows, panel);
    int64_t first = q * kWidenedPanel;
    int64_t cols = job->n - first < kWidenedPanel ? job->n - first
                                                  : kWidenedPanel;
    tfm_panel_gemm_f32_serial(job->m, cols, job->k, job->a, job->lda,
                              job->bias ? job->bias + first : NULL, panel,
                              job->c + first, job->ldc);
  }
}

/*===- Dispatch ---------------------------------------------------------===*/

static int isa_chosen = -1;

tfm_blocks_isa tfm_blocks_best_isa(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512vnni") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return TFM_BLOCKS_ISA_VNNI;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return TFM_BLOCKS_ISA_AVX2;
  return TFM_BLOCKS_ISA_SCALAR;
}

/* The best the CPU runs, or less if TFM_BLOCKS_ISA (scalar, avx2, vnni)
 * says so: what a model compiled with --mcpu for an older CPU meets
 * there, run here. */
static tfm_blocks_isa current_isa(void) {
  if (isa_chosen >= 0)
    return (tfm_blocks_isa)isa_chosen;
  tfm_blocks_isa isa = tfm_blocks_best_isa();
  const char *requested = getenv("TFM_BLOCKS_ISA");
  if (requested && !strcmp(requested, "scalar"))
    isa = TFM_BLOCKS_ISA_SCALAR;
  else if (requested && !strcmp(requested, "avx2") && isa > TFM_BLOCKS_ISA_AVX2)
    isa = TFM_BLOCKS_ISA_AVX2;
  isa_chosen = isa;
  return isa;
}

tfm_blocks_isa tfm_blocks_use_isa(tfm_blocks_isa isa) {
  tfm_blocks_isa before = current_isa();
  tfm_blocks_isa best = tfm_blocks_best_isa();
  isa_chosen = isa > best ? best : isa;
  return before;
}

/* Rows from which a product multiplies faster widened, on CPUs without
 * VNNI. Measured on a Zen 2 (124 M LLaMA, int8): prefill of 32 / 48 / 128
 * / 512 rows 1.10 / 1.19 / 1.27 / 1.33x faster widened; the batch
 * engine's decode of 8 / 16 / 32 / 48 sequences 0.71 / 0.83 / 0.94 /
 * 0.98x (a few rows stream the weights once either way, and widening
 * adds its writes). */
enum { kWidenRows = 48 };

int tfm_blocks_widens(int64_t m) {
  return current_isa() == TFM_BLOCKS_ISA_AVX2 && m >= kWidenRows;
}

static void blocks_chunk(void *context, int64_t begin, int64_t end,
                         int thread) {
  (void)thread;
  const block_job *job = context;
  tfm_blocks_isa isa = current_isa();
  if (job->m == 1 && isa == TFM_BLOCKS_ISA_VNNI) {
    row_vnni(job, begin, end);
    return;
  }
  if (job->m == 1 && isa == TFM_BLOCKS_ISA_AVX2) {
    row_avx2(job, begin, end);
    return;
  }
  if (isa == TFM_BLOCKS_ISA_VNNI) {
    for (int64_t p = begin; p < end; p += 2)
      for (int64_t i = 0; i < job->m; i += kTile)
        tile_vnni(job, p, i, job->m - i < kTile ? (int)(job->m - i) : kTile,
                  end - p < 2 ? 1 : 2);
    return;
  }
  for (int64_t p = begin; p < end; ++p)
    for (int64_t i = 0; i < job->m; i += kTile) {
      int rows = job->m - i < kTile ? (int)(job->m - i) : kTile;
      if (isa == TFM_BLOCKS_ISA_AVX2)
        tile_avx2(job, p, i, rows);
      else
        tile_scalar(job, p, i, rows);
    }
}

static void linear_blocks(tfm_memref2d_f32 *a, tfm_memref1d_i8 *bytes,
                          tfm_memref1d_f32 *bias, tfm_memref2d_f32 *c,
                          int64_t format) {
  int64_t m = a->sizes[0], k = a->sizes[1], n = c->sizes[1];
  if (m == 0 || n == 0)
    return;
  block_job job = {
      .weights = (const uint8_t *)(bytes->aligned + bytes->offset),
      .format = (int)format,
      .m = m,
      .n = n,
      .k = k,
      .blocks = tfm_blocks_per_row(k),
      .panel_bytes = tfm_block_panel_bytes((int)format, k),
      .bias = bias ? bias->aligned + bias->offset : NULL,
      .c = c->aligned + c->offset,
      .ldc = c->strides[0],
  };
  /* Codegen passes dense rows; anything else would be a compiler bug, and
   * quantizing the activations needs rows of A contiguous. */
  if (a->strides[1] != 1 || c->strides[1] != 1 ||
      (bias && bias->strides[0] != 1) ||
      bytes->sizes[0] < tfm_block_matrix_bytes((int)format, n, k))
    abort();
  int64_t panels = (n + kRows - 1) / kRows;
  if (tfm_blocks_widens(m)) {
    int64_t pairs = (panels + 1) / 2;
    job.a = a->aligned + a->offset;
    job.lda = a->strides[0];
    /* 64-byte aligned: the panel GEMM ran a fifth slower over panels
     * only malloc's 16 bytes aligned (loads across cache lines). */
    char *widened = scratch_of(
        (size_t)(tfm_thread_count() * k * kWidenedPanel) * sizeof(float) + 64);
    job.widened = widened ? (float *)(widened + (64 - (uintptr_t)widened % 64) % 64)
                          : NULL;
    if (!job.widened) {
      tfm_buffer_fail_call(); /* the model's call reports out of memory */
      abort();                /* called outside one: nowhere to report */
    }
    tfm_parallel_for(pairs, 1, widened_chunk, &job);
    return;
  }
  if (!quantize_activations(a->aligned + a->offset, m, k, a->strides[0],
                            job.blocks, &job.x)) {
    tfm_buffer_fail_call();
    abort();
  }
  /* Several chunks per thread, so that a thread slowed by another
   * process takes fewer. For one row, two a thread and at least 64 KiB of
   * weights each: each chunk starts a cold stream, and on a Zen 2 decode
   * ran 1.5% faster with two chunks a thread than with four (and 12%
   * slower with sixteen of at least 16 KiB). */
  int64_t chunk = panels / ((m == 1 ? 2 : 4) * tfm_thread_count());
  int64_t minimum = m == 1 ? (65536 + job.panel_bytes - 1) / job.panel_bytes : 1;
  tfm_parallel_for(panels, chunk > minimum ? chunk : minimum, blocks_chunk,
                   &job);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_linear_blocks(tfm_memref2d_f32 *a,
                                                  tfm_memref1d_i8 *bytes,
                                                  tfm_memref2d_f32 *c,
                                                  int64_t format) {
  linear_blocks(a, bytes, NULL, c, format);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_linear_blocks_bias(
    tfm_memref2d_f32 *a, tfm_memref1d_i8 *bytes, tfm_memref1d_f32 *bias,
    tfm_memref2d_f32 *c, int64_t format) {
  linear_blocks(a, bytes, bias, c, format);
}

/*===- Rows widened -----------------------------------------------------===*/

/* Row `row` of a [rows, cols] matrix in block panels, widened and scaled. */
static void widen_row(const uint8_t *weights, int format, int64_t cols,
                      int64_t row, float scale, float *out) {
  int64_t blocks = tfm_blocks_per_row(cols);
  panel_parts parts = parts_of(
      weights + (row / kRows) * tfm_block_panel_bytes(format, cols), format,
      blocks);
  const uint8_t *codes = parts.codes;
  int r = (int)(row % kRows);
  int32_t offset = code_offset(format);
  for (int64_t b = 0; b < blocks; ++b) {
    int q6 = format == TFM_BLOCKS_Q6_K;
    float s[2] = {q6 ? q6_scale(&parts, b, 0, r) * scale
                     : block_scale(format, &parts, b, r) * scale,
                  q6 ? q6_scale(&parts, b, 1, r) * scale : 0.0f};
    float m = block_min(format, &parts, b, r) * scale;
    const uint8_t *block_codes = codes + b * TFM_BLOCK_CODE_BYTES(format);
    for (int e = 0; e < kBlock && b * kBlock + e < cols; ++e)
      out[b * kBlock + e] =
          (float)(stored_code(format, block_codes, r, e) - offset) *
              s[q6 && e >= 16] + m;
  }
}

TFM_EXPORT void _mlir_ciface_tfm_rt_embedding_blocks(tfm_memref1d_i32 *ids,
                                                     tfm_memref1d_i8 *bytes,
                                                     tfm_memref2d_f32 *out,
                                                     int64_t format,
                                                     float scale) {
  const uint8_t *weights = (const uint8_t *)(bytes->aligned + bytes->offset);
  int64_t cols = out->sizes[1];
  for (int64_t i = 0; i < ids->sizes[0]; ++i)
    widen_row(weights, (int)format, cols,
              ids->aligned[ids->offset + i * ids->strides[0]], scale,
              out->aligned + out->offset + i * out->strides[0]);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_dequantize_blocks(tfm_memref1d_i8 *bytes,
                                                      tfm_memref2d_f32 *out,
                                                      int64_t format) {
  const uint8_t *weights = (const uint8_t *)(bytes->aligned + bytes->offset);
  for (int64_t row = 0; row < out->sizes[0]; ++row)
    widen_row(weights, (int)format, out->sizes[1], row, 1.0f,
              out->aligned + out->offset + row * out->strides[0]);
}
