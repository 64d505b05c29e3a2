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
 *   row's scales into f32 accumulators;
 * - q8_channel (int8 per channel, --compute-dtype int8) has one scale a
 *   row: activations are quantized per row too, and with VNNI a row's
 *   sums stay int32 across the whole row and are scaled once at its end,
 *   which takes the int8 products from about 70% of vpdpbusd's peak to
 *   about 95% (bench/gemm_kernels.c).
 *
 * vpdpbusd takes unsigned × signed bytes: weight codes are stored with an
 * offset (q8_0: +128; q4_0's nibbles are 0..15, offset 8; q6_k's codes
 * 0..63, offset 32), and the offset times the block's activation sum is
 * subtracted; q4_1's, q4_k's and q5_k's codes need no offset, and their
 * minimum times the activation sum is added in f32. GGUF's K-quants scale
 * in two levels: q4_k's and q5_k's blocks by d · scale (a 6-bit scale per
 * block, an f16 d per super-block of 8 blocks), q6_k's halves of a block
 * each by their own d · scale (so its activations' sums are kept per half
 * too). The result is the same on every path up to the order of the f32
 * additions.
 *
 * tfm.head_linear (MLA's per-head projections) over block panels is the
 * same product a head at a time (tfm_rt_head_linear_blocks, below).
 *
 * Panels are split over the runtime's threads; within a panel, rows of A
 * go a tile of up to 8 at a time, so that each weight vector loaded serves
 * them all. Without VNNI, products of many rows (prefill) multiply faster
 * as f32 FMAs: there pairs of block panels are widened into f32 panels
 * for the panel GEMM (kernels_panel_gemm.h) instead.
 *
 * This file holds the activations' quantization, the plain C path and the
 * dispatch; each instruction set's path is a file of x86/ compiled with its
 * own -m flags (kernels_blocks_internal.h declares them).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/thread_pool.h"
#include "runtime/kernels/kernels_blocks.h"
#include "runtime/kernels/kernels_blocks_internal.h"
#include "runtime/kernels/simd.h"
#include "runtime/kernels/vector_width.h"
#include "tfm/runtime_kernels.h"

#include <immintrin.h>
#include <math.h>
#include <stdlib.h>

/*===- Activations ----------------------------------------------------===*/

/* Row i of the quantized rows is row i % group_rows of group
 * i / group_rows: A's rows from a + (i % group_rows) · lda +
 * (i / group_rows) · group_offset. A plain product is one group; a
 * per-head product (tfm_rt_head_linear_blocks) a group a head, so that
 * each head's rows are consecutive. */
typedef struct {
  const float *a;
  int64_t lda, k, blocks;
  quantized_rows x;
  int64_t group_rows, group_offset;
  int per_row; /* one scale a row (q8_channel) */
  /* per row, for the VNNI q8_channel tile only, which reads a row's codes,
   * its first block's scale and its row sum: no per-block scales or sums */
  int row_only;
} quantize_job;

/* Each row's blocks of 32 as int8 codes, a scale and their sum. Defined
 * for 16-float vectors (AVX-512) and 8-float ones (AVX2, where GCC keeps
 * 16-float vectors in memory: vector_width.h). Codes round to the nearest
 * integer, ties to even, by adding and taking away 1.5 · 2^23 (|v| <=
 * 127); the rounded floats are whole numbers, so their sums by halvings
 * (HSUM) are the codes' sums exactly. Whole blocks are read in place, the
 * last, partial one through a zero-padded copy; lane maxima and sums by
 * halvings, not lane by lane (a tenth of an int8 BERT's time went here).
 * Per row (q8_channel), the row's largest magnitude is found first and
 * gives every block's scale; for the VNNI tile alone (row_only), the
 * row's code sum is one vector sum and a halving at the row's end, and no
 * block has a scale or sums of its own (the halvings a block took 7% of
 * an int8 BERT's time). */
#define TFM_DEFINE_QUANTIZE_ROWS(NAME, VF, VI, LANES, LOAD, MAX, HMAX, HSUM,   \
                                 STORE_CODES)                                  \
  TFM_CLONED                                                                   \
  static void NAME(const quantize_job *job, int64_t begin, int64_t end) {      \
    enum { kVectors = kBlock / LANES };                                        \
    const float magic = 12582912.0f;                                           \
    for (int64_t i = begin; i < end; ++i) {                                    \
      const float *row = job->a + i % job->group_rows * job->lda +             \
                         i / job->group_rows * job->group_offset;              \
      int8_t *codes = job->x.codes + i * job->blocks * kBlock;                 \
      float row_amax = 0;                                                      \
      if (job->per_row) {                                                      \
        VF magnitude = {0};                                                    \
        int64_t whole = job->k / LANES * LANES;                                \
        for (int64_t e = 0; e < whole; e += LANES) {                           \
          VF v = LOAD(row + e);                                                \
          magnitude = MAX(magnitude, MAX(v, -v));                              \
        }                                                                      \
        row_amax = HMAX(magnitude);                                            \
        for (int64_t e = whole; e < job->k; ++e)                               \
          row_amax = fmaxf(row_amax, fabsf(row[e]));                           \
      }                                                                        \
      float row_inverse = row_amax > 0 ? 127.0f / row_amax : 0.0f;             \
      VF row_total = {0};                                                      \
      for (int64_t b = 0; b < job->blocks; ++b) {                              \
        float padded[kBlock];                                                  \
        int64_t first = b * kBlock;                                            \
        const float *values = row + first;                                     \
        if (job->k - first < kBlock) {                                         \
          memset(padded, 0, sizeof padded);                                    \
          memcpy(padded, values, (size_t)(job->k - first) * sizeof(float));    \
          values = padded;                                                     \
        }                                                                      \
        VF v[kVectors], magnitude = {0};                                       \
        for (int q = 0; q < kVectors; ++q)                                     \
          v[q] = LOAD(values + q * LANES);                                     \
        if (job->row_only) {                                                   \
          for (int q = 0; q < kVectors; ++q) {                                 \
            VF rounded = (v[q] * row_inverse + magic) - magic;                 \
            STORE_CODES(codes + b * kBlock + q * LANES,                        \
                        __builtin_convertvector(rounded, VI));                 \
            row_total += rounded;                                              \
          }                                                                    \
          continue;                                                            \
        }                                                                      \
        for (int q = 0; q < kVectors; ++q)                                     \
          magnitude = MAX(magnitude, MAX(v[q], -v[q]));                        \
        float amax = job->per_row ? row_amax : HMAX(magnitude);                \
        float inverse = amax > 0 ? 127.0f / amax : 0.0f;                       \
        VF sums[2] = {{0}, {0}};                                               \
        for (int q = 0; q < kVectors; ++q) {                                   \
          VF rounded = (v[q] * inverse + magic) - magic;                       \
          STORE_CODES(codes + b * kBlock + q * LANES,                          \
                      __builtin_convertvector(rounded, VI));                   \
          sums[q / (kVectors / 2)] += rounded;                                 \
        }                                                                      \
        int32_t half[2] = {(int32_t)HSUM(sums[0]), (int32_t)HSUM(sums[1])};    \
        job->x.scales[i * job->blocks + b] = amax / 127.0f;                    \
        job->x.sums[i * job->blocks + b] = half[0] + half[1];                  \
        job->x.half_sums[2 * (i * job->blocks + b)] = half[0];                 \
        job->x.half_sums[2 * (i * job->blocks + b) + 1] = half[1];             \
      }                                                                        \
      if (job->row_only) {                                                     \
        job->x.row_sums[i] = (int32_t)HSUM(row_total);                         \
        job->x.scales[i * job->blocks] = row_amax / 127.0f;                    \
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
TFM_DEFINE_QUANTIZE_ROWS(quantize_rows, v16, vi16, 16, load16, vmax, hmax, hsum,
                         store_codes16)
TFM_DEFINE_QUANTIZE_ROWS(quantize_rows8, v8, vi8, 8, load8, vmax8, hmax8, hsum8,
                         store_codes8)
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

/* Quantizes `groups` groups of `m` rows of A (row i of group g at a + i ·
 * lda + g · group_offset) into x, a group's rows after another's. */
static int quantize_activations(const float *a, int64_t m, int64_t k,
                                int64_t lda, int64_t groups,
                                int64_t group_offset, int64_t blocks,
                                int per_row, int row_only, quantized_rows *x) {
  int64_t rows = m * groups;
  size_t codes = (size_t)(rows * blocks * kBlock);
  size_t need =
      codes + (size_t)(rows * blocks) * (sizeof(float) + 3 * sizeof(int32_t)) +
      (size_t)rows * sizeof(int32_t) + 64;
  char *base = scratch_of(need);
  if (!base)
    return 0;
  x->codes = (int8_t *)base;
  /* Scales and sums after the codes, 4-byte aligned (codes are whole
   * blocks of 32 bytes). */
  x->scales = (float *)(base + codes);
  x->sums = (int32_t *)(x->scales + rows * blocks);
  x->half_sums = x->sums + rows * blocks;
  x->row_sums = x->half_sums + 2 * rows * blocks;
  quantize_job job = {a, lda,          k,       blocks,  *x,
                      m, group_offset, per_row, row_only};
  tfm_parallel_for(rows, rows > 8 ? 8 : rows, quantize_chunk, &job);
  return 1;
}

/*===- Plain C ---------------------------------------------------------===*/

/* The stored code of row `r` (of the panel), element `e` of a block:
 * q8_0's q + 128 (0..255), q4's q (0..15), q5_k's q (0..31: a nibble and
 * a fifth bit), q6_k's q (0..63: a nibble and two high bits), mxfp4's
 * nibble through TFM_MXFP4_CODE_LIST (0..24). The weight
 * is the block's (q6_k: the half's) scale times (code - code_offset), plus
 * its minimum. */
static int32_t stored_code(int format, const uint8_t *block_codes, int r,
                           int e) {
  if (format == TFM_FORMAT_Q8_0)
    return block_codes[(e / 4) * 64 + r * 4 + e % 4];
  uint8_t byte = block_codes[(e / 8) * 64 + r * 4 + e % 4];
  int32_t nibble = e % 8 < 4 ? byte & 0x0F : byte >> 4;
  if (format == TFM_FORMAT_MXFP4) {
    static const uint8_t codes[16] = {TFM_MXFP4_CODE_LIST};
    return codes[nibble];
  }
  if (format == TFM_FORMAT_Q5_K) {
    int bit = (e / 8) * 2 + (e % 8 >= 4); /* its fifth bit's place */
    return nibble | ((block_codes[256 + r * 4 + e % 4] >> bit) & 1) << 4;
  }
  if (format != TFM_FORMAT_Q6_K)
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
  int64_t code_bytes = tfm_block_code_bytes(job->format);
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
        if (job->format == TFM_FORMAT_Q6_K) {
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

static void widened_chunk(void *context, int64_t begin, int64_t end,
                          int thread) {
  const block_job *job = context;
  float *panel = job->widened + thread * job->k * kWidenedPanel;
  for (int64_t q = begin; q < end; ++q) {
    tfm_blocks_widen_panel_avx2(job, 2 * q, 0, panel);
    tfm_blocks_widen_panel_avx2(job, 2 * q + 1, kRows, panel);
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

/* Whether blocks_chunk multiplies only with q8_channel's VNNI tile,
 * which reads no per-block scale or sum of the activations. */
static int only_channel_tiles(const block_job *job) {
  return job->channel && job->m > 1 && current_isa() == TFM_BLOCKS_ISA_VNNI;
}

static void blocks_chunk(void *context, int64_t begin, int64_t end,
                         int thread) {
  (void)thread;
  const block_job *job = context;
  tfm_blocks_isa isa = current_isa();
  if (job->m == 1 && isa == TFM_BLOCKS_ISA_VNNI) {
    tfm_blocks_row_vnni(job, begin, end);
    return;
  }
  if (job->m == 1 && isa == TFM_BLOCKS_ISA_AVX2) {
    tfm_blocks_row_avx2(job, begin, end);
    return;
  }
  if (isa == TFM_BLOCKS_ISA_VNNI) {
    int64_t tile = job->channel ? kChannelTile : kTile;
    for (int64_t p = begin; p < end; p += 2)
      for (int64_t i = 0; i < job->m; i += tile)
        tfm_blocks_tile_vnni(job, p, i,
                             job->m - i < tile ? (int)(job->m - i) : (int)tile,
                             end - p < 2 ? 1 : 2);
    return;
  }
  for (int64_t p = begin; p < end; ++p)
    for (int64_t i = 0; i < job->m; i += kTile) {
      int rows = job->m - i < kTile ? (int)(job->m - i) : kTile;
      if (isa == TFM_BLOCKS_ISA_AVX2)
        tfm_blocks_tile_avx2(job, p, i, rows);
      else
        tile_scalar(job, p, i, rows);
    }
}

/* Each thread's f32 panel pair for the widened path, 64-byte aligned: the
 * panel GEMM ran a fifth slower over panels only malloc's 16 bytes aligned
 * (loads across cache lines). NULL when the scratch cannot grow. */
static float *widened_panels(int64_t k) {
  char *widened = scratch_of(
      (size_t)(tfm_thread_count() * k * kWidenedPanel) * sizeof(float) + 64);
  return widened ? (float *)(widened + (64 - (uintptr_t)widened % 64) % 64)
                 : NULL;
}

/* Work items a thread takes at once out of `items` panels for a product
 * of `m` rows: several chunks per thread, so that a thread slowed by
 * another process takes fewer. For one row, two a thread and at least 64
 * KiB of weights each: each chunk starts a cold stream, and on a Zen 2
 * decode ran 1.5% faster with two chunks a thread than with four (and 12%
 * slower with sixteen of at least 16 KiB). */
static int64_t panels_per_chunk(int64_t items, int64_t m, int64_t panel_bytes) {
  int64_t chunk = items / ((m == 1 ? 2 : 4) * tfm_thread_count());
  int64_t minimum = m == 1 ? (65536 + panel_bytes - 1) / panel_bytes : 1;
  return chunk > minimum ? chunk : minimum;
}

/* The format whose layout a weight of `format` has: q8_channel's is
 * q8_0's, its block scales equal along a row. */
static int layout_format(int64_t format) {
  return format == TFM_FORMAT_Q8_CHANNEL ? TFM_FORMAT_Q8_0 : (int)format;
}

/* A product's job over `bytes`, W [n, k] in block panels of `format`, into
 * `c` (rows `ldc` floats apart), before its activations or widened panels. */
static block_job block_job_of(const tfm_memref1d_i8 *bytes, int64_t format,
                              int64_t m, int64_t n, int64_t k, float *c,
                              int64_t ldc) {
  return (block_job){
      .weights = (const uint8_t *)(bytes->aligned + bytes->offset),
      .format = layout_format(format),
      .channel = format == TFM_FORMAT_Q8_CHANNEL && k <= kChannelMaxK,
      .m = m,
      .n = n,
      .k = k,
      .blocks = tfm_blocks_per_row(k),
      .panel_bytes = tfm_block_panel_bytes((int)format, k),
      .c = c,
      .ldc = ldc,
  };
}

/* Where the scratch a product needs could not grow (`grown` 0): the
 * model's call reports out of memory (outside one there is nowhere to
 * report). */
static void require_scratch(int grown) {
  if (grown)
    return;
  tfm_buffer_fail_call();
  abort();
}

static void linear_blocks(tfm_memref2d_f32 *a, tfm_memref1d_i8 *bytes,
                          tfm_memref1d_f32 *bias, tfm_memref2d_f32 *c,
                          int64_t format) {
  int64_t m = a->sizes[0], k = a->sizes[1], n = c->sizes[1];
  if (m == 0 || n == 0)
    return;
  block_job job = block_job_of(bytes, format, m, n, k, c->aligned + c->offset,
                               c->strides[0]);
  job.bias = bias ? bias->aligned + bias->offset : NULL;
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
    job.widened = widened_panels(k);
    require_scratch(job.widened != NULL);
    tfm_parallel_for(pairs, 1, widened_chunk, &job);
    return;
  }
  require_scratch(quantize_activations(
      a->aligned + a->offset, m, k, a->strides[0], 1, 0, job.blocks,
      format == TFM_FORMAT_Q8_CHANNEL, only_channel_tiles(&job), &job.x));
  tfm_parallel_for(panels, panels_per_chunk(panels, m, job.panel_bytes),
                   blocks_chunk, &job);
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

/*===- Per-head products ------------------------------------------------===*/

/* tfm.head_linear over block panels: C[i, h, :] = A[i, h, :] · W_hᵀ, where
 * W_h is rows [h·n, (h+1)·n) of one [heads·n, k] matrix. With n a whole
 * number of panels, head h is an ordinary product over its own panels, so
 * the kernels above run unchanged on a job moved to it; the activations
 * are quantized head after head, so that a head's rows are consecutive.
 * Work items (panels, or pairs of panels widened) of all heads share one
 * parallel region. */
typedef struct {
  block_job head0;
  int64_t items;        /* per head */
  int64_t head_bytes;   /* from one head's panels to the next's */
  int64_t a_step;       /* floats from one head's activations to the next's */
  int64_t c_step;       /* and its outputs' */
  int widened;
} head_job;

static void head_chunk(void *context, int64_t begin, int64_t end,
                       int thread) {
  const head_job *heads = context;
  while (begin < end) {
    int64_t h = begin / heads->items, first = begin % heads->items;
    int64_t last = end - h * heads->items;
    if (last > heads->items)
      last = heads->items;
    block_job job = heads->head0;
    job.weights += h * heads->head_bytes;
    job.c += h * heads->c_step;
    if (heads->widened) {
      job.a += h * heads->a_step;
      widened_chunk(&job, first, last, thread);
    } else {
      int64_t rows = h * job.m * job.blocks;
      job.x.codes += rows * kBlock;
      job.x.scales += rows;
      job.x.sums += rows;
      job.x.half_sums += 2 * rows;
      job.x.row_sums += h * job.m;
      blocks_chunk(&job, first, last, thread);
    }
    begin = h * heads->items + last;
  }
}

TFM_EXPORT void _mlir_ciface_tfm_rt_head_linear_blocks(tfm_memref3d_f32 *a,
                                                       tfm_memref1d_i8 *bytes,
                                                       tfm_memref3d_f32 *c,
                                                       int64_t format) {
  int64_t m = a->sizes[0], heads = a->sizes[1], k = a->sizes[2];
  int64_t n = c->sizes[2];
  if (m == 0 || heads == 0 || n == 0)
    return;
  /* Codegen selects this kernel only for whole panels a head, dense rows
   * and the heads' full matrix: anything else is a compiler bug. */
  if (n % kRows || c->sizes[1] != heads || a->strides[2] != 1 ||
      c->strides[2] != 1 ||
      bytes->sizes[0] < tfm_block_matrix_bytes((int)format, heads * n, k))
    abort();
  head_job heads_job = {
      .head0 = block_job_of(bytes, format, m, n, k, c->aligned + c->offset,
                            c->strides[0]),
      .a_step = a->strides[1],
      .c_step = c->strides[1],
      .widened = tfm_blocks_widens(m),
  };
  block_job *job = &heads_job.head0;
  int64_t panels = n / kRows;
  heads_job.head_bytes = panels * job->panel_bytes;
  if (heads_job.widened) {
    heads_job.items = (panels + 1) / 2;
    job->a = a->aligned + a->offset;
    job->lda = a->strides[0];
    job->widened = widened_panels(k);
    require_scratch(job->widened != NULL);
    tfm_parallel_for(heads * heads_job.items, 1, head_chunk, &heads_job);
    return;
  }
  heads_job.items = panels;
  require_scratch(quantize_activations(
      a->aligned + a->offset, m, k, a->strides[0], heads, a->strides[1],
      job->blocks, format == TFM_FORMAT_Q8_CHANNEL, only_channel_tiles(job),
      &job->x));
  int64_t items = heads * panels;
  tfm_parallel_for(items, panels_per_chunk(items, m, job->panel_bytes),
                   head_chunk, &heads_job);
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
    int q6 = format == TFM_FORMAT_Q6_K;
    float s[2] = {q6 ? q6_scale(&parts, b, 0, r) * scale
                     : block_scale(format, &parts, b, r) * scale,
                  q6 ? q6_scale(&parts, b, 1, r) * scale : 0.0f};
    float m = block_min(format, &parts, b, r) * scale;
    const uint8_t *block_codes = codes + b * tfm_block_code_bytes(format);
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
    widen_row(weights, layout_format(format), cols,
              ids->aligned[ids->offset + i * ids->strides[0]], scale,
              out->aligned + out->offset + i * out->strides[0]);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_dequantize_blocks(tfm_memref1d_i8 *bytes,
                                                      tfm_memref2d_f32 *out,
                                                      int64_t format) {
  const uint8_t *weights = (const uint8_t *)(bytes->aligned + bytes->offset);
  for (int64_t row = 0; row < out->sizes[0]; ++row)
    widen_row(weights, layout_format(format), out->sizes[1], row, 1.0f,
              out->aligned + out->offset + row * out->strides[0]);
}
