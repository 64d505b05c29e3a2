/*===- kernels_delta_rule.c - Gated DeltaNet's recurrence ------------------===//
 *
 * tfm.gated_delta_rule on the CPU: each value head's [dk, dv] state is its
 * own work item (every core takes whole heads), kept in the output buffer
 * and updated position by position in two passes: one reads what the
 * decayed state recalls of the key, one writes the corrected state and
 * reads it for the query at the same time. A head's state (64 KiB for
 * Qwen3.5's 128 x 128) stays in the core's L2 across the positions, so a
 * prefill costs ~4·dk·dv flops a position and head, linear in the prompt.
 * The decay and softplus use libm (exp, log1p) in full precision.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/thread_pool.h"
#include "tfm/runtime_kernels.h"

#include <math.h>
#include <string.h>

typedef struct {
  const tfm_memref3d_f32 *query, *key, *value, *start;
  const tfm_memref2d_f32 *alpha, *beta;
  const tfm_memref1d_f32 *decay;
  tfm_memref3d_f32 *out, *state;
  float scale;
  int64_t tiled, reset;
} delta_rule_job;

static inline float *at3(const tfm_memref3d_f32 *m, int64_t i, int64_t j) {
  return m->aligned + m->offset + i * m->strides[0] + j * m->strides[1];
}

static inline float at2(const tfm_memref2d_f32 *m, int64_t i, int64_t j) {
  return m->aligned[m->offset + i * m->strides[0] + j * m->strides[1]];
}

/* log(1 + e^x) without overflow. */
static inline float softplus(float x) {
  return (x > 0 ? x : 0.0f) + log1pf(expf(-fabsf(x)));
}

static void delta_rule_heads(void *arg, int64_t begin, int64_t end,
                             int thread) {
  (void)thread;
  const delta_rule_job *job = (const delta_rule_job *)arg;
  int64_t positions = job->value->sizes[0];
  int64_t key_heads = job->key->sizes[1], value_heads = job->value->sizes[1];
  int64_t dk = job->key->sizes[2], dv = job->value->sizes[2];
  int64_t ks = job->key->strides[2], qs = job->query->strides[2];
  int64_t vs = job->value->strides[2], os = job->out->strides[2];
  int64_t group = value_heads / key_heads;
  float recalled[dv], delta[dv], read[dv];
  for (int64_t h = begin; h < end; ++h) {
    int64_t kh = job->tiled ? h % key_heads : h / group;
    /* The state buffer is fresh and contiguous: [Hv, dk, dv]. */
    float *s = job->state->aligned + job->state->offset + h * dk * dv;
    for (int64_t i = 0; i < dk; ++i) {
      const float *from = at3(job->start, h, i);
      for (int64_t j = 0; j < dv; ++j)
        s[i * dv + j] = job->reset ? 0.0f : from[j * job->start->strides[2]];
    }
    float decay = job->decay->aligned[job->decay->offset +
                                      h * job->decay->strides[0]];
    for (int64_t t = 0; t < positions; ++t) {
      float factor = expf(decay * softplus(at2(job->alpha, t, h)));
      float beta = at2(job->beta, t, h);
      const float *k = at3(job->key, t, kh), *q = at3(job->query, t, kh);
      const float *v = at3(job->value, t, h);
      for (int64_t j = 0; j < dv; ++j)
        recalled[j] = 0;
      for (int64_t i = 0; i < dk; ++i) {
        float ki = k[i * ks];
        const float *row = s + i * dv;
        for (int64_t j = 0; j < dv; ++j)
          recalled[j] += row[j] * ki;
      }
      for (int64_t j = 0; j < dv; ++j) {
        delta[j] = beta * (v[j * vs] - factor * recalled[j]);
        read[j] = 0;
      }
      for (int64_t i = 0; i < dk; ++i) {
        float ki = k[i * ks], qi = q[i * qs] * job->scale;
        float *row = s + i * dv;
        for (int64_t j = 0; j < dv; ++j) {
          float updated = factor * row[j] + ki * delta[j];
          row[j] = updated;
          read[j] += updated * qi;
        }
      }
      float *o = at3(job->out, t, h);
      for (int64_t j = 0; j < dv; ++j)
        o[j * os] = read[j];
    }
  }
}

TFM_EXPORT void _mlir_ciface_tfm_rt_gated_delta_rule(
    tfm_memref3d_f32 *query, tfm_memref3d_f32 *key, tfm_memref3d_f32 *value,
    tfm_memref2d_f32 *alpha, tfm_memref1d_f32 *decay, tfm_memref2d_f32 *beta,
    tfm_memref3d_f32 *start, tfm_memref3d_f32 *out, tfm_memref3d_f32 *state,
    float scale, int64_t tiled, int64_t reset) {
  delta_rule_job job = {query, key, value, start, alpha, beta,
                        decay, out, state, scale, tiled, reset};
  tfm_parallel_for(value->sizes[1], 1, delta_rule_heads, &job);
}
