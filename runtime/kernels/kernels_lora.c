/*===- kernels_lora.c - run-time LoRA adapters' updates (tfm.lora) -------===*
 *
 * out = projected + B·(A·x) for each row, A [rank, in] and B [out, rank]
 * the row's adapter's matrices for this target (runtime/core/lora_bank.h;
 * a lower rank is padded with zeros, B carries the scale). The rows of one
 * adapter are gathered (where they are not already consecutive, as a
 * prefill chunk's are) and take two small GEMMs, so that each adapter's A
 * and B are read once a call however many rows use it: rank·(in + out)
 * multiply-adds a row, 1-3% of the projection's at rank 16. Adapters are
 * spread over the pool's threads; one adapter's rows split by columns of
 * B's product instead.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/lora_bank.h"
#include "runtime/core/thread_pool.h"
#include "tfm/runtime_kernels.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

/* The slot row `row` runs with (-1: none). */
static int32_t slot_of_row(const tfm_lora_rows *rows, int64_t row) {
  if (rows->count == 1)
    return rows->slots[0];
  return row < rows->count ? rows->slots[row] : -1;
}

/* One adapter's rows: where they start in `order` (the call's rows sorted
 * by adapter) and how many. */
typedef struct {
  int32_t slot;
  int64_t first, count;
} slot_rows;

typedef struct {
  const tfm_lora_rows *bound;
  const tfm_memref2d_f32 *x;
  float *out;
  int64_t out_stride, out_column_stride, in, n, rank, offset;
  const int64_t *order; /* row indices grouped by adapter */
  const slot_rows *groups;
  int64_t group_count;
  /* One group: its columns split in `chunks` ranges, a thread's each
   * (each recomputes the group's [rows, rank] product: one per thread). */
  int split_columns;
  int64_t chunks;
  int failed; /* a thread's scratch could not be had */
} lora_job;

static const float *x_row(lora_job *job, int64_t row) {
  const tfm_memref2d_f32 *x = job->x;
  return x->aligned + x->offset + row * x->strides[0];
}

/* Group `g`'s update for output columns [begin, end), through scratch of
 * its rows' inputs (gathered where needed) and [rows, rank] products. */
static void update_group(lora_job *job, const slot_rows *group, int64_t begin,
                         int64_t end) {
  const float *a =
      tfm_lora_slot_data(job->bound->bank, group->slot) + job->offset;
  const float *b = a + job->rank * job->in;
  int64_t m = group->count, in = job->in, rank = job->rank;
  const int64_t *rows = job->order + group->first;
  int consecutive = job->x->strides[1] == 1;
  for (int64_t i = 1; consecutive && i < m; ++i)
    consecutive = rows[i] == rows[0] + i;
  float *scratch = malloc(
      (size_t)(m * rank + (consecutive ? 0 : m * in) + m * (end - begin)) *
      sizeof *scratch);
  if (!scratch) {
    __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  float *h = scratch, *gathered = h + m * rank;
  float *delta = gathered + (consecutive ? 0 : m * in);
  const float *xs = consecutive ? x_row(job, rows[0]) : gathered;
  int64_t ldx = consecutive ? job->x->strides[0] : in;
  if (!consecutive)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < in; ++k)
        gathered[i * in + k] = x_row(job, rows[i])[k * job->x->strides[1]];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m,
              (blasint)rank, (blasint)in, 1.0f, xs, (blasint)ldx, a,
              (blasint)in, 0.0f, h, (blasint)rank);
  int64_t width = end - begin;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m,
              (blasint)width, (blasint)rank, 1.0f, h, (blasint)rank,
              b + begin * rank, (blasint)rank, 0.0f, delta, (blasint)width);
  for (int64_t i = 0; i < m; ++i) {
    float *row = job->out + rows[i] * job->out_stride;
    for (int64_t j = 0; j < width; ++j)
      row[(begin + j) * job->out_column_stride] += delta[i * width + j];
  }
  free(scratch);
}

static void update_items(void *context, int64_t begin, int64_t end,
                         int thread) {
  (void)thread;
  lora_job *job = context;
  for (int64_t item = begin; item < end; ++item) {
    if (!job->split_columns) {
      update_group(job, &job->groups[item], 0, job->n);
      continue;
    }
    int64_t first = job->n * item / job->chunks;
    int64_t last = job->n * (item + 1) / job->chunks;
    update_group(job, &job->groups[0], first, last);
  }
}

TFM_EXPORT void _mlir_ciface_tfm_rt_lora(tfm_memref2d_f32 *x,
                                         tfm_memref2d_f32 *projected,
                                         tfm_memref2d_f32 *out,
                                         int64_t target) {
  int64_t rows = out->sizes[0], n = out->sizes[1], in = x->sizes[1];
  const float *py = projected->aligned + projected->offset;
  float *po = out->aligned + out->offset;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j)
      po[i * out->strides[0] + j * out->strides[1]] =
          py[i * projected->strides[0] + j * projected->strides[1]];
  const tfm_lora_rows *bound = tfm_lora_bound();
  if (!bound || !bound->bank || rows == 0)
    return;
  const tfm_lora_desc *desc = tfm_lora_bank_desc(bound->bank);
  if (target < 0 || target >= desc->num_targets ||
      desc->targets[target].in_features != in ||
      desc->targets[target].out_features != n)
    return; /* a call of another model's code: not this bank's target */
  /* The rows grouped by adapter, in the order adapters first appear. */
  int64_t *order = malloc((size_t)rows * sizeof *order);
  slot_rows *groups = malloc((size_t)desc->slots * sizeof *groups);
  if (!order || !groups) {
    free(order);
    free(groups);
    tfm_buffer_fail_call(); /* out of memory: the call fails */
    return;
  }
  int64_t group_count = 0, placed = 0;
  for (int64_t row = 0; row < rows; ++row) {
    int32_t slot = slot_of_row(bound, row);
    int seen = slot < 0;
    for (int64_t g = 0; !seen && g < group_count; ++g)
      seen = groups[g].slot == slot;
    if (seen)
      continue;
    groups[group_count] = (slot_rows){slot, placed, 0};
    for (int64_t r = row; r < rows; ++r)
      if (slot_of_row(bound, r) == slot)
        order[placed++] = r;
    groups[group_count].count = placed - groups[group_count].first;
    ++group_count;
  }
  lora_job job = {.bound = bound,
                  .x = x,
                  .out = po,
                  .out_stride = out->strides[0],
                  .out_column_stride = out->strides[1],
                  .in = in,
                  .n = n,
                  .rank = desc->rank,
                  .offset = tfm_lora_target_offset(bound->bank, target),
                  .order = order,
                  .groups = groups,
                  .group_count = group_count,
                  .split_columns = group_count == 1};
  /* At least 64 columns a chunk: narrower ones repay no thread. */
  int64_t threads = tfm_thread_count(), wide = (n + 63) / 64;
  job.chunks = threads < wide ? threads : wide;
  if (group_count > 0)
    tfm_parallel_for(job.split_columns ? job.chunks : group_count, 1,
                     update_items, &job);
  free(order);
  free(groups);
  if (job.failed)
    tfm_buffer_fail_call(); /* out of memory: the call fails */
}
