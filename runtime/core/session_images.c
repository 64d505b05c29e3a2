/*===- session_images.c - a session's image rows ------------------------===//
 *
 * A vision-language model's prompt holds placeholder tokens
 * (tfm_model_desc.image_token) that stand for an image's rows
 * (@encode_image's). tfm_session_add_image gives the session rows for the
 * next placeholders it takes; each position then holds either a token or
 * a row, which the session keeps, so that whatever it runs again (a
 * refreshed state, another adapter) runs the same rows, and
 * @prefill_embeddings runs the rows where the tokens would be.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/image_rows.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/session_internal.h"
#include "runtime/core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The width of a row: @prefill_embeddings' input is [n, hidden]. */
static int64_t row_width(const tfm_model *model) {
  const tfm_entry_point *entry =
      tfm_model_entry_point(model, "prefill_embeddings");
  return entry && entry->num_inputs > 0 ? entry->inputs[0].shape[1] : 0;
}

/* Appends `id` to `out` (capacity ids) at *at. */
static void put(int32_t *out, int64_t capacity, int64_t *at, int32_t id) {
  if (*at < capacity)
    out[*at] = id;
  ++*at;
}

/* The ids of `text` by the model's tokenizer (no BOS) into `ids`
 * (`capacity` of them); how many, or -1 with `status` set. */
static int64_t encode(const tfm_tokenizer *tokenizer, const char *text,
                      int32_t *ids, int64_t capacity, tfm_status *status) {
  int64_t count = 0;
  if (tfm_tokenizer_encode(tokenizer, text, -1, ids, capacity, &count,
                           status) != TFM_OK)
    return -1;
  if (count > capacity) {
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "the tokenizer writes '%s' as %lld tokens", text,
             (long long)count);
    return -1;
  }
  return count;
}

/* Idefics3's layout (tfm_image_prompt_ids' comment): Idefics3Processor's
 * _prompt_split_image and _prompt_single_image, whose text between tokens
 * of its own ("\n", "\n\n") tokenizes alone, as it does in the prompt. */
static tfm_status_code marked_tiles(tfm_model *model, const int64_t grid[2],
                                    int64_t rows, int32_t *out,
                                    int64_t capacity, int64_t *count,
                                    tfm_status *status) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int64_t tiles = grid[0] * grid[1] + 1;
  if (grid[0] < 0 || grid[1] < 0 || (grid[0] == 0) != (grid[1] == 0) ||
      grid[0] > 64 || grid[1] > 64 || rows <= 0 || rows % tiles)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_prompt_ids: %lld rows are not %lld tiles' "
                    "(a grid of %lld x %lld and the whole image)",
                    (long long)rows, (long long)tiles, (long long)grid[0],
                    (long long)grid[1]);
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, status);
  if (!tokenizer)
    return status ? status->code : TFM_ERROR_TOKENIZER;
  int32_t row_end[8], grid_end[8], tile[8];
  int64_t row_end_n = encode(tokenizer, "\n", row_end, 8, status);
  int64_t grid_end_n =
      row_end_n < 0 ? -1 : encode(tokenizer, "\n\n", grid_end, 8, status);
  if (grid_end_n < 0)
    return status ? status->code : TFM_ERROR_TOKENIZER;
  int32_t around = desc->image_tile_tokens[0];
  int32_t whole = desc->image_tile_tokens[1];
  int64_t per_tile = rows / tiles, at = 0;
  for (int64_t r = 0; r < grid[0]; ++r) {
    for (int64_t c = 0; c < grid[1]; ++c) {
      char name[64]; /* the grid is at most 64 x 64 */
      snprintf(name, sizeof name, "<row_%d_col_%d>", (int)r + 1, (int)c + 1);
      int64_t n = encode(tokenizer, name, tile, 8, status);
      if (n < 0)
        return status ? status->code : TFM_ERROR_TOKENIZER;
      if (n != 1)
        return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                        "model '%s': its tokenizer has no %s token for an "
                        "image cut into %lld x %lld tiles",
                        desc->name, name, (long long)grid[0],
                        (long long)grid[1]);
      put(out, capacity, &at, around);
      put(out, capacity, &at, tile[0]);
      for (int64_t i = 0; i < per_tile; ++i)
        put(out, capacity, &at, desc->image_token);
    }
    /* The last row's "\n" and the whole image's make "\n\n". */
    int last = r + 1 == grid[0];
    for (int64_t i = 0; i < (last ? grid_end_n : row_end_n); ++i)
      put(out, capacity, &at, last ? grid_end[i] : row_end[i]);
  }
  put(out, capacity, &at, around);
  put(out, capacity, &at, whole);
  for (int64_t i = 0; i < per_tile; ++i)
    put(out, capacity, &at, desc->image_token);
  put(out, capacity, &at, around);
  *count = at;
  return tfm_ok(status);
}

tfm_status_code tfm_image_prompt_ids(tfm_model *model, const int64_t grid[2],
                                     int64_t rows, int32_t *ids,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status) {
  if (!model || !grid || (capacity && !ids) || !count || capacity < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_prompt_ids: NULL or negative argument");
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  if (desc->image_tiles_marked)
    return marked_tiles(model, grid, rows, ids, capacity, count, status);
  if (rows <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_prompt_ids: an image of %lld rows",
                    (long long)rows);
  for (int64_t i = 0; i < rows && i < capacity; ++i)
    ids[i] = desc->image_token;
  *count = rows;
  return tfm_ok(status);
}

tfm_status_code tfm_splice_image_ids(int32_t placeholder, const int32_t *ids,
                                     int64_t n, const int32_t *const *image_ids,
                                     const int64_t *image_lengths,
                                     int64_t images, int32_t *out,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status) {
  if ((n && !ids) || (images && (!image_ids || !image_lengths)) ||
      (capacity && !out) || !count || n < 0 || images < 0 || capacity < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_splice_image_ids: NULL or negative argument");
  int64_t given = 0, total = 0;
  for (int64_t i = 0; i < n; ++i)
    given += placeholder >= 0 && ids[i] == placeholder;
  for (int64_t i = 0; i < images; ++i) {
    int64_t rows = 0;
    for (int64_t k = 0; k < image_lengths[i]; ++k)
      rows += image_ids[i][k] == placeholder;
    if (rows <= 0)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "tfm_splice_image_ids: image %lld has no rows",
                      (long long)i);
    total += rows;
  }
  if (given && !images)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the prompt holds %lld image placeholders (token %d) "
                    "and no image is given",
                    (long long)given, placeholder);
  int splice = given != total;
  if (splice && given != images)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the prompt holds %lld image placeholders (token %d) for "
                    "%lld image%s of %lld rows: give one an image, or one a "
                    "row",
                    (long long)given, placeholder, (long long)images,
                    images == 1 ? "" : "s", (long long)total);
  int64_t at = 0, image = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!splice || ids[i] != placeholder) {
      put(out, capacity, &at, ids[i]);
      continue;
    }
    for (int64_t k = 0; k < image_lengths[image]; ++k)
      put(out, capacity, &at, image_ids[image][k]);
    ++image;
  }
  *count = at;
  return tfm_ok(status);
}

tfm_status_code tfm_session_add_image(tfm_session *s, const float *rows,
                                      int64_t count, tfm_status *status) {
  if (!s || !rows)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_add_image: NULL %s", s ? "rows" : "session");
  const tfm_model_desc *desc = tfm_model_get_desc(s->model);
  if (!tfm_model_takes_image_rows(s->model))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' (%s) takes no images: it is not a "
                    "vision-language model compiled with its image side",
                    desc->name, desc->family ? desc->family : "?");
  if (count <= 0 || count > s->capacity)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_add_image: %lld rows (1 to the session's "
                    "%lld positions)",
                    (long long)count, (long long)s->capacity);
  if (!s->image_row) {
    s->image_row = malloc((size_t)s->capacity * sizeof *s->image_row);
    if (!s->image_row)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    s->image_width = row_width(s->model);
  }
  int64_t needed = s->image_rows_stored + count;
  if (needed > s->image_rows_capacity) {
    int64_t grown = needed > 2 * s->image_rows_capacity
                        ? needed
                        : 2 * s->image_rows_capacity;
    float *more = realloc(
        s->image_rows, (size_t)grown * (size_t)s->image_width * sizeof *more);
    if (!more)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                      "out of memory for %lld image rows", (long long)grown);
    s->image_rows = more;
    s->image_rows_capacity = grown;
  }
  memcpy(s->image_rows + s->image_rows_stored * s->image_width, rows,
         (size_t)count * (size_t)s->image_width * sizeof *rows);
  s->image_rows_stored = needed;
  return tfm_ok(status);
}

int64_t tfm_session_pending_image_rows(const tfm_session *s) {
  return s ? s->image_rows_stored - s->image_rows_used : 0;
}

void tfm_session_take_image_rows(tfm_session *s, int64_t n) {
  if (!s->image_row)
    return;
  int32_t placeholder = tfm_model_get_desc(s->model)->image_token;
  for (int64_t p = s->length; p < s->length + n; ++p)
    s->image_row[p] =
        s->tokens[p] == placeholder && s->image_rows_used < s->image_rows_stored
            ? (int32_t)s->image_rows_used++
            : -1;
}

int64_t tfm_session_run_at(const tfm_session *s, int64_t position, int64_t most,
                           const float **rows) {
  /* image_row says every position the session may hold. */
  int image = 0;
  int64_t n =
      tfm_image_row_run(s->image_row, position + most, position, most, &image);
  *rows = image
              ? s->image_rows + (int64_t)s->image_row[position] * s->image_width
              : NULL;
  return n;
}

void tfm_session_keep_image_rows(tfm_session *s, int64_t length) {
  if (!s->image_row)
    return;
  /* Rows were taken in position order: the kept positions' are the first
   * ones. Rows not yet taken go too: they were meant for what follows. */
  int64_t used = 0;
  for (int64_t p = length - 1; p >= 0 && used == 0; --p)
    if (s->image_row[p] >= 0)
      used = s->image_row[p] + 1;
  s->image_rows_used = s->image_rows_stored = used;
}

tfm_status_code tfm_session_copy_image_rows(tfm_session *to,
                                            const tfm_session *from,
                                            tfm_status *status) {
  to->image_rows_used = to->image_rows_stored = 0;
  if (!from->image_row) {
    /* Every position `to` now holds is a token's. */
    for (int64_t p = 0; to->image_row && p < from->length; ++p)
      to->image_row[p] = -1;
    return TFM_OK;
  }
  if (from->image_rows_stored > 0) {
    tfm_status_code code = tfm_session_add_image(
        to, from->image_rows, from->image_rows_stored, status);
    if (code != TFM_OK)
      return code;
  } else if (!to->image_row) {
    to->image_row = malloc((size_t)to->capacity * sizeof *to->image_row);
    if (!to->image_row)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    to->image_width = from->image_width;
  }
  memcpy(to->image_row, from->image_row,
         (size_t)from->length * sizeof *to->image_row);
  to->image_rows_used = from->image_rows_used;
  return TFM_OK;
}

int tfm_session_holds_image_rows(const tfm_session *s) {
  return s && s->image_rows_stored > 0;
}
