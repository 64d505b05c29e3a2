/*===- kernels_lora.c - run-time LoRA adapters' updates (tfm.lora) -------===*
 *
 * out = projected + B·(A·x) for each row, A [rank, in] and B [out, rank]
 * the row's adapter's matrices for this target (runtime/core/lora_bank.h;
 * a lower rank is padded with zeros, B carries the scale). Consecutive
 * rows of one adapter (a sequence's prefill chunk) are two small GEMMs:
 * rank·(in + out) multiply-adds a row, 1-3% of the projection's at rank
 * 16, so OpenBLAS on the calling thread does them.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/lora_bank.h"
#include "tfm/runtime_kernels.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

/* The slot row `row` runs with (-1: none). */
static int32_t slot_of_row(const tfm_lora_rows *rows, int64_t row) {
  if (!rows)
    return -1;
  if (rows->count == 1)
    return rows->slots[0];
  return row < rows->count ? rows->slots[row] : -1;
}

/* Rows [first, first + m) of one slot's target whose A and B are given,
 * with unit column strides: two GEMMs through an [m, rank] scratch. */
static void update_rows(const float *x, int64_t ldx, float *out, int64_t ldo,
                        int64_t m, int64_t in, int64_t n, int64_t rank,
                        const float *a, const float *b, float *h) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m,
              (blasint)rank, (blasint)in, 1.0f, x, (blasint)ldx, a, (blasint)in,
              0.0f, h, (blasint)rank);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)n,
              (blasint)rank, 1.0f, h, (blasint)rank, b, (blasint)rank, 1.0f,
              out, (blasint)ldo);
}

/* The same with any strides (not produced today: tfm.lora's operands are
 * collapsed row-major tensors), in plain loops. */
static void update_rows_strided(const tfm_memref2d_f32 *x, int64_t first,
                                float *out, const int64_t *out_strides,
                                int64_t m, int64_t n, int64_t rank,
                                const float *a, const float *b, float *h) {
  const float *px = x->aligned + x->offset;
  int64_t in = x->sizes[1];
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < rank; ++r) {
      float sum = 0;
      for (int64_t k = 0; k < in; ++k)
        sum +=
            a[r * in + k] * px[(first + i) * x->strides[0] + k * x->strides[1]];
      h[r] = sum;
    }
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t r = 0; r < rank; ++r)
        sum += b[j * rank + r] * h[r];
      out[(first + i) * out_strides[0] + j * out_strides[1]] += sum;
    }
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
  if (!bound || !bound->bank)
    return;
  const tfm_lora_desc *desc = tfm_lora_bank_desc(bound->bank);
  if (target < 0 || target >= desc->num_targets ||
      desc->targets[target].in_features != in ||
      desc->targets[target].out_features != n)
    return; /* a call of another model's code: not this bank's target */
  int64_t rank = desc->rank;
  int64_t offset = tfm_lora_target_offset(bound->bank, target);
  int unit = x->strides[1] == 1 && out->strides[1] == 1;
  float *h = NULL;
  for (int64_t first = 0; first < rows;) {
    int32_t slot = slot_of_row(bound, first);
    int64_t m = 1;
    while (first + m < rows && slot_of_row(bound, first + m) == slot)
      ++m;
    if (slot >= 0) {
      if (!h)
        h = malloc((size_t)(unit ? rows : 1) * (size_t)rank * sizeof *h);
      if (!h) {
        tfm_buffer_fail_call(); /* out of memory: the call fails */
        return;
      }
      const float *a = tfm_lora_slot_data(bound->bank, slot) + offset;
      const float *b = a + rank * in;
      if (unit)
        update_rows(x->aligned + x->offset + first * x->strides[0],
                    x->strides[0], po + first * out->strides[0],
                    out->strides[0], m, in, n, rank, a, b, h);
      else
        update_rows_strided(x, first, po, out->strides, m, n, rank, a, b, h);
    }
    first += m;
  }
  free(h);
}
