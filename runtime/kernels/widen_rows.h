/*===- widen_rows.h - a narrow KV cache's rows widened to f32 ---*- C -*-===//
 *
 * The attention kernels' reading of a narrow cache (--kv-dtype=int8, bf16
 * or f16): rows of head_dim values, as tfm.quantize_rows stores them.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_WIDEN_ROWS_H
#define TFM_RUNTIME_KERNELS_WIDEN_ROWS_H

#include "tfm/runtime_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a cache stores a row of n values. */
typedef enum {
  TFM_ROWS_F32 = 0,  /* as f32: read in place, never widened */
  TFM_ROWS_I8 = 1,   /* n int8 codes, then the row's f32 scale (n + 4 bytes) */
  TFM_ROWS_BF16 = 2, /* n bf16 values */
  TFM_ROWS_F16 = 3   /* n f16 values */
} tfm_row_storage;

/* Row i of KV head h of stored rows (`rows`: any 3-D memref descriptor,
 * all of which have one layout; elements of `element_bytes`). */
static inline const void *tfm_stored_row(const void *rows,
                                         int64_t element_bytes, int64_t i,
                                         int64_t h) {
  const tfm_memref3d_i8 *m = (const tfm_memref3d_i8 *)rows;
  return (const char *)m->aligned +
         (m->offset + i * m->strides[0] + h * m->strides[1]) * element_bytes;
}

/* Rows [first, first + count) of KV head h of stored rows (`rows`: a
 * tfm_memref3d_i8 for TFM_ROWS_I8, a tfm_memref3d_u16 for bf16 and f16),
 * each row's n values widened into out, np floats a row, zero-padded (np >=
 * n). A call per tile of rows: the rows' own stride (strides[2]) may be
 * anything, unit strides take the vector path. */
void tfm_widen_rows(tfm_row_storage storage, const void *rows, int64_t first,
                    int64_t count, int64_t h, int64_t n, int64_t np,
                    float *out);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_KERNELS_WIDEN_ROWS_H */
