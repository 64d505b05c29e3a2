/*===- image_rows.h - a prompt's runs of image rows and tokens --*- C -*-===*
 *
 * A vision-language model's session (session_images.c) and the engine's
 * requests (runtime/engine/engine_images.c) keep, for each position of a
 * prompt, the image row it takes (-1: its token's embedding). A call runs
 * either a run of consecutive rows (@prefill_embeddings) or a run of
 * tokens (@prefill); this finds where one ends.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CORE_IMAGE_ROWS_H
#define TFM_RUNTIME_CORE_IMAGE_ROWS_H

#include <stdint.h>

/* The run from `position`, at most `most` positions: consecutive rows
 * (*rows set to 1) or tokens (0). `row` says positions [0, span) (NULL:
 * none); the positions past them are tokens. */
static inline int64_t tfm_image_row_run(const int32_t *row, int64_t span,
                                        int64_t position, int64_t most,
                                        int *rows) {
  *rows = 0;
  if (!row || position >= span)
    return most;
  int64_t end = position + most < span ? position + most : span;
  int64_t n = 1;
  if (row[position] >= 0) {
    while (position + n < end && row[position + n] == row[position] + n)
      ++n;
    *rows = 1;
    return n;
  }
  while (position + n < end && row[position + n] < 0)
    ++n;
  /* Tokens to the end of what `row` says go on past it. */
  return position + n == span ? most : n;
}

#endif /* TFM_RUNTIME_CORE_IMAGE_ROWS_H */
