/*===- widen_rows_i8.h - an int8 KV cache's rows widened to f32 -*- C -*-===//
 *
 * The attention kernels' reading of an int8 cache (--kv-dtype=int8): each
 * row is head_dim codes and then an f32 scale (tfm.quantize_rows' layout).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_WIDEN_ROWS_I8_H
#define TFM_RUNTIME_WIDEN_ROWS_I8_H

#include "runtime/runtime_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Rows [first, first + count) of KV head h of int8 rows, each row's n
 * values (codes · the row's scale) widened into out, np floats a row,
 * zero-padded (np >= n). A call per tile of rows: the rows' own stride
 * (m->strides[2]) may be anything, unit strides take the vector path. */
void tfm_widen_rows_i8(const tfm_memref3d_i8 *m, int64_t first, int64_t count,
                       int64_t h, int64_t n, int64_t np, float *out);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_WIDEN_ROWS_I8_H */
