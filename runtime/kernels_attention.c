/*===- kernels_attention.c - fused attention for generated code ---------===//
 *
 * Called where tfm-select-cpu-kernels hands tfm.attention to the runtime:
 * out[i, h, :] = softmax(scale · q[i, h]·k[j, h/group]ᵀ (+ the
 * relative-position term of i - j) over the visible keys j) ·
 * v[j, h/group, :].
 *
 * Prefill is flash-attention style: a block of queries of one head meets
 * the keys a tile at a time, with an online softmax (running maximum and
 * sum, output rescaled when the maximum grows), so no [s, t] buffer exists;
 * tiles wholly above the causal diagonal (or behind a sliding window) are
 * skipped, and only tiles that straddle a boundary are masked; work items
 * (head, query block) are spread over the runtime's threads. A single
 * query (decode) takes its own path, split over chunks of keys instead
 * (kernels_attention_decode.c).
 *
 * Keys and values cached as int8 rows (an int8 KV cache) are widened a
 * tile at a time into the buffers a strided f32 cache already uses.
 *
 * Vectors are GCC's generic 16-float vectors; the hot functions are cloned
 * for AVX-512, AVX2 and baseline x86-64 and picked at load time. Head
 * dimensions are zero-padded to 16 in local buffers.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/runtime_kernels.h"
#include "runtime/attention_internal.h"
#include "runtime/buffer_cache.h"
#include "runtime/thread_pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
  kQueryBlock = 32, /* queries of one head per work item: two vectors */
};

/* Rows [r0, r0 + 4) of the block's output o (dvp floats a row), columns
 * [e0, e0 + 16·nv), rescaled by `correction` and plus the tile's
 * probabilities p[jj][r] times value rows v[jj] for jj in [j_lo, j_hi):
 * 4·nv accumulators, each value vector loaded once for four queries. */
TFM_INLINE void accumulate_values(float *o, int64_t dvp,
                                  const float (*p)[kQueryBlock],
                                  const float *const *v, const float *correction,
                                  int64_t r0, int64_t e0, int64_t j_lo,
                                  int64_t j_hi, int nv) {
  v16 acc[4][4];
  for (int u = 0; u < 4; ++u)
    for (int w = 0; w < nv; ++w)
      acc[u][w] = correction[r0 + u] * load16(o + (r0 + u) * dvp + e0 + w * kLanes);
  for (int64_t jj = j_lo; jj < j_hi; ++jj) {
    v16 values[4];
    for (int w = 0; w < nv; ++w)
      values[w] = load16(v[jj] + e0 + w * kLanes);
    /* scalar · vector: GCC broadcasts from memory into the FMA; a splat()
     * temporary here went through the stack in the target clones. */
    for (int u = 0; u < 4; ++u)
      for (int w = 0; w < nv; ++w)
        acc[u][w] += p[jj][r0 + u] * values[w];
  }
  for (int u = 0; u < 4; ++u)
    for (int w = 0; w < nv; ++w)
      store16(o + (r0 + u) * dvp + e0 + w * kLanes, acc[u][w]);
}

/* The tile's scores p[jj][r] (keys j0 + jj, queries i0 + r) plus their
 * relative-position terms. For one key the block's queries read
 * consecutive columns, so whole blocks add them a vector at a time. */
TFM_INLINE void add_distance_bias(const attention_job *job,
                                  float (*p)[kQueryBlock], int64_t i0,
                                  int64_t rows, int64_t j0, int64_t tile,
                                  int64_t h) {
  int64_t stride = job->distance_bias->strides[1];
  for (int64_t jj = 0; jj < tile; ++jj) {
    const float *terms = distance_terms(job, h, i0, j0 + jj);
    if (stride == 1 && rows == kQueryBlock) {
      for (int v = 0; v < kQueryBlock / kLanes; ++v)
        store16(p[jj] + v * kLanes,
                load16(p[jj] + v * kLanes) + load16(terms + v * kLanes));
      continue;
    }
    for (int64_t r = 0; r < rows; ++r)
      p[jj][r] += terms[r * stride];
  }
}

/* Queries [i0, i1) of head h (at most kQueryBlock, of the sequence of keys
 * [seq_lo, seq_hi)) against their keys, a tile at a time. Scores are kept transposed, [key][query], so that every
 * step vectorizes over the block's queries: each key's features are
 * broadcast against the queries' (K is read in place, never transposed),
 * the running maximum and sum of every query are vectors, and masking
 * compares key positions lane by lane. */
TFM_CLONED
static void attend_block(const attention_job *job, int64_t i0, int64_t i1,
                         int64_t seq_lo, int64_t seq_hi, int64_t h) {
  enum { kQueryVectors = kQueryBlock / kLanes };
  int64_t kh = h / job->group, d = job->d, dv = job->dv;
  int64_t dvp = round_up_to_lanes(dv);
  int int8 = job->k8 != NULL;
  int64_t rows = i1 - i0, ks = int8 ? 1 : job->k->strides[2];
  /* Values are read in place when their rows are whole vectors. */
  int direct_values = !int8 && job->v->strides[2] == 1 && dv == dvp;
  /* ~40 KB for 64-wide heads: stays in L1/L2 for the whole block. */
  float qt[d][kQueryBlock], zeros[d];
  float p[kKeyTile][kQueryBlock], o[kQueryBlock][dvp];
  float vt[direct_values ? 1 : kKeyTile][dvp];
  float kt[int8 ? kKeyTile : 1][d]; /* int8 keys, widened */
  float correction[kQueryBlock], l_rows[kQueryBlock];
  int32_t lo[kQueryBlock], hi[kQueryBlock];
  const float *k_rows[kKeyTile], *v_rows[kKeyTile];

  /* Queries transposed and scaled; the block's unused rows are zero, see
   * no keys (lo = hi = 0) and are never written out. [first, last): keys
   * some query sees; [lo_max, hi_min): keys every query sees. */
  int64_t first = job->t, last = 0, lo_max = 0, hi_min = INT64_MAX;
  for (int64_t r = 0; r < kQueryBlock; ++r) {
    int64_t key_lo = 0, key_hi = 0;
    if (r < rows) {
      const float *qi = row(job->q, i0 + r, h);
      for (int64_t c = 0; c < d; ++c)
        qt[c][r] = qi[c * job->q->strides[2]] * job->scale;
      visible_keys(job, i0 + r, seq_lo, seq_hi, &key_lo, &key_hi);
      first = key_lo < first ? key_lo : first;
      last = key_hi > last ? key_hi : last;
      lo_max = key_lo > lo_max ? key_lo : lo_max;
      hi_min = key_hi < hi_min ? key_hi : hi_min;
    } else {
      for (int64_t c = 0; c < d; ++c)
        qt[c][r] = 0;
    }
    lo[r] = (int32_t)key_lo;
    hi[r] = (int32_t)key_hi;
  }
  memset(zeros, 0, sizeof zeros);
  memset(o, 0, sizeof o);
  v16 m[kQueryVectors], l[kQueryVectors];
  vi16 lo_v[kQueryVectors], hi_v[kQueryVectors];
  for (int v = 0; v < kQueryVectors; ++v) {
    m[v] = splat(-INFINITY);
    l[v] = splat(0);
    memcpy(&lo_v[v], lo + v * kLanes, sizeof lo_v[v]);
    memcpy(&hi_v[v], hi + v * kLanes, sizeof hi_v[v]);
  }
  int64_t rows_by_four = (rows + 3) / 4 * 4; /* whole groups of four */

  first = first / kKeyTile * kKeyTile;
  for (int64_t j0 = first; j0 < last; j0 += kKeyTile) {
    int64_t tile = last - j0 < kKeyTile ? last - j0 : kKeyTile;
    for (int64_t jj = 0; jj < kKeyTile; ++jj) {
      if (jj >= tile) {
        k_rows[jj] = zeros;
      } else if (int8) {
        widen_row_i8(job->k8, j0 + jj, kh, d, d, kt[jj]);
        k_rows[jj] = kt[jj];
      } else {
        k_rows[jj] = row(job->k, j0 + jj, kh);
      }
    }

    /* Scores of four keys at a time against every query of the block. */
    for (int64_t jj = 0; jj < tile; jj += 4) {
      v16 acc[4][kQueryVectors] = {{{0}}};
      for (int64_t c = 0; c < d; ++c) {
        v16 q[kQueryVectors];
        for (int v = 0; v < kQueryVectors; ++v)
          q[v] = load16(qt[c] + v * kLanes);
        for (int u = 0; u < 4; ++u)
          for (int v = 0; v < kQueryVectors; ++v)
            acc[u][v] += k_rows[jj + u][c * ks] * q[v];
      }
      for (int u = 0; u < 4; ++u)
        for (int v = 0; v < kQueryVectors; ++v)
          store16(p[jj + u] + v * kLanes, acc[u][v]);
    }
    if (job->distance_bias)
      add_distance_bias(job, p, i0, rows, j0, tile, h);
    /* Keys some query may not see: -inf. */
    if (j0 < lo_max || j0 + tile > hi_min)
      for (int64_t jj = 0; jj < tile; ++jj) {
        vi16 key = (vi16){0} + (int32_t)(j0 + jj);
        for (int v = 0; v < kQueryVectors; ++v) {
          vi16 visible = (key >= lo_v[v]) & (key < hi_v[v]);
          v16 s = load16(p[jj] + v * kLanes);
          store16(p[jj] + v * kLanes,
                  (v16)(((vi16)s & visible) | ((vi16)splat(-INFINITY) & ~visible)));
        }
      }
    /* Online softmax, every query's maximum and sum a lane. A query that
     * has seen no key yet keeps the maximum -inf; 0 stands in for it so
     * that its probabilities and correction come out 0, not NaN. */
    for (int v = 0; v < kQueryVectors; ++v) {
      v16 tile_max = splat(-INFINITY);
      for (int64_t jj = 0; jj < tile; ++jj)
        tile_max = vmax(tile_max, load16(p[jj] + v * kLanes));
      v16 new_max = vmax(m[v], tile_max);
      vi16 none = new_max == splat(-INFINITY);
      v16 shift = (v16)((vi16)new_max & ~none);
      v16 scale = exp_nonpositive(m[v] - shift);
      m[v] = new_max;
      v16 sum = {0};
      for (int64_t jj = 0; jj < tile; ++jj) {
        v16 e = exp_nonpositive(load16(p[jj] + v * kLanes) - shift);
        store16(p[jj] + v * kLanes, e);
        sum += e;
      }
      l[v] = l[v] * scale + sum;
      store16(correction + v * kLanes, scale);
    }
    /* Weighted values, four queries at a time over the keys any of them
     * sees. */
    for (int64_t jj = 0; jj < tile; ++jj) {
      if (direct_values) {
        v_rows[jj] = row(job->v, j0 + jj, kh);
        continue;
      }
      v_rows[jj] = vt[jj];
      if (int8) {
        widen_row_i8(job->v8, j0 + jj, kh, dv, dvp, vt[jj]);
        continue;
      }
      const float *vj = row(job->v, j0 + jj, kh);
      for (int64_t e = 0; e < dvp; ++e)
        vt[jj][e] = e < dv ? vj[e * job->v->strides[2]] : 0.0f;
    }
    for (int64_t r0 = 0; r0 < rows_by_four; r0 += 4) {
      int64_t group_lo = job->t, group_hi = 0;
      for (int64_t r = r0; r < r0 + 4 && r < rows; ++r) {
        group_lo = lo[r] < group_lo ? lo[r] : group_lo;
        group_hi = hi[r] > group_hi ? hi[r] : group_hi;
      }
      int64_t j_lo = group_lo > j0 ? group_lo - j0 : 0;
      int64_t j_hi = group_hi - j0 < tile ? group_hi - j0 : tile;
      int64_t e0 = 0;
      for (; e0 + 4 * kLanes <= dvp; e0 += 4 * kLanes)
        accumulate_values(&o[0][0], dvp, p, v_rows, correction, r0, e0, j_lo,
                          j_hi, 4);
      for (; e0 < dvp; e0 += kLanes)
        accumulate_values(&o[0][0], dvp, p, v_rows, correction, r0, e0, j_lo,
                          j_hi, 1);
    }
  }
  for (int v = 0; v < kQueryVectors; ++v)
    store16(l_rows + v * kLanes, l[v]);
  for (int64_t r = 0; r < rows; ++r) {
    float *out = row(job->out, i0 + r, h);
    float inverse = l_rows[r] > 0 ? 1.0f / l_rows[r] : 0.0f;
    for (int64_t e = 0; e < dv; ++e)
      out[e * job->out->strides[2]] = o[r][e] * inverse;
  }
}

static void attention_items(void *context, int64_t begin, int64_t end,
                            int thread) {
  (void)thread;
  const attention_job *job = context;
  for (int64_t item = begin; item < end; ++item) {
    /* Last blocks first: under a causal mask they see the most keys, and
     * handing out the largest items first balances the threads. */
    int64_t block = job->blocks - 1 - item / job->heads, h = item % job->heads;
    if (job->packed_blocks) {
      const int64_t *b = job->packed_blocks[block];
      attend_block(job, b[0], b[1], b[2], b[3], h);
      continue;
    }
    int64_t i0 = block * kQueryBlock;
    int64_t i1 = i0 + kQueryBlock < job->s ? i0 + kQueryBlock : job->s;
    attend_block(job, i0, i1, 0, job->t, h);
  }
}

/* `job` with the sizes of its queries and of its t keys of kv_heads heads
 * and values of dv features. */
static attention_job sized(attention_job job, int64_t t, int64_t kv_heads,
                           int64_t dv) {
  job.s = job.q->sizes[0];
  job.heads = job.q->sizes[1];
  job.d = job.q->sizes[2];
  job.t = t;
  job.group = job.heads / kv_heads;
  job.dv = dv;
  return job;
}

static attention_job make_job(tfm_memref3d_f32 *q, tfm_memref3d_f32 *k,
                              tfm_memref3d_f32 *v, tfm_memref3d_f32 *out,
                              float scale, int64_t causal, int64_t window) {
  attention_job job = {.q = q, .k = k, .v = v, .out = out, .scale = scale,
                       .causal = (int)causal, .window = window};
  return sized(job, k->sizes[0], k->sizes[1], v->sizes[2]);
}

/* The job over int8 rows: head_dim + 4 bytes a row (codes, scale). */
static attention_job make_job_rows_i8(tfm_memref3d_f32 *q, tfm_memref3d_i8 *k,
                                      tfm_memref3d_i8 *v,
                                      tfm_memref3d_f32 *out, float scale,
                                      int64_t causal, int64_t window) {
  attention_job job = {.q = q, .out = out, .k8 = k, .v8 = v, .scale = scale,
                       .causal = (int)causal, .window = window};
  return sized(job, k->sizes[0], k->sizes[1], v->sizes[2] - 4);
}

static void attend(attention_job job) {
  if (job.s == 0)
    return;
  if (job.s == 1) {
    tfm_attend_decode(&job);
    return;
  }
  job.blocks = (job.s + kQueryBlock - 1) / kQueryBlock;
  tfm_parallel_for(job.blocks * job.heads, 1, attention_items, &job);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention(tfm_memref3d_f32 *q, tfm_memref3d_f32 *k,
                                   tfm_memref3d_f32 *v, tfm_memref3d_f32 *out,
                                   float scale, int64_t causal,
                                   int64_t window) {
  attend(make_job(q, k, v, out, scale, causal, window));
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref2d_f32 *distance_bias, tfm_memref3d_f32 *out, float scale,
    int64_t causal, int64_t window) {
  attention_job job = make_job(q, k, v, out, scale, causal, window);
  job.distance_bias = distance_bias;
  attend(job);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_rows_i8(
    tfm_memref3d_f32 *q, tfm_memref3d_i8 *k, tfm_memref3d_i8 *v,
    tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window) {
  attend(make_job_rows_i8(q, k, v, out, scale, causal, window));
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased_rows_i8(
    tfm_memref3d_f32 *q, tfm_memref3d_i8 *k, tfm_memref3d_i8 *v,
    tfm_memref2d_f32 *distance_bias, tfm_memref3d_f32 *out, float scale,
    int64_t causal, int64_t window) {
  attention_job job = make_job_rows_i8(q, k, v, out, scale, causal, window);
  job.distance_bias = distance_bias;
  attend(job);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_packed(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref1d_i32 *lengths, tfm_memref3d_f32 *out, float scale,
    int64_t causal, int64_t window) {
  attention_job job = make_job(q, k, v, out, scale, causal, window);
  /* The caller (tfm_model_call) checked that the lengths are positive and
   * sum to s = t. */
  int64_t sequences = lengths->sizes[0], blocks = 0;
  const int32_t *length = lengths->aligned + lengths->offset;
  for (int64_t b = 0; b < sequences; ++b)
    blocks += (length[b * lengths->strides[0]] + kQueryBlock - 1) / kQueryBlock;
  int64_t(*table)[4] = _mlir_memref_to_llvm_alloc((size_t)blocks * sizeof *table);
  if (!table)
    abort(); /* an allocation outside a call frame: no way to report */
  int64_t start = 0, n = 0;
  for (int64_t b = 0; b < sequences; ++b) {
    int64_t end = start + length[b * lengths->strides[0]];
    for (int64_t i0 = start; i0 < end; i0 += kQueryBlock) {
      table[n][0] = i0;
      table[n][1] = i0 + kQueryBlock < end ? i0 + kQueryBlock : end;
      table[n][2] = start;
      table[n][3] = end;
      ++n;
    }
    start = end;
  }
  job.blocks = blocks;
  job.packed_blocks = (const int64_t(*)[4])table;
  tfm_parallel_for(job.blocks * job.heads, 1, attention_items, &job);
  _mlir_memref_to_llvm_free(table);
}
