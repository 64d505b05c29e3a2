/*===- kernels_attention_window.c - attention within fixed windows -------===//
 *
 * tfm.window_attention on the CPU (Swin): the rows form windows of L
 * consecutive rows, and each query attends to its own window's keys only,
 * softmax(scale · q·kᵀ + bias[w mod b, h]) · v. The bias carries Swin's
 * relative-position terms and the shifted windows' mask, folded at compile
 * time, so nothing here knows about shifts.
 *
 * A work item is one window of one head: its keys transposed into
 * [head_dim][L rounded up to 16] and its values copied into whole vectors
 * (both stay in L1), then each query's L scores a vector of keys at a
 * time, their softmax with the vector exponential, and the weighted sum of
 * the values. Nothing larger than one window's [L, L] exists, and no key
 * outside the window is read.
 *
 * Windows of up to 64 keys and heads of up to 64 features (Swin's 7 x 7
 * and 8 x 8 windows, its 32-wide heads) go four queries at a time with the
 * vector counts constant (window_queries): every key or value vector
 * loaded serves four queries, and the accumulators stay in registers, as
 * four independent chains each. One query at a time, the weighted values'
 * two chains of 49 dependent FMAs and accumulators kept in memory held
 * Swin-T's attention to a fifth of the FP32 peak (30% of its int8 time).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/thread_pool.h"
#include "runtime/kernels/simd.h"
#include "tfm/runtime_kernels.h"

#include <math.h>
#include <string.h>

typedef struct {
  const tfm_memref3d_f32 *q, *k, *v, *out;
  const tfm_memref4d_f32 *bias;
  float scale;
  int64_t window, heads, d, biases;
} window_job;

TFM_INLINE float *at(const tfm_memref3d_f32 *m, int64_t i, int64_t h) {
  return m->aligned + m->offset + i * m->strides[0] + h * m->strides[1];
}

enum { kWindowQueries = 4 };

/* Queries [i0, i0 + count) (count <= 4) of the window starting at row
 * `first`, head h: kt [d][16 · VECTORS] the keys transposed (zero past
 * L), vt [L][16 · VALUE_VECTORS] the values (zero past d), `bias` the
 * window's [L, L] terms. VECTORS and VALUE_VECTORS are constants at each
 * call. Missing queries repeat the last one; their results are dropped. */
TFM_INLINE void window_queries(const window_job *job, const float *kt,
                               const float *vt, const float *bias,
                               int64_t first, int64_t h, int64_t i0, int count,
                               const int VECTORS, const int VALUE_VECTORS) {
  const tfm_memref3d_f32 *q = job->q;
  const tfm_memref4d_f32 *b = job->bias;
  int64_t L = job->window, d = job->d, lp = VECTORS * kLanes;
  int64_t dp = VALUE_VECTORS * kLanes;
  const float *query[kWindowQueries];
  for (int r = 0; r < kWindowQueries; ++r)
    query[r] = at(q, first + i0 + (r < count ? r : count - 1), h);
  v16 acc[kWindowQueries][4];
  for (int r = 0; r < kWindowQueries; ++r)
    for (int u = 0; u < VECTORS; ++u)
      acc[r][u] = splat(0);
  for (int64_t c = 0; c < d; ++c) {
    v16 keys[4];
    for (int u = 0; u < VECTORS; ++u)
      keys[u] = load16(kt + c * lp + u * kLanes);
    for (int r = 0; r < kWindowQueries; ++r) {
      float x = query[r][c * q->strides[2]] * job->scale;
      for (int u = 0; u < VECTORS; ++u)
        acc[r][u] += x * keys[u];
    }
  }
  /* Bias, softmax; the probabilities to memory, read back one key at a
   * time for the values. */
  float p[kWindowQueries][4 * kLanes], inverse[kWindowQueries];
  for (int r = 0; r < kWindowQueries; ++r) {
    const float *row =
        bias + (i0 + (r < count ? r : count - 1)) * b->strides[2];
    v16 m = splat(-INFINITY);
    for (int u = 0; u < VECTORS; ++u) {
      int64_t j0 = u * kLanes;
      v16 terms;
      if (b->strides[3] == 1 && j0 + kLanes <= L) {
        terms = load16(row + j0);
      } else {
        float lanes[kLanes];
        for (int e = 0; e < kLanes; ++e)
          lanes[e] = j0 + e < L ? row[(j0 + e) * b->strides[3]] : -INFINITY;
        terms = load16(lanes);
      }
      acc[r][u] += terms;
      m = vmax(m, acc[r][u]);
    }
    float max = hmax(m);
    v16 sum = splat(0);
    for (int u = 0; u < VECTORS; ++u) {
      v16 e = exp_nonpositive(acc[r][u] - max);
      store16(p[r] + u * kLanes, e);
      sum += e;
    }
    inverse[r] = 1.0f / hsum(sum);
  }
  v16 o[kWindowQueries][4];
  for (int r = 0; r < kWindowQueries; ++r)
    for (int u = 0; u < VALUE_VECTORS; ++u)
      o[r][u] = splat(0);
  for (int64_t j = 0; j < L; ++j) {
    v16 values[4];
    for (int u = 0; u < VALUE_VECTORS; ++u)
      values[u] = load16(vt + j * dp + u * kLanes);
    for (int r = 0; r < kWindowQueries; ++r)
      for (int u = 0; u < VALUE_VECTORS; ++u)
        o[r][u] += p[r][j] * values[u];
  }
  for (int r = 0; r < count; ++r) {
    float result[4 * kLanes];
    for (int u = 0; u < VALUE_VECTORS; ++u)
      store16(result + u * kLanes, o[r][u] * inverse[r]);
    float *out = at(job->out, first + i0 + r, h);
    for (int64_t e = 0; e < d; ++e)
      out[e * job->out->strides[2]] = result[e];
  }
}

TFM_CLONED
static void attend_window(const window_job *job, int64_t w, int64_t h) {
  enum { kMaxWindow = 256, kMaxDim = 256 };
  int64_t L = job->window, d = job->d, lp = round_up_to_lanes(L),
          dp = round_up_to_lanes(d);
  int64_t vectors = lp / kLanes, value_vectors = dp / kLanes;
  float kt[d][lp], vt[L][dp], scores[lp];
  const tfm_memref3d_f32 *q = job->q, *k = job->k, *v = job->v;
  int64_t first = w * L;
  /* Keys and values of contiguous features (a fused projection's
   * slices) are read a row at a time, the common case's loops apart from
   * the strided one's: the gathers were a third of this kernel's time. */
  int dense = k->strides[2] == 1 && v->strides[2] == 1;
  for (int64_t j = 0; j < lp; ++j) {
    const float *key = j < L ? at(k, first + j, h) : NULL;
    if (dense && key)
      for (int64_t c = 0; c < d; ++c)
        kt[c][j] = key[c];
    else
      for (int64_t c = 0; c < d; ++c)
        kt[c][j] = key ? key[c * k->strides[2]] : 0.0f;
  }
  for (int64_t j = 0; j < L; ++j) {
    const float *value = at(v, first + j, h);
    if (dense) {
      memcpy(vt[j], value, (size_t)d * sizeof(float));
      memset(vt[j] + d, 0, (size_t)(dp - d) * sizeof(float));
      continue;
    }
    for (int64_t e = 0; e < dp; ++e)
      vt[j][e] = e < d ? value[e * v->strides[2]] : 0.0f;
  }
  const tfm_memref4d_f32 *b = job->bias;
  const float *bias = b->aligned + b->offset +
                      (w % job->biases) * b->strides[0] + h * b->strides[1];
  if (vectors <= 4 && value_vectors <= 4) {
    for (int64_t i0 = 0; i0 < L; i0 += kWindowQueries) {
      int count = L - i0 < kWindowQueries ? (int)(L - i0) : kWindowQueries;
      /* Each pair of counts its own instance, constants inside. */
#define TFM_WINDOW_CASE(V, VV)                                                 \
  case (V - 1) * 4 + VV - 1:                                                   \
    window_queries(job, kt[0], vt[0], bias, first, h, i0, count, V, VV);       \
    break;
#define TFM_WINDOW_CASES(V)                                                    \
  TFM_WINDOW_CASE(V, 1)                                                        \
  TFM_WINDOW_CASE(V, 2) TFM_WINDOW_CASE(V, 3) TFM_WINDOW_CASE(V, 4)
      switch ((vectors - 1) * 4 + value_vectors - 1) {
        TFM_WINDOW_CASES(1)
        TFM_WINDOW_CASES(2)
        TFM_WINDOW_CASES(3)
        TFM_WINDOW_CASES(4)
      }
#undef TFM_WINDOW_CASES
#undef TFM_WINDOW_CASE
    }
    return;
  }
  for (int64_t i = 0; i < L; ++i) {
    const float *query = at(q, first + i, h);
    v16 acc[kMaxWindow / kLanes];
    for (int64_t u = 0; u < vectors; ++u)
      acc[u] = splat(0);
    for (int64_t c = 0; c < d; ++c) {
      float x = query[c * q->strides[2]] * job->scale;
      for (int64_t u = 0; u < vectors; ++u)
        acc[u] += x * load16(kt[c] + u * kLanes);
    }
    for (int64_t u = 0; u < vectors; ++u)
      store16(scores + u * kLanes, acc[u]);
    const float *row = bias + i * b->strides[2];
    float max = -INFINITY;
    for (int64_t j = 0; j < L; ++j) {
      scores[j] += row[j * b->strides[3]];
      max = scores[j] > max ? scores[j] : max;
    }
    for (int64_t j = L; j < lp; ++j)
      scores[j] = -INFINITY; /* padding: e^-inf = 0 */
    v16 sum = splat(0);
    for (int64_t u = 0; u < vectors; ++u) {
      v16 e = exp_nonpositive(load16(scores + u * kLanes) - max);
      store16(scores + u * kLanes, e);
      sum += e;
    }
    float inverse = 1.0f / hsum(sum);
    v16 o[kMaxDim / kLanes];
    for (int64_t u = 0; u < value_vectors; ++u)
      o[u] = splat(0);
    for (int64_t j = 0; j < L; ++j)
      for (int64_t u = 0; u < value_vectors; ++u)
        o[u] += scores[j] * load16(vt[j] + u * kLanes);
    float result[kMaxDim];
    for (int64_t u = 0; u < value_vectors; ++u)
      store16(result + u * kLanes, o[u] * inverse);
    float *out = at(job->out, first + i, h);
    for (int64_t e = 0; e < d; ++e)
      out[e * job->out->strides[2]] = result[e];
  }
}

static void window_items(void *context, int64_t begin, int64_t end,
                         int thread) {
  (void)thread;
  const window_job *job = context;
  for (int64_t item = begin; item < end; ++item)
    attend_window(job, item / job->heads, item % job->heads);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_window_attention(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref4d_f32 *bias, tfm_memref3d_f32 *out, float scale,
    int64_t window) {
  window_job job = {.q = q,
                    .k = k,
                    .v = v,
                    .out = out,
                    .bias = bias,
                    .scale = scale,
                    .window = window,
                    .heads = q->sizes[1],
                    .d = q->sizes[2],
                    .biases = bias->sizes[0]};
  int64_t windows = q->sizes[0] / window;
  tfm_parallel_for(windows * job.heads, 1, window_items, &job);
}
