/*===- kernels_panel_gemm.c - x·Wᵀ over weights packed in panels --------===//
 *
 * Called where tfm-lower-to-linalg found a weight packed at compile time:
 * C[m, n] = A[m, k] · W[n, k] (+ bias[n]), with W stored as panels of 32
 * output features, panels[p][k][j] = W[32p + j][k] (linalg.pack with inner
 * tile 32 on dim 0; the last panel zero-padded).
 *
 * Why panels: a GEMM kernel wants, for each k, a contiguous run of output
 * features to multiply by one broadcast input. OpenBLAS repacks the
 * [out, in] weight into that shape on every call, which in profiles cost
 * as much as the multiplication itself; packed once by the compiler, the
 * weight is read as is. Decode (one row) streams each panel front to back,
 * which is what the memory system does fastest.
 *
 * The micro-kernel keeps an 8 × 32 tile of C in 16 vector registers and
 * adds one rank-1 update per k: two panel vectors, eight broadcast inputs,
 * sixteen FMAs. Depth is blocked so that a panel's slice stays in L1 while
 * every row block of A passes over it. Panels are split over the runtime's
 * threads.
 *
 * bf16 and f16 panels (tfm-quantize-weights) have the same shape at two
 * bytes an element, and are widened in registers: the same loops, with
 * `format` a constant at each inlined call. A bf16 step widens 32 values
 * as 16 pairs, the even rows from the low halves and the odd rows from the
 * high halves, so a bf16 panel's tiles hold its outputs in that "step
 * order": the bias is put in step order first, C holds step order between
 * depth blocks, and each row's 32 outputs are put back in feature order
 * after the last. (Shuffling in the tile instead made GCC spill an
 * accumulator in the inner loop: prefill a third slower than f32's.)
 * Where the CPU has AVX512_BF16, products of several rows over bf16
 * panels go to kernels_panel_bf16_dot.c instead.
 *
 * The tile is sized for AVX-512's 32 vector registers. AVX2 has 16 (of
 * half the width): there an 8 × 32 tile is 32 registers of accumulators
 * alone, and GCC, splitting each 16-float vector into two, spilled and
 * rebuilt every vector through the stack, 2 GFLOP/s, 50 times slower than
 * the machine (a 124 M LLaMA decoded 5 tokens a second on an AVX2-only
 * EPYC). Without AVX-512 (vector_width.h) it uses the narrow tile: 8-float
 * vectors, three rows by 32 outputs (twelve accumulators, the panel's
 * four vectors of the step), and two accumulator sets for one row.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/thread_pool.h"
#include "runtime/kernels/kernels_panel_bf16_dot.h"
#include "runtime/kernels/kernels_panel_gemm.h"
#include "runtime/kernels/simd.h"
#include "runtime/kernels/vector_width.h"
#include "tfm/half_floats.h"
#include "tfm/runtime_kernels.h"
#include <immintrin.h>

enum {
  kPanel = TFM_PANEL_WIDTH, /* output features per panel: two vectors */
  kRowBlock = 8,     /* rows of A per micro-kernel call */
  kDepthBlock = 256, /* k per pass: a 32 KiB panel slice, in L1 */
  kRowPanel = 128,   /* rows per pass over the panels: 128 KiB of A's depth
                        block, in L2 */
  kNarrowRowBlock = 3, /* rows of the narrow (AVX2) tile */
};

/* How panel elements are stored. */
typedef enum { kF32 = 0, kBF16 = 1, kF16 = 2 } panel_format;

typedef struct {
  int64_t m, n, k;
  const float *a, *bias; /* bias: NULL for none */
  const void *panels;
  float *c;
  int64_t lda, ldc;
  panel_format format;
  int narrow; /* the tile for 16 vector registers (AVX2) */
  int stream_non_temporal; /* narrow_row_prefetch's hint: AMD's cores */
} panel_job;

/* What a tile prefetches: at its step k the line holding `next + k *
 * step`. A few rows (batched decode) read each panel slice from memory
 * in their first tile and from cache in the others; left to the hardware
 * prefetcher, memory then idles while the later tiles compute, and a step
 * of 8 rows took the time of one row's stream plus the multiplications
 * (a 124 M LLaMA, AVX2, one core: 42 ms against 23 + 20). So the tiles
 * of a slice share out the next slice's lines and fetch them while they
 * compute: 34 ms (prefetching two or three slices ahead, or into another
 * cache level, measured no faster). `step` 0: a tile with nothing to
 * fetch. */
typedef struct {
  const char *next;
  int64_t step;
} slice_prefetch;

/* A tile's prefetches at its step k: every line of its share's k-th
 * `step` bytes, into L2. One tile alone (batches of up to 8 rows) has
 * 128-byte steps over f32 panels: prefetching only their first line left
 * the second to the hardware, and on an Intel Xeon batched decode of 8
 * sequences ran at 345 tokens/s against 406 with both lines (124M LLaMA,
 * f32; `engine_bench decode 8 128 64`). */
TFM_INLINE void slice_prefetch_step(slice_prefetch ahead, int64_t k) {
  for (int64_t line = 0; line < ahead.step; line += 64)
    __builtin_prefetch(ahead.next + k * ahead.step + line, 0, 2);
}

typedef uint32_t vu16 __attribute__((vector_size(64)));
typedef uint32_t vu8 __attribute__((vector_size(32)));

/* Eight f16 values as f32. GCC 12 converts a _Float16 vector a value at a
 * time (a vpinsrw and a vcvtph2ps each, in every target clone, F16C's
 * too), which made decode over f16 panels 3x slower than over bf16 ones.
 * With F16C (every CPU with AVX2 has it) this is one vcvtph2ps: inlined
 * into the AVX2 and AVX-512 target clones, called from the baseline one
 * where the CPU has F16C. The test of the CPU stays in every clone, a
 * load and a well-predicted branch per step. On a Zen 2, 124M LLaMA, f16
 * weights: decode 44 -> 133-135 tokens/s (bf16's: 127-129), prefill
 * 821-872 -> 983-987. */
static inline __attribute__((target("f16c"))) void
halves_to_floats_f16c(const uint16_t *halves, float *out) {
  /* Through memory, not a returned vector: a call from the baseline clone
   * would return it in a register that clone does not read (-Wpsabi). */
  __m128i packed = _mm_loadu_si128((const __m128i *)halves);
  _mm256_storeu_ps(out, _mm256_cvtph_ps(packed));
}

/* The same a value at a time, where the CPU has no F16C: a call, so that
 * the clones do not carry it unrolled. */
static __attribute__((noinline)) void
halves_to_floats_slowly(const uint16_t *halves, float *out) {
  for (int i = 0; i < 8; ++i)
    out[i] = tfm_f16_to_float(halves[i]);
}

TFM_INLINE v8 halves_to_floats8(const uint16_t *halves) {
  float out[8];
  if (__builtin_cpu_supports("f16c"))
    halves_to_floats_f16c(halves, out);
  else
    halves_to_floats_slowly(halves, out);
  return load8(out);
}

TFM_INLINE v16 halves_to_floats16(const uint16_t *halves) {
  v8 lo = halves_to_floats8(halves), hi = halves_to_floats8(halves + 8);
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                 12, 13, 14, 15);
}

/* Row k of a panel (32 output features) as two vectors: features 0-15 and
 * 16-31 (f32, f16), or the even and the odd features (bf16). */
TFM_INLINE void panel_step(panel_format format, const void *panel, int64_t k,
                           v16 *b0, v16 *b1) {
  if (format == kF32) {
    const float *p = (const float *)panel + k * kPanel;
    *b0 = load16(p);
    *b1 = load16(p + 16);
  } else if (format == kBF16) {
    vu16 pairs;
    memcpy(&pairs, (const uint16_t *)panel + k * kPanel, sizeof pairs);
    *b0 = (v16)(pairs << 16);
    *b1 = (v16)(pairs & 0xFFFF0000u);
  } else {
    *b0 = halves_to_floats16((const uint16_t *)panel + k * kPanel);
    *b1 = halves_to_floats16((const uint16_t *)panel + k * kPanel + 16);
  }
}

/* Bytes of one depth step of a panel (its 32 elements). */
TFM_INLINE int64_t panel_step_bytes(panel_format format) {
  return kPanel * (format == kF32 ? 4 : 2);
}

/* The elements of depth k onwards of a panel stored in `format`. */
TFM_INLINE const void *panel_at(panel_format format, const void *panel,
                                int64_t k) {
  return (const char *)panel + k * panel_step_bytes(format);
}

/* 32 outputs in feature order from a panel step's order, and back. */
TFM_INLINE void features_to_steps(panel_format format, v16 *lo, v16 *hi) {
  if (format != kBF16)
    return;
  v16 even = __builtin_shufflevector(*lo, *hi, 0, 2, 4, 6, 8, 10, 12, 14, 16,
                                     18, 20, 22, 24, 26, 28, 30);
  v16 odd = __builtin_shufflevector(*lo, *hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19,
                                    21, 23, 25, 27, 29, 31);
  *lo = even, *hi = odd;
}
TFM_INLINE void steps_to_features(panel_format format, v16 *lo, v16 *hi) {
  if (format != kBF16)
    return;
  v16 first = __builtin_shufflevector(*lo, *hi, 0, 16, 1, 17, 2, 18, 3, 19, 4,
                                      20, 5, 21, 6, 22, 7, 23);
  v16 second = __builtin_shufflevector(*lo, *hi, 8, 24, 9, 25, 10, 26, 11, 27,
                                       12, 28, 13, 29, 14, 30, 15, 31);
  *lo = first, *hi = second;
}

/* C[rows, 32] = start + A[rows, depth] · panel[depth, 32], rows <= 8,
 * where `start` is the bias (or zeros) on the first depth block, and NULL
 * on later ones, which add to C. `rows` is a constant at every call, so the
 * tile lives in registers. */
TFM_INLINE void panel_tile(panel_format format, int rows, int64_t depth,
                           const float *a, int64_t lda, const void *panel,
                           float *c, int64_t ldc, const float *start,
                           slice_prefetch ahead) {
  v16 acc[kRowBlock][2];
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    acc[r][0] = start ? load16(start) : load16(c + r * ldc);
    acc[r][1] = start ? load16(start + 16) : load16(c + r * ldc + 16);
  }
  for (int64_t k = 0; k < depth; ++k) {
    v16 b0, b1;
    slice_prefetch_step(ahead, k);
    panel_step(format, panel, k, &b0, &b1);
#pragma GCC unroll 8
    for (int r = 0; r < rows; ++r) {
      float x = a[r * lda + k];
      acc[r][0] += x * b0;
      acc[r][1] += x * b1;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    store16(c + r * ldc, acc[r][0]);
    store16(c + r * ldc + 16, acc[r][1]);
  }
}

/* 32 outputs at `c` from step order to feature order (bf16), in place. */
TFM_INLINE void outputs_to_features(panel_format format, float *c) {
  if (format != kBF16)
    return;
  v16 lo = load16(c), hi = load16(c + 16);
  steps_to_features(format, &lo, &hi);
  store16(c, lo);
  store16(c + 16, hi);
}

/* Bytes ahead of its step that the wide one-row kernel prefetches a
 * two-byte panel (bf16, f16), into L1 (prefetcht0). Measured on an Intel
 * Xeon with AVX-512 (`bench/gemv_stream.c`, read probe 29 GB/s): bf16
 * panels streamed at 24.4 GB/s unprefetched against f32's 31, 31.5-32.4
 * prefetched 1-8 KiB ahead (2 KiB here), and 14-18 with prefetchnta at any
 * distance (the narrow path's hint, measured on a Zen 2, where it helps:
 * the hint behaves differently per vendor); f32 panels gained nothing.
 * A prefetch past the weights does not fault. */
enum { kWideRowPrefetchBytes = 2048 };

/* acc += x_k times step k of a panel (as two 16-float vectors), a
 * two-byte panel prefetched kWideRowPrefetchBytes ahead. */
TFM_INLINE void add_step(panel_format format, const void *panel, int64_t k,
                         float x_k, v16 acc[2]) {
  v16 b0, b1;
  if (format != kF32)
    __builtin_prefetch((const char *)panel_at(format, panel, k) +
                           kWideRowPrefetchBytes,
                       0, 3);
  panel_step(format, panel, k, &b0, &b1);
  acc[0] += x_k * b0;
  acc[1] += x_k * b1;
}

/* One row against `count` (1 or 2, a constant at every call) consecutive
 * panels in one pass: y[32 count] = start + x[depth] · panels, two
 * accumulator pairs a panel so that FMA latency never stalls the stream.
 * Two panels a pass give each thread two streams of weights (as the
 * narrow panel_row8_pair and the block kernels do): on the Intel Xeon
 * above, 124M LLaMA bf16 decode went from 108 to 126 tokens/s with two
 * panels, and to 148-153 with the prefetch as well. */
TFM_INLINE void panel_row(panel_format format, int count, int64_t depth,
                          const float *x, const void *panel0, float *y,
                          const float *start0, const float *start1) {
  const void *panels[2] = {panel0, panel_at(format, panel0, depth)};
  const float *starts[2] = {start0, start1};
  v16 acc[2][2][2];
#pragma GCC unroll 2
  for (int j = 0; j < count; ++j) {
    acc[j][0][0] = load16(starts[j]);
    acc[j][0][1] = load16(starts[j] + 16);
    features_to_steps(format, &acc[j][0][0], &acc[j][0][1]);
    acc[j][1][0] = acc[j][1][1] = splat(0);
  }
  int64_t k = 0;
  for (; k + 2 <= depth; k += 2)
#pragma GCC unroll 2
    for (int u = 0; u < 2; ++u)
#pragma GCC unroll 2
      for (int j = 0; j < count; ++j)
        add_step(format, panels[j], k + u, x[k + u], acc[j][u]);
  for (; k < depth; ++k)
#pragma GCC unroll 2
    for (int j = 0; j < count; ++j)
      add_step(format, panels[j], k, x[k], acc[j][0]);
#pragma GCC unroll 2
  for (int j = 0; j < count; ++j) {
    v16 lo = acc[j][0][0] + acc[j][1][0], hi = acc[j][0][1] + acc[j][1][1];
    steps_to_features(format, &lo, &hi);
    store16(y + j * kPanel, lo);
    store16(y + j * kPanel + 16, hi);
  }
}

/*===- The narrow tile: 8-float vectors, for AVX2's 16 registers -------===*/

/* Row k of a panel as four 8-float vectors, in the order panel_step's two
 * 16-float vectors hold them: b[0], b[1] are b0's halves, b[2], b[3] b1's. */
TFM_INLINE void panel_step8(panel_format format, const void *panel, int64_t k,
                            v8 b[4]) {
  if (format == kF32) {
    const float *p = (const float *)panel + k * kPanel;
    for (int q = 0; q < 4; ++q)
      b[q] = load8(p + 8 * q);
  } else if (format == kBF16) {
    vu8 lo, hi;
    memcpy(&lo, (const uint16_t *)panel + k * kPanel, sizeof lo);
    memcpy(&hi, (const uint16_t *)panel + k * kPanel + 16, sizeof hi);
    b[0] = (v8)(lo << 16);
    b[1] = (v8)(hi << 16);
    b[2] = (v8)(lo & 0xFFFF0000u);
    b[3] = (v8)(hi & 0xFFFF0000u);
  } else {
    for (int q = 0; q < 4; ++q)
      b[q] = halves_to_floats8((const uint16_t *)panel + k * kPanel + 8 * q);
  }
}

/* `depth` steps of a panel as f32, in panel_step8's order. */
TFM_INLINE void widen_slice(panel_format format, const void *panel,
                            int64_t depth, float *out) {
  for (int64_t k = 0; k < depth; ++k) {
    v8 b[4];
    panel_step8(format, panel, k, b);
    for (int q = 0; q < 4; ++q)
      store8(out + k * kPanel + 8 * q, b[q]);
  }
}

/* panel_tile with rows <= 3. */
TFM_INLINE void panel_tile8(panel_format format, int rows, int64_t depth,
                            const float *a, int64_t lda, const void *panel,
                            float *c, int64_t ldc, const float *start,
                            slice_prefetch ahead) {
  v8 acc[kNarrowRowBlock][4];
#pragma GCC unroll 3
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      acc[r][q] = load8(start ? start + 8 * q : c + r * ldc + 8 * q);
  for (int64_t k = 0; k < depth; ++k) {
    v8 b[4];
    slice_prefetch_step(ahead, k);
    panel_step8(format, panel, k, b);
#pragma GCC unroll 3
    for (int r = 0; r < rows; ++r) {
      float x = a[r * lda + k];
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q)
        acc[r][q] += x * b[q];
    }
  }
#pragma GCC unroll 3
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      store8(c + r * ldc + 8 * q, acc[r][q]);
}

/* How far ahead of its step, and with which hint, panel_row8 prefetches a
 * two-byte panel (bf16, f16): its stream ran at 75% of the bandwidth bound
 * against f32's 90%. On a Zen 2, 512 bytes ahead put the 124M LLaMA's bf16
 * decode 6% faster (256 or 1024 bytes ahead: 3%; 2048: 8% slower; f32
 * panels: no change), and non-temporal (prefetchnta; the weights are read
 * once a step) streamed bf16 panels at 28.3 GB/s against 25.4 with
 * prefetcht0 (`bench/gemv_stream.c`, read probe 31.2). The hint is the
 * vendor's: an Intel Xeon's cores running the same narrow kernel
 * (`TFM_NARROW_KERNELS=1 gemv_stream tinyllama`) streamed bf16 panels at
 * 19.7 GB/s with prefetchnta and 29.6 with prefetcht0 1 KiB ahead (28.3
 * at 512 bytes; f32 panels 31 either way), as the wide kernels there
 * (kWideRowPrefetchBytes). Past a panel's end it reaches into the next,
 * or past the weights: a prefetch does not fault. */
enum { kNarrowRowPrefetchNtaBytes = 512, kNarrowRowPrefetchT0Bytes = 1024 };

/* panel_row8's prefetch of the line `at`'s stream reaches next. */
TFM_INLINE void narrow_row_prefetch(const char *at, int non_temporal) {
  if (non_temporal)
    __builtin_prefetch(at + kNarrowRowPrefetchNtaBytes, 0, 0);
  else
    __builtin_prefetch(at + kNarrowRowPrefetchT0Bytes, 0, 3);
}

/* A panel's starting outputs (bias or zeros) in panel_step8's order:
 * `start` itself, or for bf16 its permutation into `steps` (once a panel,
 * outside the hot loops). */
TFM_INLINE const float *start_in_step_order(panel_format format,
                                            const float *start, float *steps) {
  if (format != kBF16)
    return start;
  v16 lo = load16(start), hi = load16(start + 16);
  features_to_steps(format, &lo, &hi);
  store16(steps, lo);
  store16(steps + 16, hi);
  return steps;
}

/* acc += x_k times step k of a panel, a two-byte panel's line ahead
 * prefetched (narrow_row_prefetch; a step is one 64-byte line). */
TFM_INLINE void add_step8(panel_format format, int non_temporal,
                          const void *panel, int64_t k, float x_k,
                          v8 acc[4]) {
  v8 b[4];
  if (format != kF32)
    narrow_row_prefetch(panel_at(format, panel, k), non_temporal);
  panel_step8(format, panel, k, b);
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q)
    acc[q] += x_k * b[q];
}

/* panel_row with two accumulator sets (eight registers). */
TFM_INLINE void panel_row8(panel_format format, int non_temporal,
                           int64_t depth, const float *x, const void *panel,
                           float *y, const float *start) {
  float steps[kPanel];
  start = start_in_step_order(format, start, steps);
  v8 acc[2][4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    acc[0][q] = load8(start + 8 * q);
    acc[1][q] = (v8){0};
  }
  int64_t k = 0;
  for (; k + 2 <= depth; k += 2)
#pragma GCC unroll 2
    for (int u = 0; u < 2; ++u)
      add_step8(format, non_temporal, panel, k + u, x[k + u], acc[u]);
  for (; k < depth; ++k)
    add_step8(format, non_temporal, panel, k, x[k], acc[0]);
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q)
    store8(y + 8 * q, acc[0][q] + acc[1][q]);
  outputs_to_features(format, y);
}

/* panel_row8 over two consecutive whole panels in one pass: eight
 * accumulators, a step of each panel in turn, so that each thread reads
 * two streams of weights, as the block kernels' two panels a pass do for
 * int8 and int4. On a Zen 2 (`bench/gemv_stream.c`, AVX2, read probe 34.7
 * GB/s) f32 panels then streamed at 31-32 GB/s against 28 one panel at a
 * time and bf16 at 34 against 30; the 124M LLaMA decoded 9% faster in f32
 * (66.1 -> 71.8 tokens/s, same rounds), 12% in bf16 (130.0 -> 145.5) and
 * 11% in f16, the 1.1B 4% in f32 and 8% in bf16. Three panels a pass
 * streamed f32 a little faster alone and decoded no faster. */
TFM_INLINE void panel_row8_pair(panel_format format, int non_temporal,
                                int64_t depth, const float *x,
                                const void *panel0,
                                const void *panel1, float *y,
                                const float *start0, const float *start1) {
  const void *panels[2] = {panel0, panel1};
  float steps[2][kPanel];
  const float *starts[2] = {start_in_step_order(format, start0, steps[0]),
                            start_in_step_order(format, start1, steps[1])};
  v8 acc[2][4];
#pragma GCC unroll 2
  for (int j = 0; j < 2; ++j)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      acc[j][q] = load8(starts[j] + 8 * q);
  for (int64_t k = 0; k < depth; ++k)
#pragma GCC unroll 2
    for (int j = 0; j < 2; ++j)
      add_step8(format, non_temporal, panels[j], k, x[k], acc[j]);
#pragma GCC unroll 2
  for (int j = 0; j < 2; ++j) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      store8(y + j * kPanel + 8 * q, acc[j][q]);
    outputs_to_features(format, y + j * kPanel);
  }
}

/* The start of a panel's outputs: its 32 bias values, or zeros. A last,
 * partial panel's bias is copied so that no read passes its end. */
TFM_INLINE const float *panel_start(const panel_job *job, int64_t p,
                                    float *scratch) {
  int64_t cols = job->n - p * kPanel < kPanel ? job->n - p * kPanel : kPanel;
  if (job->bias && cols == kPanel)
    return job->bias + p * kPanel;
  for (int64_t j = 0; j < kPanel; ++j)
    scratch[j] = job->bias && j < cols ? job->bias[p * kPanel + j] : 0;
  return scratch;
}

/* Rows [i, i + rows) of one panel over depth [k0, k0 + depth), in the
 * wide or the narrow tile (`narrow` a constant at each call): the switch
 * gives each row count its own register-resident tile. */
TFM_INLINE void panel_rows(panel_format format, int narrow,
                           const panel_job *job, int64_t i, int64_t rows,
                           const void *panel, int64_t k0, int64_t depth,
                           float *c, int64_t ldc, const float *start,
                           slice_prefetch ahead) {
  const float *a = job->a + i * job->lda + k0;
  int64_t lda = job->lda;
#define TFM_TILE(KERNEL, ROWS)                                                 \
  KERNEL(format, ROWS, depth, a, lda, panel, c, ldc, start, ahead)
  if (narrow) {
    switch (rows) {
    case 3: TFM_TILE(panel_tile8, 3); break;
    case 2: TFM_TILE(panel_tile8, 2); break;
    default: TFM_TILE(panel_tile8, 1); break;
    }
    return;
  }
  switch (rows) {
  case 8: TFM_TILE(panel_tile, 8); break;
  case 7: TFM_TILE(panel_tile, 7); break;
  case 6: TFM_TILE(panel_tile, 6); break;
  case 5: TFM_TILE(panel_tile, 5); break;
  case 4: TFM_TILE(panel_tile, 4); break;
  case 3: TFM_TILE(panel_tile, 3); break;
  case 2: TFM_TILE(panel_tile, 2); break;
  default: TFM_TILE(panel_tile, 1); break;
  }
#undef TFM_TILE
}

/* Tile `tile` of `tiles` over a slice of `depth` steps: its share of the
 * `bytes` at `next` (the slice the tiles read after this one). */
TFM_INLINE slice_prefetch share_of_next(const void *next, int64_t bytes,
                                        int64_t tiles, int64_t tile,
                                        int64_t depth) {
  int64_t step = (bytes + tiles * depth - 1) / (tiles * depth);
  return (slice_prefetch){(const char *)next + tile * depth * step, step};
}


/* `narrow`, a constant at each call: the AVX2 tile. */
TFM_INLINE void panel_gemm_range(panel_format format, int narrow,
                                 const panel_job *job, int64_t p0, int64_t p1) {
  int64_t k = job->k, m = job->m;
  int64_t row_block = narrow ? kNarrowRowBlock : kRowBlock;
  float start_scratch[kPanel], tile[kRowBlock * kPanel];
  float widened[format != kF32 ? kDepthBlock * kPanel : 1];
  float start_steps[kPanel];
  /* Rows a pass at a time (measured: 5-15% off a 512-row prefill), so
   * that the rows' depth block stays in L2 while the thread's panels pass
   * over it. */
  for (int64_t i0 = 0; i0 < m; i0 += kRowPanel) {
    int64_t i1 = m - i0 < kRowPanel ? m : i0 + kRowPanel;
    for (int64_t p = p0; p < p1; ++p) {
      const void *panel = panel_at(format, job->panels, p * k);
      const float *start = panel_start(job, p, start_scratch);
      int64_t cols =
          job->n - p * kPanel < kPanel ? job->n - p * kPanel : kPanel;
      float *c = job->c + p * kPanel;
      if (m == 1 && cols == kPanel) {
        if (p + 1 < p1 && job->n - (p + 1) * kPanel >= kPanel) {
          float next_scratch[kPanel];
          const float *next_start = panel_start(job, p + 1, next_scratch);
          if (narrow)
            panel_row8_pair(format, job->stream_non_temporal, k, job->a,
                            panel,
                            panel_at(format, job->panels, (p + 1) * k), c,
                            start, next_start);
          else
            panel_row(format, 2, k, job->a, panel, c, start, next_start);
          ++p;
          continue;
        }
        if (narrow)
          panel_row8(format, job->stream_non_temporal, k, job->a, panel, c,
                     start);
        else
          panel_row(format, 1, k, job->a, panel, c, start, start);
        continue;
      }
      start = start_in_step_order(format, start, start_steps);
      if (cols < kPanel) {
        /* The zero-padded last panel: whole depth into a 32-wide tile,
         * then the valid columns out. */
        for (int64_t i = i0; i < i1; i += row_block) {
          int64_t rows = i1 - i < row_block ? i1 - i : row_block;
          panel_rows(format, narrow, job, i, rows, panel, 0, k, tile, kPanel,
                     start, (slice_prefetch){panel, 0});
          for (int64_t r = 0; r < rows; ++r) {
            outputs_to_features(format, tile + r * kPanel);
            memcpy(c + (i + r) * job->ldc, tile + r * kPanel,
                   (size_t)cols * sizeof(float));
          }
        }
        continue;
      }
      /* Depth blocks: a panel slice stays in L1 while the rows pass. A
       * bf16 or f16 slice is widened once for all the rows that pass it
       * (bf16's outputs stay in step order): each tile widening it again
       * put bf16 prefill at half f32's rate on AVX2, and on an Intel Xeon
       * with AVX-512 the wide tile prefilled the 124M LLaMA (512 tokens)
       * at 1250 tokens/s in f16 and 1630 in bf16 against 1780 and 1760
       * widened once (f32: 1840). */
      int widen = format != kF32 && i1 - i0 > row_block;
      int64_t tiles = (i1 - i0 + row_block - 1) / row_block;
      for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
        int64_t depth = k - k0 < kDepthBlock ? k - k0 : kDepthBlock;
        /* The next slice: this panel's next depth block, else the next
         * panel's first (none after the thread's last panel). */
        const void *next = panel;
        int64_t next_depth = 0;
        if (k0 + depth < k) {
          next = panel_at(format, panel, k0 + depth);
          next_depth = k - k0 - depth;
        } else if (p + 1 < p1) {
          next = panel_at(format, job->panels, (p + 1) * k);
          next_depth = k;
        }
        int64_t next_bytes =
            (next_depth < kDepthBlock ? next_depth : kDepthBlock) *
            panel_step_bytes(format);
        if (widen)
          widen_slice(format, panel_at(format, panel, k0), depth, widened);
        for (int64_t i = i0, t = 0; i < i1; i += row_block, ++t) {
          int64_t rows = i1 - i < row_block ? i1 - i : row_block;
          slice_prefetch ahead =
              share_of_next(next, next_bytes, tiles, t, depth);
          if (widen)
            panel_rows(kF32, narrow, job, i, rows, widened, k0, depth,
                       c + i * job->ldc, job->ldc, k0 == 0 ? start : NULL,
                       ahead);
          else
            panel_rows(format, narrow, job, i, rows,
                       panel_at(format, panel, k0), k0, depth,
                       c + i * job->ldc, job->ldc, k0 == 0 ? start : NULL,
                       ahead);
        }
      }
      for (int64_t i = i0; i < i1 && format == kBF16; ++i)
        outputs_to_features(format, c + i * job->ldc);
    }
  }
}

/* One clone set per format, each with its loops specialized for both
 * tiles (the clone for AVX2 runs the narrow one, AVX-512's the wide). */
#define TFM_PANEL_GEMM(NAME, FORMAT)                                           \
  TFM_CLONED                                                                   \
  static void NAME(const panel_job *job, int64_t p0, int64_t p1) {             \
    if (job->narrow)                                                           \
      panel_gemm_range(FORMAT, 1, job, p0, p1);                                \
    else                                                                       \
      panel_gemm_range(FORMAT, 0, job, p0, p1);                                \
  }
TFM_PANEL_GEMM(panel_gemm_f32, kF32)
TFM_PANEL_GEMM(panel_gemm_bf16, kBF16)
TFM_PANEL_GEMM(panel_gemm_f16, kF16)
#undef TFM_PANEL_GEMM

void tfm_panel_gemm_f32_serial(int64_t m, int64_t n, int64_t k,
                               const float *a, int64_t lda, const float *bias,
                               const float *panels, float *c, int64_t ldc) {
  panel_job job = {m, n, k, a, bias, panels, c, lda, ldc, kF32,
                   tfm_kernels_narrow(), tfm_cpu_is_amd()};
  panel_gemm_f32(&job, 0, (n + kPanel - 1) / kPanel);
}

static void panel_gemm_chunk(void *context, int64_t begin, int64_t end,
                             int thread) {
  (void)thread;
  const panel_job *job = context;
  if (job->format == kBF16)
    panel_gemm_bf16(job, begin, end);
  else if (job->format == kF16)
    panel_gemm_f16(job, begin, end);
  else
    panel_gemm_f32(job, begin, end);
}

/* Panels per chunk: about four chunks per thread so that a slower core
 * takes fewer; for one row, at least 64 KiB of weight per chunk. */
static int64_t panels_per_chunk(int64_t panels, int64_t m, int64_t k) {
  int64_t chunk = panels / (4 * tfm_thread_count());
  int64_t minimum = m == 1 ? (16384 + k * kPanel - 1) / (k * kPanel) : 1;
  return chunk > minimum ? chunk : minimum;
}

/* Element `index` of panels stored in `format`, widened. */
static float panel_element(panel_format format, const void *base,
                           int64_t index) {
  if (format == kF32)
    return ((const float *)base)[index];
  uint16_t bits = ((const uint16_t *)base)[index];
  return format == kF16 ? tfm_f16_to_float(bits) : tfm_bf16_to_float(bits);
}

/* `base`, `sizes` and `strides`: the panels' descriptor, of any element
 * type (`format`). `bf16_products`: bf16 panels may take activations
 * rounded to bf16 (vdpbf16ps where it pays); 0 widens them always. */
static void linear_panels(tfm_memref2d_f32 *a, panel_format format,
                          const void *base, const int64_t *sizes,
                          const int64_t *strides, tfm_memref1d_f32 *bias,
                          tfm_memref2d_f32 *c, int bf16_products) {
  int64_t m = a->sizes[0], k = a->sizes[1], n = c->sizes[1];
  int64_t count = sizes[0];
  const float *pa = a->aligned + a->offset;
  const float *pb = bias ? bias->aligned + bias->offset : NULL;
  float *pc = c->aligned + c->offset;
  if (m == 0 || n == 0)
    return;
  int contiguous = strides[2] == 1 && strides[1] == kPanel &&
                   strides[0] == k * kPanel && sizes[2] == kPanel &&
                   sizes[1] == k;
  if (!contiguous || a->strides[1] != 1 || c->strides[1] != 1 ||
      (bias && bias->strides[0] != 1) || n > count * kPanel) {
    /* Not a layout tfm produces: plain loops over the logical weight. */
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n && j < count * kPanel; ++j) {
        float sum = bias ? bias->aligned[bias->offset + j * bias->strides[0]]
                         : 0;
        for (int64_t p = 0; p < k; ++p)
          sum += pa[i * a->strides[0] + p * a->strides[1]] *
                 panel_element(format, base,
                               (j / kPanel) * strides[0] + p * strides[1] +
                                   (j % kPanel) * strides[2]);
        pc[i * c->strides[0] + j * c->strides[1]] = sum;
      }
    return;
  }
  /* Many rows of bf16 panels: vdpbf16ps where the CPU has it (twice
   * the multiply rate). Up to a tile's rows (decode, a batch of a few
   * sequences, a speculative step's @verify) the widening tile streams
   * the weights at memory speed in one pass and keeps f32 activations:
   * rounding them to bf16 made 2-8 rows 1.2-1.5x slower than one on the
   * 1.1B shape, and @verify's logits drift from @decode's by 1% (greedy
   * speculative output then differs from plain decoding at near ties). */
  if (format == kBF16 && bf16_products && m > kRowBlock &&
      tfm_panel_gemm_bf16_dot(m, n, k, pa, a->strides[0], pb, base, pc,
                              c->strides[0]))
    return;
  panel_job job = {m, n, k, pa, pb, base, pc, a->strides[0], c->strides[0],
                   format, tfm_kernels_narrow(), tfm_cpu_is_amd()};
  int64_t used = (n + kPanel - 1) / kPanel;
  tfm_parallel_for(used, panels_per_chunk(used, m, k), panel_gemm_chunk, &job);
}

/* The kernels generated code calls: f32, bf16 (products in bf16 where
 * that pays, or always widened) and f16 panels, with and without a bias. */
#define TFM_LINEAR_PANELS(SUFFIX, FORMAT, PANELS_TYPE, ELEMENT, BF16_PRODUCTS) \
  TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels##SUFFIX(                   \
      tfm_memref2d_f32 *a, PANELS_TYPE *panels, tfm_memref2d_f32 *c) {         \
    linear_panels(a, FORMAT,                                                   \
                  (const ELEMENT *)panels->aligned + panels->offset,           \
                  panels->sizes, panels->strides, NULL, c, BF16_PRODUCTS);     \
  }                                                                            \
  TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels##SUFFIX##_bias(            \
      tfm_memref2d_f32 *a, PANELS_TYPE *panels, tfm_memref1d_f32 *bias,        \
      tfm_memref2d_f32 *c) {                                                   \
    linear_panels(a, FORMAT,                                                   \
                  (const ELEMENT *)panels->aligned + panels->offset,           \
                  panels->sizes, panels->strides, bias, c, BF16_PRODUCTS);     \
  }
TFM_LINEAR_PANELS(, kF32, tfm_memref3d_f32, float, 0)
TFM_LINEAR_PANELS(_bf16, kBF16, tfm_memref3d_u16, uint16_t, 1)
TFM_LINEAR_PANELS(_bf16_widened, kBF16, tfm_memref3d_u16, uint16_t, 0)
TFM_LINEAR_PANELS(_f16, kF16, tfm_memref3d_u16, uint16_t, 0)
