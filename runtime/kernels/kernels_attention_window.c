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
 *===----------------------------------------------------------------------===*/

#include "runtime/core/thread_pool.h"
#include "runtime/kernels/simd.h"
#include "tfm/runtime_kernels.h"

#include <math.h>

typedef struct {
  const tfm_memref3d_f32 *q, *k, *v, *out;
  const tfm_memref4d_f32 *bias;
  float scale;
  int64_t window, heads, d, biases;
} window_job;

TFM_INLINE float *at(const tfm_memref3d_f32 *m, int64_t i, int64_t h) {
  return m->aligned + m->offset + i * m->strides[0] + h * m->strides[1];
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
  for (int64_t j = 0; j < lp; ++j) {
    const float *key = j < L ? at(k, first + j, h) : NULL;
    for (int64_t c = 0; c < d; ++c)
      kt[c][j] = key ? key[c * k->strides[2]] : 0.0f;
  }
  for (int64_t j = 0; j < L; ++j) {
    const float *value = at(v, first + j, h);
    for (int64_t e = 0; e < dp; ++e)
      vt[j][e] = e < d ? value[e * v->strides[2]] : 0.0f;
  }
  const tfm_memref4d_f32 *b = job->bias;
  const float *bias = b->aligned + b->offset +
                      (w % job->biases) * b->strides[0] + h * b->strides[1];
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
