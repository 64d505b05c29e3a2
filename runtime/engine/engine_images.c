/*===- engine_images.c - a request's image rows ---------------------------===//
 *
 * A vision-language model's request carries the rows of its prompt's
 * placeholders (tfm_engine_request.image_rows: @encode_image's, one row a
 * placeholder, in order). A step runs a prompt's chunks of text through
 * @prefill_batch and its chunks of rows through @prefill_batch_embeddings
 * (engine_step.c). Its positions are shared with other requests as any
 * prompt's, the prefix table telling apart the placeholders of different
 * images by a hash of each row (tfm_kv_prefix.row_keys): a conversation
 * about the same image computes it once.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/image_rows.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"
#include "runtime/engine/engine_internal.h"

#include <stdlib.h>
#include <string.h>

/* A 64-bit hash of a row's floats, never 0 (0 keys a token). */
static uint64_t hash_row(const float *row, int64_t width) {
  uint64_t h = 0x243f6a8885a308d3ull ^ (uint64_t)width;
  for (int64_t i = 0; i < width; ++i) {
    uint32_t bits;
    memcpy(&bits, &row[i], sizeof bits);
    h = (h ^ bits) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h ? h : 1;
}

int64_t tfm_engine_image_width(const tfm_model *model) {
  const tfm_entry_point *entry =
      tfm_model_entry_point(model, "prefill_batch_embeddings");
  return entry && entry->num_inputs > 0 ? entry->inputs[0].shape[1] : 0;
}

tfm_status_code tfm_engine_take_images(tfm_engine *e, request *r,
                                       const tfm_engine_request *q,
                                       tfm_status *status) {
  r->first_image = r->image_span = q->prompt_count;
  if (q->image_row_count == 0 && !q->image_rows)
    return TFM_OK;
  if (q->image_row_count < 0 || (q->image_row_count && !q->image_rows))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_submit: %lld image rows at %p",
                    (long long)q->image_row_count, (const void *)q->image_rows);
  if (!e->image_width)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' takes no images: it is not a vision-language "
                    "model compiled with its image side",
                    e->desc->name);
  int32_t placeholder = e->desc->image_token;
  int64_t given = 0;
  for (int64_t i = 0; i < q->prompt_count; ++i)
    given += q->prompt[i] == placeholder;
  if (given != q->image_row_count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the prompt holds %lld image placeholders (token %d) for "
                    "%lld image rows: give one a row",
                    (long long)given, placeholder,
                    (long long)q->image_row_count);
  size_t bytes =
      (size_t)q->image_row_count * (size_t)e->image_width * sizeof(float);
  r->image_rows = malloc(bytes ? bytes : 1);
  r->image_row = malloc((size_t)q->prompt_count * sizeof *r->image_row);
  r->row_keys = malloc((size_t)q->prompt_count * sizeof *r->row_keys);
  if (!r->image_rows || !r->image_row || !r->row_keys)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for %lld image rows",
                    (long long)q->image_row_count);
  memcpy(r->image_rows, q->image_rows, bytes);
  int32_t next = 0;
  for (int64_t i = 0; i < q->prompt_count; ++i) {
    int32_t row = r->image_row[i] = q->prompt[i] == placeholder ? next++ : -1;
    r->row_keys[i] =
        row < 0 ? 0
                : hash_row(r->image_rows + (size_t)row * (size_t)e->image_width,
                           e->image_width);
    if (row >= 0 && r->first_image == q->prompt_count)
      r->first_image = i;
  }
  return TFM_OK;
}

int64_t tfm_engine_run_at(const request *r, int64_t position, int64_t most,
                          int *rows) {
  /* The prompt's positions only: generated tokens (which a preempted
   * request computes again) are never an image's. */
  int64_t span = r->first_image < r->image_span ? r->image_span : 0;
  return tfm_image_row_run(r->image_row, span, position, most, rows);
}

tfm_kv_prefix tfm_engine_prefix(const request *r) {
  return (tfm_kv_prefix){r->tokens, r->row_keys,
                         r->row_keys ? r->image_span : 0, r->lora};
}

void tfm_engine_copy_step_rows(const tfm_engine *e, const request *r,
                               float *into) {
  const float *from = r->image_rows + (size_t)r->image_row[r->computed] *
                                          (size_t)e->image_width;
  memcpy(into, from,
         (size_t)r->step_tokens * (size_t)e->image_width * sizeof *into);
}
