/*===- ring_keep.h - ring rows a speculative step overwrites ----*- C -*-===*
 *
 * A windowed layer keeps a ring of its window's last positions (position
 * p at row p mod ring). A verify call of drafts at positions [p, p + n)
 * overwrites the rows of positions p - ring .. p + n - 1 - ring, which
 * the positions before p still read. When the drafts are rejected, a
 * truncation must put those rows back: the rows are kept before the call
 * (llama.cpp keeps such copies of its SWA caches) and copied back for the
 * positions dropped. Only where every ring has the same rows (the rings'
 * cache window, uniformRing in passes/) and the call's n fits in them;
 * otherwise the caller recomputes (a session's stale mark).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CORE_RING_KEEP_H
#define TFM_RUNTIME_CORE_RING_KEEP_H

#include "tfm/tfm_model_abi.h"
#include "tfm/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

/* One sequence's rings: [planes, rows, ...] after the first dimensions of
 * a rings cache ([rings, 2] of K and V) are flattened into planes. */
typedef struct {
  int64_t planes;
  int64_t ring;       /* rows a ring, as every ring has them; 0: unlike */
  size_t plane_bytes; /* from one plane's first row to the next's */
  size_t row_bytes;
} tfm_ring_geometry;

/* The geometry of a rings cache `desc` (its last five dimensions: one
 * sequence's; its window the rows of every ring, 0 where they differ). */
tfm_ring_geometry tfm_ring_geometry_of(const tfm_cache_desc *desc);

/* Rows of positions [first, first + count) kept from a sequence's rings,
 * in model state memory (GPU memory for a GPU model). */
typedef struct {
  char *rows;       /* [planes, capacity, row_bytes] */
  int64_t capacity; /* rows a plane room was made for */
  int64_t first, count;
} tfm_ring_keep;

/* Whether a call of `n` positions can be kept: rings alike and n within
 * one ring (a longer call overwrites its own kept rows). */
int tfm_ring_keep_fits(const tfm_ring_geometry *g, int64_t n);
/* Keeps the rows that positions [first, first + n) are about to overwrite
 * in `rings` (one sequence's). 0 when memory ran out or the GPU failed
 * (nothing kept: keep->count is 0). */
int tfm_ring_keep_take(const tfm_model *model, const tfm_ring_geometry *g,
                       tfm_ring_keep *keep, char *rings, int64_t first,
                       int64_t n);
/* Whether a truncation to `length` from `held` positions can be undone
 * from what is kept: the kept call was the last and `length` is within
 * it. */
int tfm_ring_keep_covers(const tfm_ring_keep *keep, int64_t length,
                         int64_t held);
/* Puts back the rows of positions [length, held) (covered), and keeps
 * only those before `length`. 0 when the GPU failed. */
int tfm_ring_keep_restore(const tfm_model *model, const tfm_ring_geometry *g,
                          tfm_ring_keep *keep, char *rings, int64_t length,
                          int64_t held);
void tfm_ring_keep_free(const tfm_model *model, tfm_ring_keep *keep);

#endif /* TFM_RUNTIME_CORE_RING_KEEP_H */
