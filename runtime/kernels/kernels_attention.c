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
 * Keys and values cached as a narrow KV cache's rows (int8, bf16, f16) are
 * widened a tile at a time into the buffers a strided f32 cache already
 * uses.
 *
 * Vectors are GCC's generic vectors; the hot functions are cloned for
 * AVX-512, AVX2 and baseline x86-64 and picked at load time. A query
 * block's work (attention_block.inc) comes in two widths: 16-float vectors
 * where the CPU has AVX-512, 8-float ones otherwise (vector_width.h). Head
 * dimensions are zero-padded to 16 in local buffers.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/thread_pool.h"
#include "runtime/kernels/attention_internal.h"
#include "runtime/kernels/kernels_panel_bf16_dot.h"
#include "runtime/kernels/vector_width.h"
#include "tfm/runtime_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AB_NAME(x) x##_wide
#define AB_VF v16
#define AB_VI vi16
#define AB_LANES 16
#define AB_LOAD load16
#define AB_STORE store16
#define AB_SPLAT splat
#define AB_MAX vmax
#define AB_EXP exp_nonpositive
#define AB_KEYS 4
#define AB_VALUE_VECTORS 4
#include "runtime/kernels/attention_block.inc"
#undef AB_NAME
#undef AB_VF
#undef AB_VI
#undef AB_LANES
#undef AB_LOAD
#undef AB_STORE
#undef AB_SPLAT
#undef AB_MAX
#undef AB_EXP
#undef AB_KEYS
#undef AB_VALUE_VECTORS

#define AB_NAME(x) x##_narrow
#define AB_VF v8
#define AB_VI vi8
#define AB_LANES 8
#define AB_LOAD load8
#define AB_STORE store8
#define AB_SPLAT splat8
#define AB_MAX vmax8
#define AB_EXP exp_nonpositive8
#define AB_KEYS 2
#define AB_VALUE_VECTORS 2
#include "runtime/kernels/attention_block.inc"

static void attend_block(const attention_job *job, int64_t i0, int64_t i1,
                         int64_t seq_lo, int64_t seq_hi, int64_t h) {
  if (job->narrow)
    attend_block_narrow(job, i0, i1, seq_lo, seq_hi, h);
  else
    attend_block_wide(job, i0, i1, seq_lo, seq_hi, h);
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

attention_job tfm_attention_sized(attention_job job, int64_t t,
                                  int64_t kv_heads, int64_t dv) {
  job.s = job.q->sizes[0];
  job.heads = job.q->sizes[1];
  job.d = job.q->sizes[2];
  job.t = t;
  job.group = job.heads / kv_heads;
  job.dv = dv;
  job.narrow = tfm_kernels_narrow();
  return job;
}

static attention_job make_job(tfm_memref3d_f32 *q, tfm_memref3d_f32 *k,
                              tfm_memref3d_f32 *v, tfm_memref3d_f32 *out,
                              float scale, int64_t causal, int64_t window,
                              float softcap) {
  attention_job job = {.q = q,
                       .k = k,
                       .v = v,
                       .out = out,
                       .scale = scale,
                       .causal = (int)causal,
                       .window = window,
                       .softcap = softcap};
  return tfm_attention_sized(job, k->sizes[0], k->sizes[1], v->sizes[2]);
}

/* The job over a narrow cache's rows (k and v: tfm_memref3d_i8 for int8
 * rows, head_dim + 4 bytes a row of codes and scale; tfm_memref3d_u16 for
 * bf16 and f16; every 3-D descriptor has the same layout). */
static attention_job make_job_rows(tfm_row_storage storage, tfm_memref3d_f32 *q,
                                   const void *k, const void *v,
                                   tfm_memref3d_f32 *out, float scale,
                                   int64_t causal, int64_t window,
                                   float softcap) {
  const tfm_memref3d_i8 *keys = k, *values = v;
  attention_job job = {.q = q,
                       .out = out,
                       .k_rows = k,
                       .v_rows = v,
                       .rows = storage,
                       .scale = scale,
                       .causal = (int)causal,
                       .window = window,
                       .softcap = softcap};
  int64_t scale_bytes = storage == TFM_ROWS_I8 ? 4 : 0;
  return tfm_attention_sized(job, keys->sizes[0], keys->sizes[1],
               values->sizes[2] - scale_bytes);
}

/* With bf16 products, the keys and values converted to bf16 pairs once
 * for every query block (a tile's keys converted per block took a third
 * of the scores' time); returns the buffer to free, NULL without. Where
 * it cannot be allocated, the products are f32's. */
static uint32_t *convert_keys(attention_job *job) {
  if (!job->bf16_dot)
    return NULL;
  int64_t kv_heads = job->heads / job->group;
  int64_t key_words = job->t * kv_heads * ((job->d + 1) / 2);
  int64_t value_words =
      (job->t + 1) / 2 * kv_heads * round_up_to_lanes(job->dv);
  uint32_t *pairs = _mlir_memref_to_llvm_alloc(
      (size_t)(key_words + value_words) * sizeof(uint32_t));
  if (!pairs) {
    job->bf16_dot = 0;
    return NULL;
  }
  tfm_attention_key_pairs(job->k, job->d, pairs);
  tfm_attention_value_pairs(job->v, job->dv, pairs + key_words);
  job->key_pairs = pairs;
  job->value_pairs = pairs + key_words;
  return pairs;
}

void tfm_attend_blocks(attention_job job) {
  job.blocks = (job.s + kQueryBlock - 1) / kQueryBlock;
  uint32_t *pairs = convert_keys(&job);
  tfm_parallel_for(job.blocks * job.heads, 1, attention_items, &job);
  _mlir_memref_to_llvm_free(pairs);
}

static void attend(attention_job job) {
  if (job.s == 0)
    return;
  if (job.s == 1) {
    tfm_attend_decode(&job);
    return;
  }
  tfm_attend_blocks(job);
}

/* The sinks of a call: NULL for an empty [0]. */
static attention_job with_sinks(attention_job job,
                                const tfm_memref1d_f32 *sinks) {
  if (sinks->sizes[0] > 0) {
    job.sinks = sinks->aligned + sinks->offset;
    job.sinks_stride = sinks->strides[0];
  }
  return job;
}

TFM_EXPORT void
_mlir_ciface_tfm_rt_attention(tfm_memref3d_f32 *q, tfm_memref3d_f32 *k,
                              tfm_memref3d_f32 *v, tfm_memref1d_f32 *sinks,
                              tfm_memref3d_f32 *out, float scale,
                              int64_t causal, int64_t window, float softcap) {
  attend(with_sinks(make_job(q, k, v, out, scale, causal, window, softcap),
                    sinks));
}

/* tfm_rt_attention with bf16 products where the GEMMs' vdpbf16ps runs
 * (--compute-dtype bf16 or int8; attention_internal.h: bf16_dot). */
static attention_job with_bf16_dot(attention_job job) {
  job.bf16_dot = !job.narrow && tfm_bf16_dot_enabled();
  return job;
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_bf16_dot(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out, float scale, int64_t causal,
    int64_t window, float softcap) {
  attend(with_bf16_dot(with_sinks(
      make_job(q, k, v, out, scale, causal, window, softcap), sinks)));
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref2d_f32 *distance_bias, tfm_memref1d_f32 *sinks,
    tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window,
    float softcap) {
  attention_job job =
      with_sinks(make_job(q, k, v, out, scale, causal, window, softcap), sinks);
  job.distance_bias = distance_bias;
  attend(job);
}

/* The kernel's entry points over stored rows, plain and with
 * relative-position terms, for one storage. */
#define ATTENTION_OVER_ROWS(suffix, element, storage)                          \
  TFM_EXPORT void _mlir_ciface_tfm_rt_attention_rows_##suffix(                 \
      tfm_memref3d_f32 *q, element *k, element *v, tfm_memref1d_f32 *sinks,    \
      tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window,      \
      float softcap) {                                                         \
    attend(with_sinks(                                                         \
        make_job_rows(storage, q, k, v, out, scale, causal, window, softcap),  \
        sinks));                                                               \
  }                                                                            \
  TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased_rows_##suffix(          \
      tfm_memref3d_f32 *q, element *k, element *v,                             \
      tfm_memref2d_f32 *distance_bias, tfm_memref1d_f32 *sinks,                \
      tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window,      \
      float softcap) {                                                         \
    attention_job job = with_sinks(                                            \
        make_job_rows(storage, q, k, v, out, scale, causal, window, softcap),  \
        sinks);                                                                \
    job.distance_bias = distance_bias;                                         \
    attend(job);                                                               \
  }
ATTENTION_OVER_ROWS(i8, tfm_memref3d_i8, TFM_ROWS_I8)
ATTENTION_OVER_ROWS(bf16, tfm_memref3d_u16, TFM_ROWS_BF16)
ATTENTION_OVER_ROWS(f16, tfm_memref3d_u16, TFM_ROWS_F16)

/* Packed sequences (tfm_rt_attention_packed and its bf16 twin): each
 * sequence's query blocks see only its own keys. */
static void attend_packed(attention_job job, tfm_memref1d_i32 *lengths) {
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
  uint32_t *pairs = convert_keys(&job);
  tfm_parallel_for(job.blocks * job.heads, 1, attention_items, &job);
  _mlir_memref_to_llvm_free(pairs);
  _mlir_memref_to_llvm_free(table);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_packed(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref1d_i32 *lengths, tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out,
    float scale, int64_t causal, int64_t window, float softcap) {
  attend_packed(
      with_sinks(make_job(q, k, v, out, scale, causal, window, softcap), sinks),
      lengths);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_attention_packed_bf16_dot(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref1d_i32 *lengths, tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out,
    float scale, int64_t causal, int64_t window, float softcap) {
  attend_packed(
      with_bf16_dot(with_sinks(
          make_job(q, k, v, out, scale, causal, window, softcap), sinks)),
      lengths);
}
