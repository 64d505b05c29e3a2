/*===- attention_bf16_dot.c - prefill attention's products by vdpbf16ps===//
 *
 * Under --compute-dtype bf16 or int8, a query block's two products come
 * from AVX512-BF16's vdpbf16ps, each lane adding the products of two bf16
 * pairs, half the instructions of f32 FMAs: the scores q·k, a lane a
 * query and a pair two features (queries paired once a block, keys once a
 * call), and the weighted values, a lane a feature and a pair two keys
 * (probabilities paired once a tile, values once a call). Rounding is to
 * nearest even; the sums, the softmax and the outputs stay f32
 * (attention_block.inc). Functions carry their own target attribute,
 * as kernels_panel_bf16_dot.c's, and run only where the GEMMs' vdpbf16ps
 * does (tfm_bf16_dot_enabled: the CPU has it, and TFM_BF16_DOT does not
 * turn it off).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/thread_pool.h"
#include "runtime/kernels/attention_internal.h"
#include "runtime/kernels/kernels_panel_bf16_dot.h"
#include "tfm/half_floats.h"

#include <immintrin.h>
#include <string.h>

#define TFM_ATTENTION_BF16 "avx512f,avx512bw,avx512bf16"

enum { kQueryVectors = kQueryBlock / kLanes, kKeyStep = 4 };

/* Sixteen floats from `at`, zero past `count` of them. */
__attribute__((target(TFM_ATTENTION_BF16))) static inline __m512
load_upto(const float *at, int64_t count) {
  if (count >= kLanes)
    return _mm512_loadu_ps(at);
  if (count <= 0)
    return _mm512_setzero_ps();
  return _mm512_maskz_loadu_ps((__mmask16)((1u << count) - 1), at);
}

/* Words r = (low[r], high[r]) of two vectors rounded to bf16:
 * vcvtne2ps2bf16 puts one vector's 16 values in the low half and the
 * other's in the high half, and the permutation interleaves them. */
__attribute__((always_inline, target(TFM_ATTENTION_BF16))) static inline __m512i
interleaved_pairs(__m512 low, __m512 high) {
  const __m512i interleave = _mm512_set_epi16(
      31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
      6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave,
                                  (__m512i)_mm512_cvtne2ps_pbh(high, low));
}

__attribute__((target(TFM_ATTENTION_BF16))) void
tfm_attention_query_pairs(const float *qt, int64_t d, uint32_t *pairs) {
  for (int64_t c = 0; 2 * c < d; ++c)
    for (int v = 0; v < kQueryVectors; ++v) {
      __m512 even = _mm512_loadu_ps(qt + 2 * c * kQueryBlock + v * kLanes);
      __m512 odd =
          2 * c + 1 < d
              ? _mm512_loadu_ps(qt + (2 * c + 1) * kQueryBlock + v * kLanes)
              : _mm512_setzero_ps();
      _mm512_storeu_si512(pairs + c * kQueryBlock + v * kLanes,
                          interleaved_pairs(even, odd));
    }
}

/* Rows [begin, end) of what tfm_attention_key_pairs (row = key · kv heads
 * + head) or tfm_attention_value_pairs (row = pair of keys · kv heads +
 * head) convert: `rows`' rows of `width` features into `pairs`. */
typedef struct {
  const tfm_memref3d_f32 *rows;
  int64_t width;
  uint32_t *pairs;
} pairs_job;

__attribute__((target(TFM_ATTENTION_BF16))) static void
key_pairs_chunk(void *context, int64_t begin, int64_t end, int thread) {
  (void)thread;
  const pairs_job *job = context;
  const tfm_memref3d_f32 *k = job->rows;
  int64_t d = job->width, words = (d + 1) / 2, heads = k->sizes[1];
  for (int64_t row = begin; row < end; ++row) {
    const float *key = k->aligned + k->offset + row / heads * k->strides[0] +
                       row % heads * k->strides[1];
    uint32_t *out = job->pairs + row * words;
    if (k->strides[2] != 1) { /* strided features, rarely */
      for (int64_t c = 0; c < words; ++c)
        out[c] =
            tfm_float_to_bf16(key[2 * c * k->strides[2]]) |
            (uint32_t)(2 * c + 1 < d
                           ? tfm_float_to_bf16(key[(2 * c + 1) * k->strides[2]])
                           : 0)
                << 16;
      continue;
    }
    tfm_bf16_row_pairs(key, d, out);
  }
}

void tfm_attention_key_pairs(const tfm_memref3d_f32 *k, int64_t d,
                             uint32_t *pairs) {
  pairs_job job = {k, d, pairs};
  int64_t rows = k->sizes[0] * k->sizes[1];
  tfm_parallel_for(rows, 64, key_pairs_chunk, &job);
}

__attribute__((target(TFM_ATTENTION_BF16))) void
tfm_attention_scores_bf16(const uint32_t *pairs, const uint32_t *keys,
                          int64_t key_step, int64_t d, int64_t tile,
                          float (*p)[kQueryBlock]) {
  static const uint32_t none[kKeyStep] = {0};
  int64_t words = (d + 1) / 2;
  int64_t rows = (tile + kKeyStep - 1) / kKeyStep * kKeyStep;
  for (int64_t jj = 0; jj < rows; jj += kKeyStep) {
    /* Keys past the tile read word 0 of `none`: zero scores, unused. */
    const uint32_t *key[kKeyStep];
    int64_t step[kKeyStep];
    for (int u = 0; u < kKeyStep; ++u) {
      int inside = jj + u < tile;
      key[u] = inside ? keys + (jj + u) * key_step : none;
      step[u] = inside;
    }
    __m512 acc[kKeyStep][kQueryVectors];
    for (int u = 0; u < kKeyStep; ++u)
      for (int v = 0; v < kQueryVectors; ++v)
        acc[u][v] = _mm512_setzero_ps();
    for (int64_t c = 0; c < words; ++c) {
      __m512bh q[kQueryVectors];
      for (int v = 0; v < kQueryVectors; ++v)
        q[v] =
            (__m512bh)_mm512_loadu_si512(pairs + c * kQueryBlock + v * kLanes);
      for (int u = 0; u < kKeyStep; ++u) {
        __m512bh word = (__m512bh)_mm512_set1_epi32((int)key[u][c * step[u]]);
        for (int v = 0; v < kQueryVectors; ++v)
          acc[u][v] = _mm512_dpbf16_ps(acc[u][v], q[v], word);
      }
    }
    for (int u = 0; u < kKeyStep; ++u)
      for (int v = 0; v < kQueryVectors; ++v)
        _mm512_storeu_ps(p[jj + u] + v * kLanes, acc[u][v]);
  }
}

__attribute__((target(TFM_ATTENTION_BF16))) static void
value_pairs_chunk(void *context, int64_t begin, int64_t end, int thread) {
  (void)thread;
  const pairs_job *job = context;
  const tfm_memref3d_f32 *v = job->rows;
  int64_t dv = job->width, dvp = round_up_to_lanes(dv), heads = v->sizes[1];
  int64_t t = v->sizes[0];
  for (int64_t row = begin; row < end; ++row) {
    int64_t first = row / heads * 2, head = row % heads;
    const float *keys[2];
    for (int k = 0; k < 2; ++k)
      keys[k] = first + k < t
                    ? v->aligned + v->offset + (first + k) * v->strides[0] +
                          head * v->strides[1]
                    : NULL;
    uint32_t *out = job->pairs + row * dvp;
    for (int64_t e = 0; e < dvp; e += kLanes) {
      __m512 half[2];
      for (int k = 0; k < 2; ++k) {
        if (!keys[k]) {
          half[k] = _mm512_setzero_ps();
        } else if (v->strides[2] == 1) {
          half[k] = load_upto(keys[k] + e, dv - e);
        } else { /* strided features, rarely */
          float lanes[kLanes];
          for (int64_t i = 0; i < kLanes; ++i)
            lanes[i] = e + i < dv ? keys[k][(e + i) * v->strides[2]] : 0;
          half[k] = _mm512_loadu_ps(lanes);
        }
      }
      _mm512_storeu_si512(out + e, interleaved_pairs(half[0], half[1]));
    }
  }
}

void tfm_attention_value_pairs(const tfm_memref3d_f32 *v, int64_t dv,
                               uint32_t *pairs) {
  pairs_job job = {v, dv, pairs};
  int64_t rows = (v->sizes[0] + 1) / 2 * v->sizes[1];
  tfm_parallel_for(rows, 32, value_pairs_chunk, &job);
}

/* Four queries' outputs, `nv` vectors of features from e0, as
 * tfm_attention_values_bf16's. */
__attribute__((always_inline, target(TFM_ATTENTION_BF16))) static inline void
values_at(float *o, int64_t dvp, const uint32_t (*probabilities)[kQueryBlock],
          const uint32_t *values, int64_t value_step, const float *correction,
          int64_t r0, int64_t e0, int64_t i_lo, int64_t i_hi, int nv) {
  enum { kValueVectors = 4 };
  __m512 acc[4][kValueVectors];
  for (int u = 0; u < 4; ++u)
    for (int w = 0; w < nv; ++w)
      acc[u][w] =
          _mm512_mul_ps(_mm512_set1_ps(correction[r0 + u]),
                        _mm512_loadu_ps(o + (r0 + u) * dvp + e0 + w * kLanes));
  for (int64_t i = i_lo; i < i_hi; ++i) {
    __m512bh pair[kValueVectors];
    for (int w = 0; w < nv; ++w)
      pair[w] = (__m512bh)_mm512_loadu_si512(values + i * value_step + e0 +
                                             w * kLanes);
    for (int u = 0; u < 4; ++u) {
      __m512bh weight =
          (__m512bh)_mm512_set1_epi32((int)probabilities[i][r0 + u]);
      for (int w = 0; w < nv; ++w)
        acc[u][w] = _mm512_dpbf16_ps(acc[u][w], pair[w], weight);
    }
  }
  for (int u = 0; u < 4; ++u)
    for (int w = 0; w < nv; ++w)
      _mm512_storeu_ps(o + (r0 + u) * dvp + e0 + w * kLanes, acc[u][w]);
}

__attribute__((target(TFM_ATTENTION_BF16))) void tfm_attention_values_bf16(
    float *o, int64_t dvp, const uint32_t (*probabilities)[kQueryBlock],
    const uint32_t *values, int64_t value_step, const float *correction,
    int64_t r0, int64_t i_lo, int64_t i_hi) {
  int64_t e0 = 0;
  for (; e0 + 4 * kLanes <= dvp; e0 += 4 * kLanes)
    values_at(o, dvp, probabilities, values, value_step, correction, r0, e0,
              i_lo, i_hi, 4);
  for (; e0 < dvp; e0 += kLanes)
    values_at(o, dvp, probabilities, values, value_step, correction, r0, e0,
              i_lo, i_hi, 1);
}
