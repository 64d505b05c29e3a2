/*===- kernels_panel_bf16_dot.c - bf16 panels by vdpbf16ps ---------------===//
 *
 * C[m, n] = A[m, k] · W[n, k] over W in bf16 panels of 32 output features
 * (panels[p][k][j] = W[32p + j][k]; see kernels_panel_gemm.c), with
 * AVX-512 BF16's vdpbf16ps: each lane adds the products of two bf16 pairs,
 * so one instruction does two depths of 16 outputs, twice what an f32 FMA
 * over widened panels does.
 *
 * The instruction wants each lane's pair along the depth, and a panel
 * stores 32 features of one depth side by side: two panel rows (depths k
 * and k+1) interleaved by vpunpcklwd/vpunpckhwd give the pairs of features
 * 0-3, 8-11, 16-19, 24-27 ("low" order) and of 4-7, 12-15, 20-23, 28-31
 * ("high"). The tile's two accumulators per row hold those orders: the
 * bias is put in them first, C holds them between depth blocks, and each
 * row's outputs are put back in feature order after the last, as the
 * widening path does with its own order.
 *
 * A is rounded to bf16 once per call (round to nearest even, as
 * vcvtne2ps2bf16 does) into pairs of depths, zero-padded to an even
 * depth; an odd depth's last step pairs the panel's last row with zeros.
 * The pairs live in a buffer of the generated code's heap
 * (runtime/core/buffer_cache.h), which keeps it for the next call of the
 * size: wav2vec2's convolutions round up to 150 MB a call, and fresh
 * pages for them were a seventh of its 30 s of audio (page faults).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/kernels/kernels_panel_bf16_dot.h"

#include "runtime/core/buffer_cache.h"
#include "runtime/core/thread_pool.h"
#include "runtime/kernels/vector_width.h"
#include "tfm/half_floats.h"

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

enum {
  kPanel = 32,       /* output features per panel */
  kRowBlock = 8,     /* rows of A per tile: 16 accumulators */
  kDepthBlock = 256, /* depth per pass (even): a 16 KiB panel slice, in L1 */
  kRowPanel = 128,   /* rows per pass over the panels, in L2 */
};

#define TFM_BF16_TARGET "avx512f,avx512bw,avx512bf16"
#define TFM_BF16_INLINE                                                        \
  static inline __attribute__((always_inline, target(TFM_BF16_TARGET)))

static int dot_chosen = -1;

static int cpu_has_bf16_dot(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512bf16");
}

/* Whether vdpbf16ps beats widening the panels into f32 FMAs on this CPU.
 * On AMD's Zen 4 and Zen 5 it does (124M LLaMA bf16 prefill 1.5x the
 * widened path); on an Intel Xeon with AVX512_BF16 (family 6, model 207)
 * it ran at 0.61x (873 against 1437 tokens/s at 128): there the
 * instruction issues on one port, at most as many products a cycle as two
 * FMA ports, and the pairing shuffles take the other FMA port. */
static int bf16_dot_pays_off(void) { return tfm_cpu_is_amd(); }

int tfm_bf16_dot_enabled(void) {
  if (dot_chosen < 0) {
    const char *requested = getenv("TFM_BF16_DOT");
    int wanted = requested && *requested ? strcmp(requested, "0") != 0
                                         : bf16_dot_pays_off();
    dot_chosen = wanted && cpu_has_bf16_dot();
  }
  return dot_chosen;
}

int tfm_bf16_dot_use(int enabled) {
  int before = tfm_bf16_dot_enabled();
  dot_chosen = enabled && cpu_has_bf16_dot();
  return before;
}

__attribute__((target(TFM_BF16_TARGET))) void
tfm_bf16_row_pairs(const float *a, int64_t k, uint32_t *pairs) {
  int64_t q = 0;
  for (; q + 32 <= k; q += 32) {
    __m512bh packed =
        _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + q + 16), _mm512_loadu_ps(a + q));
    _mm512_storeu_si512((void *)(pairs + q / 2), (__m512i)packed);
  }
  for (; q < k; q += 2) {
    uint32_t low = tfm_float_to_bf16(a[q]);
    uint32_t high = q + 1 < k ? tfm_float_to_bf16(a[q + 1]) : 0;
    pairs[q / 2] = low | high << 16;
  }
}

/* Index vectors between feature order (two vectors: 0-15, 16-31) and the
 * tile's low/high orders (see the top of the file). */
TFM_BF16_INLINE void features_to_dot(__m512 *v0, __m512 *v1) {
  const __m512i low = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18,
                                        19, 24, 25, 26, 27);
  const __m512i high = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21,
                                         22, 23, 28, 29, 30, 31);
  __m512 lo = _mm512_permutex2var_ps(*v0, low, *v1);
  __m512 hi = _mm512_permutex2var_ps(*v0, high, *v1);
  *v0 = lo, *v1 = hi;
}
TFM_BF16_INLINE void dot_to_features(__m512 *lo, __m512 *hi) {
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6,
                                          7, 20, 21, 22, 23);
  const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12,
                                           13, 14, 15, 28, 29, 30, 31);
  __m512 f0 = _mm512_permutex2var_ps(*lo, first, *hi);
  __m512 f1 = _mm512_permutex2var_ps(*lo, second, *hi);
  *lo = f0, *hi = f1;
}

/* One step of a tile: the panel rows of depths 2q and 2q + 1 (`even`,
 * `odd`) times each row's pair q of A. */
TFM_BF16_INLINE void dot_step(int rows, __m512 acc[][2], __m512i even,
                              __m512i odd, const uint32_t *a, int64_t lda,
                              int64_t q) {
  __m512bh lo = (__m512bh)_mm512_unpacklo_epi16(even, odd);
  __m512bh hi = (__m512bh)_mm512_unpackhi_epi16(even, odd);
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[r * lda + q]);
    acc[r][0] = _mm512_dpbf16_ps(acc[r][0], lo, x);
    acc[r][1] = _mm512_dpbf16_ps(acc[r][1], hi, x);
  }
}

/* C[rows, 32] (low/high order) = start + A[rows, depth] · panel[depth],
 * rows <= 8 a constant at every call so that the tile stays in registers;
 * `a` is pair words (row stride `lda` words) from the block's first depth,
 * `start` the bias on the first depth block and NULL after (C is added
 * to). `depth` is even except for the last block of an odd depth. */
TFM_BF16_INLINE void dot_tile(int rows, int64_t depth, const uint32_t *a,
                              int64_t lda, const uint16_t *panel, float *c,
                              int64_t ldc, const float *start) {
  __m512 acc[kRowBlock][2];
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    acc[r][0] = _mm512_loadu_ps(start ? start : c + r * ldc);
    acc[r][1] = _mm512_loadu_ps(start ? start + 16 : c + r * ldc + 16);
  }
  int64_t pairs = depth / 2;
  for (int64_t q = 0; q < pairs; ++q)
    dot_step(rows, acc,
             _mm512_loadu_si512((const void *)(panel + 2 * q * kPanel)),
             _mm512_loadu_si512((const void *)(panel + (2 * q + 1) * kPanel)),
             a, lda, q);
  if (depth % 2) /* an odd depth's last row, beside zeros */
    dot_step(rows, acc,
             _mm512_loadu_si512((const void *)(panel + 2 * pairs * kPanel)),
             _mm512_setzero_si512(), a, lda, pairs);
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

/* Rows [i0, i1) of A (f32, row stride `lda`) into bf16 pairs. */
typedef struct {
  const float *a;
  int64_t lda, k, pair_stride;
  uint32_t *pairs;
} pairs_job;

__attribute__((target(TFM_BF16_TARGET))) static void
rows_to_pairs(void *context, int64_t i0, int64_t i1, int thread) {
  (void)thread;
  const pairs_job *job = context;
  for (int64_t i = i0; i < i1; ++i)
    tfm_bf16_row_pairs(job->a + i * job->lda, job->k,
                       job->pairs + i * job->pair_stride);
}

typedef struct {
  int64_t m, n, k;
  const uint32_t *pairs; /* A in bf16 pairs, row stride `lda` words */
  int64_t lda;
  const float *bias; /* NULL for none */
  const uint16_t *panels;
  float *c;
  int64_t ldc;
} dot_job;

/* Rows [i, i + rows) of one panel over depth [k0, k0 + depth). */
TFM_BF16_INLINE void dot_rows(const dot_job *job, int64_t i, int64_t rows,
                              const uint16_t *panel, int64_t k0,
                              int64_t depth, float *c, int64_t ldc,
                              const float *start) {
  const uint32_t *a = job->pairs + i * job->lda + k0 / 2;
  const uint16_t *p = panel + k0 * kPanel;
  int64_t lda = job->lda;
  switch (rows) {
  case 8: dot_tile(8, depth, a, lda, p, c, ldc, start); break;
  case 7: dot_tile(7, depth, a, lda, p, c, ldc, start); break;
  case 6: dot_tile(6, depth, a, lda, p, c, ldc, start); break;
  case 5: dot_tile(5, depth, a, lda, p, c, ldc, start); break;
  case 4: dot_tile(4, depth, a, lda, p, c, ldc, start); break;
  case 3: dot_tile(3, depth, a, lda, p, c, ldc, start); break;
  case 2: dot_tile(2, depth, a, lda, p, c, ldc, start); break;
  default: dot_tile(1, depth, a, lda, p, c, ldc, start); break;
  }
}

/* 32 outputs at `c` from low/high order to feature order, in place. */
TFM_BF16_INLINE void outputs_to_features(float *c) {
  __m512 lo = _mm512_loadu_ps(c), hi = _mm512_loadu_ps(c + 16);
  dot_to_features(&lo, &hi);
  _mm512_storeu_ps(c, lo);
  _mm512_storeu_ps(c + 16, hi);
}

__attribute__((target(TFM_BF16_TARGET))) static void
dot_panels(void *context, int64_t p0, int64_t p1, int thread) {
  (void)thread;
  const dot_job *job = context;
  int64_t k = job->k, m = job->m;
  float start[kPanel], tile[kRowBlock * kPanel];
  for (int64_t i0 = 0; i0 < m; i0 += kRowPanel) {
    int64_t i1 = m - i0 < kRowPanel ? m : i0 + kRowPanel;
    for (int64_t p = p0; p < p1; ++p) {
      const uint16_t *panel = job->panels + p * k * kPanel;
      int64_t cols = job->n - p * kPanel < kPanel ? job->n - p * kPanel : kPanel;
      for (int64_t j = 0; j < kPanel; ++j)
        start[j] = job->bias && j < cols ? job->bias[p * kPanel + j] : 0;
      __m512 lo = _mm512_loadu_ps(start), hi = _mm512_loadu_ps(start + 16);
      features_to_dot(&lo, &hi);
      _mm512_storeu_ps(start, lo);
      _mm512_storeu_ps(start + 16, hi);
      float *c = job->c + p * kPanel;
      if (cols < kPanel) {
        /* The zero-padded last panel: whole depth into a tile, then the
         * valid columns out. */
        for (int64_t i = i0; i < i1; i += kRowBlock) {
          int64_t rows = i1 - i < kRowBlock ? i1 - i : kRowBlock;
          dot_rows(job, i, rows, panel, 0, k, tile, kPanel, start);
          for (int64_t r = 0; r < rows; ++r) {
            outputs_to_features(tile + r * kPanel);
            memcpy(c + (i + r) * job->ldc, tile + r * kPanel,
                   (size_t)cols * sizeof(float));
          }
        }
        continue;
      }
      for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
        int64_t depth = k - k0 < kDepthBlock ? k - k0 : kDepthBlock;
        for (int64_t i = i0; i < i1; i += kRowBlock)
          dot_rows(job, i, i1 - i < kRowBlock ? i1 - i : kRowBlock, panel,
                   k0, depth, c + i * job->ldc, job->ldc,
                   k0 == 0 ? start : NULL);
      }
      for (int64_t i = i0; i < i1; ++i)
        outputs_to_features(c + i * job->ldc);
    }
  }
}

int tfm_panel_gemm_bf16_dot(int64_t m, int64_t n, int64_t k, const float *a,
                            int64_t lda, const float *bias,
                            const uint16_t *panels, float *c, int64_t ldc) {
  if (!tfm_bf16_dot_enabled() || k == 0)
    return 0;
  int64_t pair_stride = (k + 1) / 2;
  /* Inside a model's call a failure reports out of memory from it; outside
   * one (a unit test) the panels are widened instead. */
  uint32_t *pairs = _mlir_memref_to_llvm_aligned_alloc(
      64, (size_t)(m * pair_stride) * sizeof *pairs);
  if (!pairs)
    return 0;
  /* On every thread: one thread's rounding (and its first touch of the
   * copy's pages) took a tenth of wav2vec2's 30 s of audio. About 64 KiB
   * of A a chunk. */
  pairs_job rows = {a, lda, k, pair_stride, pairs};
  int64_t grain = (1 << 14) / (k + 1) + 1;
  tfm_parallel_for(m, grain, rows_to_pairs, &rows);
  dot_job job = {m, n, k, pairs, pair_stride, bias, panels, c, ldc};
  int64_t used = (n + kPanel - 1) / kPanel;
  int64_t chunk = used / (4 * tfm_thread_count());
  tfm_parallel_for(used, chunk > 1 ? chunk : 1, dot_panels, &job);
  _mlir_memref_to_llvm_free(pairs);
  return 1;
}
