/*===- attention_internal.h - shared by the attention kernels ---*- C -*-===//
 *
 * What the prefill path (kernels_attention.c) and the decode path
 * (kernels_attention_decode.c) of tfm_rt_attention share: the job, its
 * views, and the visible keys of a query (the vector helpers of their
 * online softmax are simd.h's).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_ATTENTION_INTERNAL_H
#define TFM_RUNTIME_KERNELS_ATTENTION_INTERNAL_H

#include "runtime/kernels/simd.h"
#include "runtime/kernels/widen_rows.h"
#include "tfm/runtime_kernels.h"
#include "tfm/tfm_model_abi.h"

#include <math.h>
#include <stdint.h>

enum {
  kKeyTile = 64,    /* keys per prefill tile */
  kQueryBlock = 32, /* queries of one head per work item: two vectors */
};

typedef struct {
  /* k and v are NULL where keys and values are a narrow cache's stored
   * rows (k_rows and v_rows, stored as `rows` says; TFM_ROWS_F32: none). */
  const tfm_memref3d_f32 *q, *k, *v, *out;
  const void *k_rows, *v_rows;
  tfm_row_storage rows;
  float scale;
  /* Gemma 2's soft-capping: every scaled score x becomes softcap ·
   * tanh(x / softcap), before any bias or mask; 0: none. */
  float softcap;
  int causal;
  /* gpt-oss's attention sinks: head h's softmax denominator gains
   * e^(sinks[h * sinks_stride]), against the scaled scores; NULL: none. */
  const float *sinks;
  int64_t sinks_stride;
  /* 0: none. Otherwise keys `window` or more positions behind the query
   * are hidden (tfm.attention's window: causal, the `window` most recent
   * keys; not, those and every later key); with `symmetric_window`
   * (Longformer), the keys within `window` of the query on either side. */
  int64_t window;
  int symmetric_window;
  /* Longformer's global keys (tfm_rt_sparse_attention), ascending: every
   * query sees them, after its window, whose tiles mask them (so none is
   * counted twice); global_mask[j] != 0 or j < global_prefix marks them.
   * global_count 0: none. */
  const int64_t *global_keys;
  int64_t global_count;
  const int32_t *global_mask; /* NULL: the prefix alone */
  int64_t global_mask_stride, global_prefix;
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
  int narrow; /* the kernels' narrow variants (vector_width.h) */
  /* Prefill's two products by AVX512-BF16's vdpbf16ps (--compute-dtype
   * bf16 or int8: tfm_rt_attention_bf16_dot and its packed twin), where
   * the GEMMs' runs and the wide variant does: the scores q·k over queries
   * and keys rounded to bf16, the weighted values over probabilities and
   * values rounded to bf16; the softmax stays f32. */
  int bf16_dot;
  /* With bf16_dot, converted once per call: every key as bf16 pairs of
   * features (tfm_attention_key_pairs), key j of KV head kh at key_pairs
   * + (j · kv_heads + kh) · (d + 1) / 2; and the values of each pair of
   * keys as pairs (tfm_attention_value_pairs), keys 2i and 2i + 1 of KV
   * head kh at value_pairs + (i · kv_heads + kh) · round_up_to_lanes(dv). */
  const uint32_t *key_pairs, *value_pairs;
} attention_job;

/* attention_bf16_dot.c. A query block's queries qt [d][kQueryBlock]
 * (scaled, transposed) as bf16 pairs of features for vdpbf16ps: word
 * pairs[c][r] holds features 2c (low half) and 2c + 1 of query r, a zero
 * past an odd d. */
void tfm_attention_query_pairs(const float *qt, int64_t d, uint32_t *pairs);
/* k [t, kv_heads, d] as bf16 pairs of features, word c of a key holding
 * features 2c (low half) and 2c + 1 (a zero past an odd d), (d + 1) / 2
 * words a key and KV head, over the runtime's threads. */
void tfm_attention_key_pairs(const tfm_memref3d_f32 *k, int64_t d,
                             uint32_t *pairs);
/* v [t, kv_heads, dv] as bf16 pairs of keys: word e of pair row i holds
 * feature e of key 2i (low half) and of key 2i + 1 (zero past the last
 * key), dv rounded up to whole vectors (zeros) a row and KV head, over
 * the runtime's threads. */
void tfm_attention_value_pairs(const tfm_memref3d_f32 *v, int64_t dv,
                               uint32_t *pairs);
/* Rows [r0, r0 + 4) of a block's outputs o (dvp floats a row, a multiple
 * of 16), rescaled by `correction` and plus the probabilities' pairs
 * probabilities[i][r] (keys 2i and 2i + 1 of the tile, as
 * tfm_attention_query_pairs makes them of p) times the value pairs
 * (`values`: the tile's first pair row, the next `value_step` words on),
 * for pairs i in [i_lo, i_hi). */
void tfm_attention_values_bf16(float *o, int64_t dvp,
                               const uint32_t (*probabilities)[kQueryBlock],
                               const uint32_t *values, int64_t value_step,
                               const float *correction, int64_t r0,
                               int64_t i_lo, int64_t i_hi);
/* The scores p[jj][r] of keys jj in [0, tile) (`keys`: the first key's
 * pairs, the next `key_step` words on) against the query pairs; rows of p
 * up to tile rounded up to four are written (zero past the tile). */
void tfm_attention_scores_bf16(const uint32_t *pairs, const uint32_t *keys,
                               int64_t key_step, int64_t d, int64_t tile,
                               float (*p)[kQueryBlock]);

/* The keys [j_lo, j_hi) of tile [j0, j0 + tile) that any of queries
 * [r0, r0 + 4) (those below `rows`) sees, by their lo and hi: the range
 * the weighted values run over. */
TFM_INLINE void group_keys(const int32_t *lo, const int32_t *hi, int64_t r0,
                           int64_t rows, int64_t t, int64_t j0, int64_t tile,
                           int64_t *j_lo, int64_t *j_hi) {
  int64_t group_lo = t, group_hi = 0;
  for (int64_t r = r0; r < r0 + 4 && r < rows; ++r) {
    group_lo = lo[r] < group_lo ? lo[r] : group_lo;
    group_hi = hi[r] > group_hi ? hi[r] : group_hi;
  }
  *j_lo = group_lo > j0 ? group_lo - j0 : 0;
  *j_hi = group_hi - j0 < tile ? group_hi - j0 : tile;
}

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
  if (job->symmetric_window) {
    if (position - job->window > *first)
      *first = position - job->window;
    if (position + job->window + 1 < *last)
      *last = position + job->window + 1;
    return;
  }
  if (job->causal)
    *last = position + 1;
  if (job->window && position + 1 - job->window > *first)
    *first = position + 1 - job->window;
}

/* Whether key j is one of the global keys (job->global_count > 0). */
TFM_INLINE int is_global_key(const attention_job *job, int64_t j) {
  return j < job->global_prefix ||
         (job->global_mask && job->global_mask[j * job->global_mask_stride]);
}

/* `count` scores soft-capped in place: cap · tanh(score / cap). */
TFM_INLINE void softcap_scores(float *scores, int64_t count, float cap) {
  for (int64_t i = 0; i < count; ++i)
    scores[i] = cap * tanhf(scores[i] / cap);
}

/* 1 / (the softmax denominator) of head h's query, whose scores' maximum
 * was `maximum` and whose e^(score - maximum) summed to `sum`: the sink's
 * term joins the sum (a query that saw no key, maximum -inf, gets 0). */
TFM_INLINE float softmax_inverse(const attention_job *job, int64_t h,
                                 float maximum, float sum) {
  if (job->sinks)
    sum += expf(job->sinks[h * job->sinks_stride] - maximum);
  return sum > 0 && sum < INFINITY ? 1.0f / sum : 0.0f;
}

/* The relative-position term of query i and key j for head h. */
TFM_INLINE const float *distance_terms(const attention_job *job, int64_t h,
                                       int64_t i, int64_t j) {
  const tfm_memref2d_f32 *bias = job->distance_bias;
  return bias->aligned + bias->offset + h * bias->strides[0] +
         (job->t - 1 + i - j) * bias->strides[1];
}

/* `job` with the sizes of its queries (job.q) and of its t keys of kv_heads
 * heads and values of dv features, and the kernels' width. */
attention_job tfm_attention_sized(attention_job job, int64_t t,
                                  int64_t kv_heads, int64_t dv);

/* Every query block of every head, spread over the runtime's threads (the
 * prefill path, whatever the query count). */
void tfm_attend_blocks(attention_job job);

/* A single query (a decode step) against all its keys: out[0, h] for every
 * head h. */
void tfm_attend_decode(const attention_job *job);

#endif /* TFM_RUNTIME_KERNELS_ATTENTION_INTERNAL_H */
