/*===- kernels_attention_decode.c - attention of one query ---------------===//
 *
 * The decode step of tfm_rt_attention (see kernels_attention.c): one query
 * per head against the whole KV cache, which is read once and split over
 * the runtime's threads by key positions (flash-decoding). A narrow
 * cache's rows (int8, bf16, f16) are widened a chunk of positions at a
 * time, every KV head's rows once for
 * the query heads that share them. A chunk's work
 * (attention_decode_chunk.inc) comes in two vector widths, as the
 * prefill's does (vector_width.h).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/thread_pool.h"
#include "runtime/kernels/attention_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The single query of a decode step meets its keys a chunk of positions
 * at a time (flash-decoding), the chunks shared over the threads. Each
 * chunk leaves, per head, its maximum score, its sum of exponentials and
 * its unnormalised weighted values; merge_chunks rescales and adds them. */
typedef struct {
  const attention_job *job;
  const float *q;  /* [heads][dp], scaled, zero-padded */
  float *partials; /* [chunks][heads][dvp + 2]: values, maximum, sum */
  float *scores;   /* [chunks][chunk]: one head's at a time */
  /* group_gemm: [chunks][group][chunk], a KV head's group's at once */
  float *group_scores;
  float *widened;  /* stored rows: [threads][chunk][dp + dvp] */
  int64_t first, last, chunk, dp, dvp;
  /* bf16 rows of whole vectors, unit stride, for few query heads a KV
   * head: read where they are, widened in registers (no buffer); other
   * stored rows are widened into `widened`. */
  int rows_in_place, widened_rows;
  /* f32 rows wide and shared by many query heads: the group's products as
   * GEMMs (attention_decode_chunk.inc). */
  int group_gemm;
} decode_job;

/* One KV head's keys or values over a chunk: row jj at base + jj ·
 * position elements, its elements `element` apart; f32 elements, or a
 * bf16 cache's (`storage`), widened as they are loaded. */
typedef struct {
  const void *base;
  int64_t position, element;
  tfm_row_storage storage;
} kv_rows;

/* A vector of 16-bit elements (a bf16 cache's) of either width. */
typedef uint16_t vu16x16 __attribute__((vector_size(32)));
typedef uint16_t vu16x8 __attribute__((vector_size(16)));

#define AD_NAME(x) x##_wide
#define AD_VF v16
#define AD_VI vi16
#define AD_VU16 vu16x16
#define AD_LANES 16
#define AD_LOAD load16
#define AD_STORE store16
#define AD_SPLAT splat
#define AD_HSUM hsum
#define AD_EXP exp_nonpositive
#include "runtime/kernels/attention_decode_chunk.inc"
#undef AD_NAME
#undef AD_VF
#undef AD_VI
#undef AD_VU16
#undef AD_LANES
#undef AD_LOAD
#undef AD_STORE
#undef AD_SPLAT
#undef AD_HSUM
#undef AD_EXP

#define AD_NAME(x) x##_narrow
#define AD_VF v8
#define AD_VI vi8
#define AD_VU16 vu16x8
#define AD_LANES 8
#define AD_LOAD load8
#define AD_STORE store8
#define AD_SPLAT splat8
#define AD_HSUM hsum8
#define AD_EXP exp_nonpositive8
#include "runtime/kernels/attention_decode_chunk.inc"

static void decode_chunks(void *context, int64_t begin, int64_t end,
                          int thread) {
  const decode_job *dj = context;
  for (int64_t index = begin; index < end; ++index)
    if (dj->job->narrow)
      decode_chunk_narrow(dj, index, thread);
    else
      decode_chunk_wide(dj, index, thread);
}

/* out[0, h] = sum over chunks of values·e^(max - M) / sum of sums·e^(max - M),
 * M the largest maximum of head h (the sink's term joining the sum). */
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
    float inverse = softmax_inverse(job, h, maximum, total);
    for (int64_t e = 0; e < job->dv; ++e)
      o[e * job->out->strides[2]] *= inverse;
  }
}

/* Keys per chunk: two chunks a thread, so that a thread slowed by
 * another process leaves its second to the others; none so small that
 * the merge and the hand-off cost more than the split saves, nor so large
 * that a KV head's rows of a chunk leave L2 before its group's last query
 * head has read them. Rows widened into a buffer (int8, f16) come in
 * chunks of at most 64 keys, the buffer 32 KB at head_dim 64, within L1:
 * at 256 the widening wrote and read it through L2 (an Intel Xeon,
 * 124M int8 weights: an f16 cache after a 512-token prompt 253-284 ->
 * 291-309 tok/s). */
enum {
  kFewestChunkKeys = 16,
  kMostChunkKeys = 256,
  kMostWidenedChunkKeys = 64,
  kChunksPerThread = 2
};

/* bf16 rows are widened in registers as each query head reads them, so
 * once per head of a KV head's group: up to groups of 4 that costs less
 * than a pass through the buffer (the 124M LLaMA shape, groups of 3, after
 * an 896-token prompt: 264-282 tok/s against 269-272), beyond it more
 * (TinyLlama's groups of 8 after 1920 tokens: 19.1-20.8 against
 * 22.3-22.7, the f32 cache's 21.2-22.2). f16's conversion in generic
 * vectors, an element at a time in GCC 12, costs more than widening
 * through F16C into the buffer, so f16 rows always take the buffer. */
enum { kMostInPlaceGroup = 4 };

/* Query heads a KV head and row widths from which a group's products run
 * as GEMMs: MLA's 16 heads over 576 + 512 floats a key, 256 keys a chunk
 * (1.1 MB, past L2), took 40 ms a Moonlight-shaped step after 4096
 * tokens, 0.6x llama.cpp, each head reading the chunk again. */
enum { kFewestGemmGroup = 8, kNarrowestGemmRow = 256 };

static int64_t decode_chunk_keys(int64_t keys, int64_t most) {
  int64_t split = kChunksPerThread * tfm_thread_count();
  int64_t chunk = round_up_to_lanes((keys + split - 1) / split);
  if (chunk < kFewestChunkKeys)
    return kFewestChunkKeys;
  return chunk < most ? chunk : most;
}

void tfm_attend_decode(const attention_job *job) {
  decode_job dj = {.job = job};
  visible_keys(job, 0, 0, job->t, &dj.first, &dj.last);
  dj.dp = round_up_to_lanes(job->d);
  dj.dvp = round_up_to_lanes(job->dv);
  const tfm_memref3d_u16 *k16 = job->k_rows, *v16 = job->v_rows;
  dj.rows_in_place = job->rows == TFM_ROWS_BF16 &&
                     job->group <= kMostInPlaceGroup &&
                     job->d == dj.dp && job->dv == dj.dvp &&
                     k16->strides[2] == 1 && v16->strides[2] == 1;
  dj.widened_rows = job->rows != TFM_ROWS_F32 && !dj.rows_in_place;
  dj.group_gemm = job->rows == TFM_ROWS_F32 && job->group >= kFewestGemmGroup &&
                  dj.dp >= kNarrowestGemmRow;
  dj.chunk = decode_chunk_keys(dj.last - dj.first, dj.widened_rows
                                                       ? kMostWidenedChunkKeys
                                                       : kMostChunkKeys);
  int64_t chunks = (dj.last - dj.first + dj.chunk - 1) / dj.chunk;
  size_t widened = dj.widened_rows ? (size_t)(tfm_thread_count() * dj.chunk *
                                           (dj.dp + dj.dvp))
                                : 0;
  size_t group_scores =
      dj.group_gemm ? (size_t)(chunks * job->group * dj.chunk) : 0;
  size_t floats = (size_t)(job->heads * dj.dp +
                           chunks * (job->heads * (dj.dvp + 2) + dj.chunk)) +
                  widened + group_scores;
  /* From the buffer cache: the same size comes back every step, and a
   * failure inside a model's call returns out of memory from it. */
  float *scratch = _mlir_memref_to_llvm_alloc(floats * sizeof(float));
  if (!scratch)
    abort(); /* called outside a model's call: nowhere to report */
  float *q = scratch;
  dj.q = q;
  dj.partials = q + job->heads * dj.dp;
  dj.scores = dj.partials + chunks * job->heads * (dj.dvp + 2);
  dj.widened = dj.scores + chunks * dj.chunk;
  dj.group_scores = dj.widened + widened;
  for (int64_t h = 0; h < job->heads; ++h) {
    const float *qh = row(job->q, 0, h);
    for (int64_t c = 0; c < dj.dp; ++c)
      q[h * dj.dp + c] = c < job->d ? qh[c * job->q->strides[2]] * job->scale : 0;
  }
  tfm_parallel_for(chunks, 1, decode_chunks, &dj);
  merge_chunks(&dj, chunks);
  _mlir_memref_to_llvm_free(scratch);
}
