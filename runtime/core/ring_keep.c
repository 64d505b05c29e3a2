/*===- ring_keep.c - ring rows a speculative step overwrites ------------===//
 *
 * See ring_keep.h.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/ring_keep.h"

#include "runtime/core/model_internal.h"

tfm_ring_geometry tfm_ring_geometry_of(const tfm_cache_desc *desc) {
  /* The last five dimensions: [rings, 2, rows, kv_heads, head_dim]. */
  const int64_t *shape = desc->shape + desc->rank - 5;
  size_t row = (size_t)tfm_dtype_bytes(desc->dtype) * (size_t)shape[3] *
               (size_t)shape[4];
  tfm_ring_geometry g = {shape[0] * shape[1],
                         desc->window == shape[2] ? desc->window : 0,
                         row * (size_t)shape[2], row};
  return g;
}

int tfm_ring_keep_fits(const tfm_ring_geometry *g, int64_t n) {
  return g->ring > 0 && n > 0 && n <= g->ring;
}

/* Copies positions [first, first + count)'s rows between the rings and
 * `kept` (at kept row `at` on), out of the rings or `back` into them: at
 * most two runs of rows a plane, the ring wrapping around. */
static int copy_rows(const tfm_model *model, const tfm_ring_geometry *g,
                     const tfm_ring_keep *keep, char *rings, int64_t first,
                     int64_t count, int64_t at, int back) {
  int ok = 1;
  for (int64_t plane = 0; plane < g->planes; ++plane) {
    char *ring = rings + (size_t)plane * g->plane_bytes;
    char *kept =
        keep->rows +
        ((size_t)plane * (size_t)keep->capacity + (size_t)at) * g->row_bytes;
    for (int64_t done = 0; done < count;) {
      int64_t row = (first + done) % g->ring;
      int64_t run = g->ring - row < count - done ? g->ring - row : count - done;
      char *in_ring = ring + (size_t)row * g->row_bytes;
      char *in_kept = kept + (size_t)done * g->row_bytes;
      size_t bytes = (size_t)run * g->row_bytes;
      ok &= back ? tfm_model_state_move(model, in_ring, in_kept, bytes)
                 : tfm_model_state_move(model, in_kept, in_ring, bytes);
      done += run;
    }
  }
  return ok;
}

int tfm_ring_keep_take(const tfm_model *model, const tfm_ring_geometry *g,
                       tfm_ring_keep *keep, char *rings, int64_t first,
                       int64_t n) {
  keep->count = 0;
  if (!tfm_ring_keep_fits(g, n))
    return 0;
  if (n > keep->capacity) {
    /* Room for a whole ring: a later, longer call needs no more. */
    tfm_model_state_free(model, keep->rows);
    keep->capacity = 0;
    keep->rows = tfm_model_state_alloc(
        model, (size_t)g->planes * (size_t)g->ring * g->row_bytes);
    if (!keep->rows)
      return 0;
    keep->capacity = g->ring;
  }
  if (!copy_rows(model, g, keep, rings, first, n, 0, 0))
    return 0;
  keep->first = first;
  keep->count = n;
  return 1;
}

int tfm_ring_keep_covers(const tfm_ring_keep *keep, int64_t length,
                         int64_t held) {
  return keep->count > 0 && held == keep->first + keep->count &&
         length >= keep->first && length <= held;
}

int tfm_ring_keep_restore(const tfm_model *model, const tfm_ring_geometry *g,
                          tfm_ring_keep *keep, char *rings, int64_t length,
                          int64_t held) {
  int ok = copy_rows(model, g, keep, rings, length, held - length,
                     length - keep->first, 1);
  keep->count = length - keep->first;
  return ok;
}

void tfm_ring_keep_free(const tfm_model *model, tfm_ring_keep *keep) {
  tfm_model_state_free(model, keep->rows);
  keep->rows = NULL;
  keep->capacity = keep->count = 0;
}
