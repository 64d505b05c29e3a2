/*===- kernels_attention_sparse.c - Longformer's attention --------------===//
 *
 * tfm.sparse_attention on the CPU: the flash-style blocks of
 * kernels_attention.c over a bidirectional window, plus the global keys,
 * then the global queries' rows over every key.
 *
 * 1. Every query block meets the key tiles its window reaches (|i - j| <=
 *    window), with the global keys inside them masked, then the global keys
 *    as a gathered list (attention_block.inc's second pass): per query, one
 *    softmax over the window and the global keys, as transformers'
 *    LongformerSelfAttention concatenates them. The work is s · (2·window +
 *    1 + globals), linear in s.
 * 2. The global queries (few) are gathered into a buffer and attend to all
 *    keys with the global projections, and their rows are written over
 *    step 1's.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/kernels/attention_internal.h"
#include "tfm/runtime_kernels.h"

#include <stdlib.h>
#include <string.h>

/* q, k, v and out of one head layout [rows, heads, dim], contiguous. */
static tfm_memref3d_f32 contiguous(float *data, int64_t rows, int64_t heads,
                                   int64_t dim) {
  tfm_memref3d_f32 m = {
      data, data, 0, {rows, heads, dim}, {heads * dim, dim, 1}};
  return m;
}

/* Row i of `m` (all heads) copied to or from a contiguous row `flat`. */
static void copy_row(const tfm_memref3d_f32 *m, int64_t i, float *flat,
                     int to_flat) {
  int64_t heads = m->sizes[1], dim = m->sizes[2];
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t e = 0; e < dim; ++e) {
      float *element = m->aligned + m->offset + i * m->strides[0] +
                       h * m->strides[1] + e * m->strides[2];
      if (to_flat)
        flat[h * dim + e] = *element;
      else
        *element = flat[h * dim + e];
    }
}

/* Step 2: the global queries' rows of `out`, each over every key with the
 * global projections. */
static void attend_global_rows(tfm_memref3d_f32 *gq, tfm_memref3d_f32 *gk,
                               tfm_memref3d_f32 *gv, tfm_memref3d_f32 *out,
                               const int64_t *rows, int64_t count,
                               float scale) {
  int64_t heads = gq->sizes[1], d = gq->sizes[2], dv = gv->sizes[2];
  float *queries = malloc((size_t)(count * heads * d) * sizeof(float));
  float *results = malloc((size_t)(count * heads * dv) * sizeof(float));
  if (!queries || !results)
    abort(); /* an allocation inside a kernel: no way to report */
  for (int64_t g = 0; g < count; ++g)
    copy_row(gq, rows[g], queries + g * heads * d, 1);
  tfm_memref3d_f32 q = contiguous(queries, count, heads, d);
  tfm_memref3d_f32 o = contiguous(results, count, heads, dv);
  attention_job job = {.q = &q, .k = gk, .v = gv, .out = &o, .scale = scale};
  tfm_attend_blocks(tfm_attention_sized(job, gk->sizes[0], gk->sizes[1], dv));
  for (int64_t g = 0; g < count; ++g)
    copy_row(out, rows[g], results + g * heads * dv, 0);
  free(queries);
  free(results);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_sparse_attention(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref3d_f32 *gq, tfm_memref3d_f32 *gk, tfm_memref3d_f32 *gv,
    tfm_memref1d_i32 *global, tfm_memref3d_f32 *out, float scale,
    int64_t window, int64_t global_prefix) {
  int64_t s = q->sizes[0];
  if (s == 0)
    return;
  /* The mask is the tokens' own, or empty where the op has none. */
  const int32_t *mask =
      global->sizes[0] == s ? global->aligned + global->offset : NULL;
  int64_t *keys = malloc((size_t)s * sizeof *keys), count = 0;
  if (!keys)
    abort();
  attention_job job = {.q = q,
                       .k = k,
                       .v = v,
                       .out = out,
                       .scale = scale,
                       .window = window,
                       .symmetric_window = 1,
                       .global_keys = keys,
                       .global_mask = mask,
                       .global_mask_stride = global->strides[0],
                       .global_prefix = global_prefix};
  for (int64_t j = 0; j < s; ++j)
    if (is_global_key(&job, j))
      keys[count++] = j;
  job.global_count = count;
  tfm_attend_blocks(
      tfm_attention_sized(job, k->sizes[0], k->sizes[1], v->sizes[2]));
  if (count)
    attend_global_rows(gq, gk, gv, out, keys, count, scale);
  free(keys);
}
