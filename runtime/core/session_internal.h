/*===- session_internal.h - a session's fields, for its files ---*- C -*-===*
 *
 * session.c runs a session's calls; session_file.c saves, loads and copies
 * what it holds.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CORE_SESSION_INTERNAL_H
#define TFM_RUNTIME_CORE_SESSION_INTERNAL_H

#include "runtime/core/ring_keep.h"
#include "tfm/tfm_model_abi.h"
#include "tfm/tfm_runtime.h"

struct tfm_session {
  tfm_model *model;
  char *cache; /* NULL without a KV cache */
  /* The cache's elements (f32, or an int8 cache's bytes: the generated
   * code reads the pointer as its own element type). */
  tfm_memref5d_f32 cache_descriptor;
  int64_t element_bytes;
  int64_t cache_capacity, cache_used; /* slots */
  int64_t window;                     /* > 0: slide the cache when full */
  /* The windowed layers' rings where their keys differ from the cache's
   * (NULL otherwise): [rings, 2, window, kv_heads, head_dim] of the
   * cache's element type, position p at row p mod the layer's window. */
  char *rings;
  tfm_memref5d_f32 rings_descriptor;
  /* The rings' rows the last @verify overwrote, put back when its drafts
   * are dropped (ring_keep.h). */
  tfm_ring_geometry ring_geometry;
  tfm_ring_keep ring_keep;
  /* The recurrent layers' states (NULL without them), f32 [elements]. */
  char *state;
  tfm_memref1d state_descriptor;
  /* The states before the last @verify (NULL until one): a truncation
   * into its positions puts them back and the positions it keeps are run
   * again from them (stale_from), instead of the whole sequence. */
  char *state_keep;
  int64_t state_kept_at, state_kept_count; /* its positions; count 0: none */
  /* The cache and states no longer match the tokens: a failed call may
   * have advanced some layers' states and not others, and a truncation
   * cannot take a state back. The next prefill then recomputes them from
   * the tokens (a retried chunk of KV rows is simply written again), as
   * are rings that a truncation left holding later positions' rows.
   * Positions before `stale_from` are still right: the recomputation
   * starts there (0 but after a truncation into a @verify's positions). */
  int stale;
  int64_t stale_from;
  int32_t *tokens;          /* every token so far */
  int64_t length, capacity; /* positions */
  /* [scratch_rows, vocab] logits, forward fallback only: grown as the
   * history does (a 262144-position context of a 248320-token vocabulary
   * could not be had up front). */
  float *scratch;
  int64_t scratch_rows;
  /* The LoRA adapter its calls run with (tfm_session_set_lora; 0: none)
   * and its slot in the model's bank, held while set (lora_bank.h). */
  int32_t lora_adapter, lora_slot;
  /* A vision-language model's image rows (session_images.c): f32
   * [image_rows_stored, image_width], the first image_rows_used of them
   * taken by positions (image_row[p]: its row, -1 for a token), the rest
   * waiting for the next placeholders. NULL until an image is added. */
  float *image_rows;
  int32_t *image_row;
  int64_t image_rows_stored, image_rows_used, image_rows_capacity;
  int64_t image_width;
};

/* Before a truncation to `length`: where the last call was a @verify
 * whose states were kept and `length` is within its positions, the
 * states go back to them. Returns the positions the states are right for
 * (`length` without states; 0 where they could not go back): the next
 * call runs the positions after them again. */
int64_t tfm_session_go_back_in_states(tfm_session *s, int64_t length);

/* Image rows (session_images.c). The new positions [length, length + n),
 * their tokens already in s->tokens: each placeholder takes the next row
 * waiting, while any wait. */
void tfm_session_take_image_rows(tfm_session *s, int64_t n);
/* Rows added and not yet taken by a placeholder. */
int64_t tfm_session_pending_image_rows(const tfm_session *s);
/* The run of positions from `position` (at most `most`) that one call
 * runs: consecutive rows (*rows their first) or tokens (*rows NULL). */
int64_t tfm_session_run_at(const tfm_session *s, int64_t position, int64_t most,
                           const float **rows);
/* After a truncation to `length`: the rows of the positions kept. */
void tfm_session_keep_image_rows(tfm_session *s, int64_t length);
/* tfm_session_copy's part: `to` holds `from`'s rows (`from->length` of
 * its positions copied). */
tfm_status_code tfm_session_copy_image_rows(tfm_session *to,
                                            const tfm_session *from,
                                            tfm_status *status);
/* Whether the session holds rows (taken or waiting). */
int tfm_session_holds_image_rows(const tfm_session *s);

#endif /* TFM_RUNTIME_CORE_SESSION_INTERNAL_H */
