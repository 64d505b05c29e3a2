/*===- attention_internal.h - shared by the attention kernels ---*- C -*-===//
 *
 * What the prefill path (kernels_attention.c) and the decode path
 * (kernels_attention_decode.c) of tfm_rt_attention share: the job, its
 * views, the visible keys of a query, and the vector helpers of an online
 * softmax.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_ATTENTION_INTERNAL_H
#define TFM_RUNTIME_ATTENTION_INTERNAL_H

#include "runtime/simd.h"
#include "runtime/tfm_model_abi.h"

#include <stdint.h>

enum {
  kKeyTile = 64, /* keys per prefill tile, and the fewest per decode chunk */
};

TFM_INLINE v16 vmax(v16 a, v16 b) {
  vi16 greater = a > b;
  return (v16)(((vi16)a & greater) | ((vi16)b & ~greater));
}
/* Halving adds: four shuffles instead of fifteen lane extracts. */
TFM_INLINE float hsum(v16 v) {
  v += __builtin_shuffle(v, (vi16){8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
  v += __builtin_shuffle(v, (vi16){4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11});
  v += __builtin_shuffle(v, (vi16){2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13});
  v += __builtin_shuffle(v, (vi16){1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14});
  return v[0];
}

/* e^x for x <= 0 (scores minus their maximum); exactly 0 below -87, which
 * includes the -inf of masked keys. Cephes' expf: x = n·ln2 + r, |r| <=
 * ln2/2, a degree-6 polynomial for e^r, 2^n through the exponent bits;
 * relative error ~1e-7. */
TFM_INLINE v16 exp_nonpositive(v16 x) {
  vi16 underflow = x < -87.0f;
  x = vmax(x, splat(-87.0f));
  vi16 n = __builtin_convertvector(x * 1.44269504088896341f - 0.5f, vi16);
  v16 fn = __builtin_convertvector(n, v16);
  v16 r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  v16 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  vi16 scale = (n + 127) << 23;
  v16 result = p * (v16)scale;
  return (v16)((vi16)result & ~underflow);
}

typedef struct {
  const tfm_memref3d_f32 *q, *k, *v, *out;
  float scale;
  int causal;
  int64_t window; /* 0: none */
  int64_t s, t, heads, group, d, dv, blocks;
  /* Packed sequences (tfm_rt_attention_packed): the query blocks, none
   * straddling two sequences, as [first query, end, sequence start,
   * sequence end]; NULL otherwise, when blocks are kQueryBlock queries
   * apart over one sequence. */
  const int64_t (*packed_blocks)[4];
  /* Relative-position terms by distance (tfm_rt_attention_biased), [heads,
   * s + t - 1]: query i and key j add column t - 1 + i - j of head h's
   * row; NULL without. */
  const tfm_memref2d_f32 *distance_bias;
} attention_job;

TFM_INLINE float *row(const tfm_memref3d_f32 *m, int64_t i, int64_t h) {
  return m->aligned + m->offset + i * m->strides[0] + h * m->strides[1];
}

/* Keys [first, last) that query i of the sequence of keys [seq_lo, seq_hi)
 * may see ([0, t) unless packed). */
TFM_INLINE void visible_keys(const attention_job *job, int64_t i,
                             int64_t seq_lo, int64_t seq_hi, int64_t *first,
                             int64_t *last) {
  int64_t position = i + job->t - job->s; /* queries are the last s keys */
  *first = seq_lo;
  *last = seq_hi;
  if (job->causal) {
    *last = position + 1;
    if (job->window && position + 1 - job->window > *first)
      *first = position + 1 - job->window;
  }
}

/* The relative-position term of query i and key j for head h. */
TFM_INLINE const float *distance_terms(const attention_job *job, int64_t h,
                                       int64_t i, int64_t j) {
  const tfm_memref2d_f32 *bias = job->distance_bias;
  return bias->aligned + bias->offset + h * bias->strides[0] +
         (job->t - 1 + i - j) * bias->strides[1];
}

/* A single query (a decode step) against all its keys: out[0, h] for every
 * head h. */
void tfm_attend_decode(const attention_job *job);

#endif /* TFM_RUNTIME_ATTENTION_INTERNAL_H */
