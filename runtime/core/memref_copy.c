/*===- memref_copy.c - memref.copy between strided buffers --------------===//
 *
 * MLIR lowers memref.copy between buffers that are not both contiguous (e.g.
 * new keys into a plane of the KV cache) to a call of `memrefCopy`, which
 * upstream's libmlir_c_runner_utils provides. Compiled models link this
 * one instead, so that they depend on libc alone.
 *
 *===----------------------------------------------------------------------===*/

#include "tfm/runtime_kernels.h"

#include <stdint.h>
#include <string.h>

/* The ranked descriptor: allocated, aligned, offset, sizes[rank],
 * strides[rank]. */
typedef struct {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t shape_and_strides[];
} tfm_ranked_memref;

/* Copies the sub-block at dimension `dim` (element strides, `elem` bytes). */
static void copy_dim(int64_t rank, int64_t dim, int64_t elem,
                     const int64_t *sizes, const int64_t *src_strides,
                     const int64_t *dst_strides, const char *src, char *dst) {
  if (dim == rank) {
    memcpy(dst, src, (size_t)elem);
    return;
  }
  /* The innermost dimension, when unit-stride on both sides, in one call. */
  if (dim == rank - 1 && src_strides[dim] == 1 && dst_strides[dim] == 1) {
    memcpy(dst, src, (size_t)(sizes[dim] * elem));
    return;
  }
  for (int64_t i = 0; i < sizes[dim]; ++i)
    copy_dim(rank, dim + 1, elem, sizes, src_strides, dst_strides,
             src + i * src_strides[dim] * elem,
             dst + i * dst_strides[dim] * elem);
}

TFM_EXPORT void memrefCopy(int64_t elem_size, tfm_unranked_memref *src,
                tfm_unranked_memref *dst) {
  const tfm_ranked_memref *s = src->descriptor;
  const tfm_ranked_memref *d = dst->descriptor;
  int64_t rank = src->rank;
  const int64_t *sizes = s->shape_and_strides;
  copy_dim(rank, 0, elem_size, sizes, s->shape_and_strides + rank,
           d->shape_and_strides + rank, s->aligned + s->offset * elem_size,
           d->aligned + d->offset * elem_size);
}
