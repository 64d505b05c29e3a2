/*===- kernels_attention_decode.c - attention of one query ---------------===//
 *
 * The decode step of tfm_rt_attention (see kernels_attention.c): one query
 * per head against the whole KV cache, which is read once, sequentially,
 * and split over the runtime's threads (flash-decoding). Int8 rows are
 * widened a position at a time, every KV head's row once for the query
 * heads that share it.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/attention_internal.h"
#include "runtime/buffer_cache.h"
#include "runtime/thread_pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The single query of a decode step meets its keys a chunk at a time,
 * every head at once (flash-decoding): a key position's row holds all KV
 * heads contiguously, so a chunk is one sequential read of the cache,
 * where walking one head at a time would stride through it. Each chunk
 * leaves, per head, its maximum score, its sum of exponentials and its
 * unnormalised weighted values; merge_chunks rescales and adds them. */
typedef struct {
  const attention_job *job;
  const float *q;  /* [heads][dp], scaled, zero-padded */
  float *partials; /* [chunks][heads][dvp + 2]: values, maximum, sum */
  float *scores;   /* [chunks][heads][chunk] */
  int64_t first, last, chunk, dp, dvp;
} decode_job;

TFM_INLINE float dot_row(const float *q, const float *k, int64_t d,
                         int64_t stride, int unit) {
  if (unit) {
    v16 sum = {0};
    for (int64_t c = 0; c < d; c += kLanes)
      sum += load16(q + c) * load16(k + c);
    return hsum(sum);
  }
  float dot = 0;
  for (int64_t c = 0; c < d; ++c)
    dot += q[c] * k[c * stride];
  return dot;
}

TFM_CLONED
static void decode_chunk(const decode_job *dj, int64_t index) {
  const attention_job *job = dj->job;
  int64_t heads = job->heads, d = job->d, dv = job->dv, dvp = dj->dvp;
  int64_t j0 = dj->first + index * dj->chunk;
  int64_t count = dj->last - j0 < dj->chunk ? dj->last - j0 : dj->chunk;
  float *scores = dj->scores + index * heads * dj->chunk;
  float *partial = dj->partials + index * heads * (dvp + 2);
  /* Int8 rows are widened into `widened` ([kv_heads][width], zero-padded
   * to whole vectors) and read from there as unit-stride rows. */
  int int8 = job->k8 != NULL;
  int unit = int8 || (job->k->strides[2] == 1 && job->v->strides[2] == 1 &&
                      d == dj->dp && dv == dvp);
  int64_t kv_heads = heads / job->group;
  int64_t width = dj->dp > dvp ? dj->dp : dvp;
  float widened[int8 ? kv_heads * width : 1];
  int64_t key_length = int8 ? dj->dp : d, value_length = int8 ? dvp : dv;
  int64_t key_stride = int8 ? 1 : job->k->strides[2];
  int64_t value_stride = int8 ? 1 : job->v->strides[2];
  /* Scores, key-major: each key row is read once for all heads. */
  for (int64_t jj = 0; jj < count; ++jj) {
    if (int8)
      for (int64_t kh = 0; kh < kv_heads; ++kh)
        widen_row_i8(job->k8, j0 + jj, kh, d, dj->dp, widened + kh * width);
    for (int64_t h = 0; h < heads; ++h) {
      const float *key = int8 ? widened + h / job->group * width
                              : row(job->k, j0 + jj, h / job->group);
      scores[h * dj->chunk + jj] =
          dot_row(dj->q + h * dj->dp, key, key_length, key_stride, unit);
    }
  }
  if (job->distance_bias)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t jj = 0; jj < count; ++jj)
        scores[h * dj->chunk + jj] += *distance_terms(job, h, 0, j0 + jj);
  for (int64_t h = 0; h < heads; ++h) {
    float *sh = scores + h * dj->chunk, maximum = -INFINITY, total = 0;
    for (int64_t jj = 0; jj < count; ++jj)
      maximum = sh[jj] > maximum ? sh[jj] : maximum;
    int64_t jj = 0;
    for (; jj + kLanes <= count; jj += kLanes) {
      v16 e = exp_nonpositive(load16(sh + jj) - maximum);
      store16(sh + jj, e);
      total += hsum(e);
    }
    for (; jj < count; ++jj)
      total += sh[jj] = exp_nonpositive(splat(sh[jj] - maximum))[0];
    float *ph = partial + h * (dvp + 2);
    memset(ph, 0, (size_t)dvp * sizeof(float));
    ph[dvp] = maximum;
    ph[dvp + 1] = total;
  }
  /* Weighted values, key-major again. */
  for (int64_t jj = 0; jj < count; ++jj) {
    if (int8)
      for (int64_t kh = 0; kh < kv_heads; ++kh)
        widen_row_i8(job->v8, j0 + jj, kh, dv, dvp, widened + kh * width);
    for (int64_t h = 0; h < heads; ++h) {
      const float *vj = int8 ? widened + h / job->group * width
                             : row(job->v, j0 + jj, h / job->group);
      float *acc = partial + h * (dvp + 2), p = scores[h * dj->chunk + jj];
      if (unit)
        for (int64_t e = 0; e < value_length; e += kLanes)
          store16(acc + e, load16(acc + e) + p * load16(vj + e));
      else
        for (int64_t e = 0; e < value_length; ++e)
          acc[e] += p * vj[e * value_stride];
    }
  }
}

static void decode_chunks(void *context, int64_t begin, int64_t end,
                          int thread) {
  (void)thread;
  for (int64_t index = begin; index < end; ++index)
    decode_chunk(context, index);
}

/* out[0, h] = sum over chunks of values·e^(max - M) / sum of sums·e^(max - M),
 * M the largest maximum of head h. */
static void merge_chunks(const decode_job *dj, int64_t chunks) {
  const attention_job *job = dj->job;
  int64_t heads = job->heads, dvp = dj->dvp, stride = heads * (dvp + 2);
  for (int64_t h = 0; h < heads; ++h) {
    const float *first = dj->partials + h * (dvp + 2);
    float maximum = -INFINITY, total = 0;
    for (int64_t c = 0; c < chunks; ++c)
      maximum = fmaxf(maximum, first[c * stride + dvp]);
    float *o = row(job->out, 0, h);
    for (int64_t e = 0; e < job->dv; ++e)
      o[e * job->out->strides[2]] = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const float *ph = first + c * stride;
      float weight = expf(ph[dvp] - maximum);
      total += weight * ph[dvp + 1];
      for (int64_t e = 0; e < job->dv; ++e)
        o[e * job->out->strides[2]] += weight * ph[e];
    }
    float inverse = total > 0 ? 1.0f / total : 0.0f;
    for (int64_t e = 0; e < job->dv; ++e)
      o[e * job->out->strides[2]] *= inverse;
  }
}

/* Keys per chunk: enough chunks to share over the threads, none so small
 * that the merge costs more than it splits. */
static int64_t decode_chunk_keys(int64_t keys) {
  int64_t chunk = (keys + 4 * tfm_thread_count() - 1) / (4 * tfm_thread_count());
  chunk = round_up_to_lanes(chunk);
  return chunk > kKeyTile ? chunk : kKeyTile;
}

void tfm_attend_decode(const attention_job *job) {
  decode_job dj = {.job = job};
  visible_keys(job, 0, 0, job->t, &dj.first, &dj.last);
  dj.dp = round_up_to_lanes(job->d);
  dj.dvp = round_up_to_lanes(job->dv);
  dj.chunk = decode_chunk_keys(dj.last - dj.first);
  int64_t chunks = (dj.last - dj.first + dj.chunk - 1) / dj.chunk;
  size_t floats = (size_t)(job->heads * dj.dp +
                           chunks * job->heads * (dj.dvp + 2 + dj.chunk));
  /* From the buffer cache: the same size comes back every step, and a
   * failure inside a model's call returns out of memory from it. */
  float *scratch = _mlir_memref_to_llvm_alloc(floats * sizeof(float));
  if (!scratch)
    abort(); /* called outside a model's call: nowhere to report */
  float *q = scratch;
  dj.q = q;
  dj.partials = q + job->heads * dj.dp;
  dj.scores = dj.partials + chunks * job->heads * (dj.dvp + 2);
  for (int64_t h = 0; h < job->heads; ++h) {
    const float *qh = row(job->q, 0, h);
    for (int64_t c = 0; c < dj.dp; ++c)
      q[h * dj.dp + c] = c < job->d ? qh[c * job->q->strides[2]] * job->scale : 0;
  }
  tfm_parallel_for(chunks, 1, decode_chunks, &dj);
  merge_chunks(&dj, chunks);
  _mlir_memref_to_llvm_free(scratch);
}
