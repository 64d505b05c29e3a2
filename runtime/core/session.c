/*===- session.c - KV-cache sessions: prefill and decode ----------------===//
 *
 * A session owns one KV cache [layers, 2, capacity, kv_heads, head_dim],
 * the windowed layers' rings beside it where their keys differ (Gemma 4),
 * a hybrid model's recurrent states, and the tokens it holds.
 * Prefill and decode call the model's generated @prefill/@decode, which
 * append to the cache and advance the states in place; a model compiled
 * without a cache falls back to @forward over the whole history.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/lora_bank.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/session_internal.h"
#include "runtime/core/status.h"

#include <stdlib.h>
#include <string.h>

/* A cache of `desc`'s 5-D shape and its descriptor. Zeroed so that no
 * stale data is ever read (positions past the session's length are masked
 * anyway); GPU memory for a GPU model. NULL when out of memory. */
static char *alloc_cache(tfm_model *model, const tfm_cache_desc *desc,
                         tfm_memref5d_f32 *d) {
  size_t count = 1;
  for (int i = 0; i < 5; ++i)
    count *= (size_t)desc->shape[i];
  char *cache =
      tfm_model_state_alloc(model, count * tfm_dtype_bytes(desc->dtype));
  d->allocated = d->aligned = (float *)(void *)cache;
  d->offset = 0;
  int64_t stride = 1;
  for (int i = 4; i >= 0; --i) {
    d->sizes[i] = desc->shape[i];
    d->strides[i] = stride;
    stride *= desc->shape[i];
  }
  return cache;
}

tfm_status_code tfm_session_new(tfm_model *model, tfm_session **out,
                                tfm_status *status) {
  if (!model || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_new: NULL %s", model ? "output" : "model");
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  tfm_session *s = calloc(1, sizeof *s);
  if (!s)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  s->model = model;
  const tfm_cache_desc *kv = tfm_model_kv_cache(model);
  if (kv) {
    s->cache_capacity = s->capacity = kv->shape[2];
    /* A window the cache can hold: positions are then bounded by the model
     * only, the cache keeping the last window - 1 of them. */
    if (kv->window > 0 && kv->window <= s->cache_capacity) {
      s->window = kv->window;
      s->capacity = desc->max_context;
    }
    s->element_bytes = tfm_dtype_bytes(kv->dtype);
    s->cache = alloc_cache(model, kv, &s->cache_descriptor);
    const tfm_cache_desc *rings = tfm_model_ring_cache(model);
    if (rings) {
      s->rings = alloc_cache(model, rings, &s->rings_descriptor);
      s->ring_geometry = tfm_ring_geometry_of(rings);
    }
  } else {
    s->capacity = desc->max_context;
  }
  const tfm_cache_desc *recurrent = tfm_model_recurrent_state(model);
  if (recurrent) {
    /* Read as zeros at position 0, so never cleared between sequences. */
    s->state = tfm_model_state_alloc(model, (size_t)recurrent->shape[0] *
                                                sizeof(float));
    s->state_descriptor =
        (tfm_memref1d){s->state, s->state, 0, {recurrent->shape[0]}, {1}};
  }
  s->tokens = malloc((size_t)s->capacity * sizeof *s->tokens);
  if ((kv && !s->cache) || (tfm_model_ring_cache(model) && !s->rings) ||
      (recurrent && !s->state) || !s->tokens) {
    tfm_session_free(s);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for a session of %lld positions",
                    (long long)desc->max_context);
  }
  *out = s;
  return tfm_ok(status);
}

void tfm_session_free(tfm_session *s) {
  if (!s)
    return;
  if (s->cache)
    tfm_model_state_free(s->model, s->cache);
  if (s->rings)
    tfm_model_state_free(s->model, s->rings);
  tfm_ring_keep_free(s->model, &s->ring_keep);
  if (s->state)
    tfm_model_state_free(s->model, s->state);
  tfm_model_state_free(s->model, s->state_keep);
  tfm_lora_release(tfm_model_lora_bank(s->model), s->lora_adapter);
  free(s->scratch);
  free(s->tokens);
  free(s->image_rows);
  free(s->image_row);
  free(s);
}

void tfm_session_reset(tfm_session *s) {
  if (s) {
    s->length = s->cache_used = 0;
    s->ring_keep.count = s->state_kept_count = 0;
    s->image_rows_stored = s->image_rows_used = 0;
    /* Every position a token's until rows are taken again (a loaded or
     * copied session sets its positions without taking them). */
    if (s->image_row)
      memset(s->image_row, 0xff, (size_t)s->capacity * sizeof *s->image_row);
    s->stale = 0; /* the next call starts at position 0 */
  }
}

int64_t tfm_session_length(const tfm_session *s) { return s ? s->length : 0; }
int64_t tfm_session_capacity(const tfm_session *s) {
  return s ? s->capacity : 0;
}
const int32_t *tfm_session_tokens(const tfm_session *s) {
  return s ? s->tokens : NULL;
}
tfm_model *tfm_session_model(const tfm_session *s) {
  return s ? s->model : NULL;
}

/* Keeps the last window - 1 cached positions, moved to the front of every
 * layer's K and V planes (a latent cache's one): the next query sees
 * exactly those and itself. */
static void slide_cache(tfm_session *s) {
  const tfm_memref5d_f32 *d = &s->cache_descriptor;
  int64_t keep = s->window - 1;
  if (keep > s->cache_used)
    keep = s->cache_used;
  int64_t row = d->strides[2] * s->element_bytes; /* bytes per position */
  for (int64_t plane = 0; plane < d->sizes[0] * d->sizes[1]; ++plane) {
    char *base = s->cache + plane * d->strides[1] * s->element_bytes;
    tfm_model_state_move(s->model, base, base + (s->cache_used - keep) * row,
                         (size_t)(keep * row));
  }
  s->cache_used = keep;
}

/* One call of `entry` on `n` positions at the session's length, which then
 * holds them: `input` is their tokens' descriptor (tfm_memref1d) or, for
 * @prefill_embeddings, their rows' (tfm_memref2d_f32); `rows` rows of
 * logits (the last position's, or with @verify every one's) to `logits`.
 * A failed call advances the length of nothing: its cache slots are
 * written again by the next attempt, its states recomputed. */
static tfm_status_code run_call(tfm_session *s, tfm_cached_entry entry,
                                void *input, int64_t n, int64_t rows,
                                float *logits, tfm_status *status) {
  tfm_memref2d_f32 result;
  memset(&result, 0, sizeof result);
  /* Every row runs with the session's adapter, if it has one. */
  tfm_lora_rows adapter = {tfm_model_lora_bank(s->model), &s->lora_slot, 1};
  const tfm_lora_rows *outer = tfm_lora_bind(s->lora_adapter ? &adapter : NULL);
  tfm_status_code code = tfm_run_prefill(
      s->model, entry, &result, input, s->length, s->cache_used,
      &s->cache_descriptor, s->rings ? &s->rings_descriptor : NULL,
      s->state ? &s->state_descriptor : NULL, status);
  tfm_lora_bind(outer);
  if (code != TFM_OK) {
    /* Some layers may have advanced their states, or written over ring
     * rows the positions before still read. */
    s->stale = s->state != NULL || s->rings != NULL;
    s->stale_from = 0;
    return code;
  }
  code = tfm_take_logits(tfm_model_get_desc(s->model), &result, rows, logits,
                         status);
  s->length += n;
  s->cache_used += n;
  return code;
}

/* One call of `entry` on tokens[0..n) at the session's length. */
static tfm_status_code run_tokens(tfm_session *s, tfm_cached_entry entry,
                                  const int32_t *tokens, int64_t n,
                                  int64_t rows, float *logits,
                                  tfm_status *status) {
  void *ids = (void *)(uintptr_t)tokens;
  tfm_memref1d input = {ids, ids, 0, {n}, {1}};
  return run_call(s, entry, &input, n, rows, logits, status);
}

/* Runs `tokens` (n of them, already in s->tokens at s->length) through
 * @prefill/@decode in chunks that fit the cache, and the positions that
 * hold an image's rows through @prefill_embeddings; a full cache of a
 * sliding-window model first drops what no later query can see. Without a
 * window the capacity check of tfm_prefill guarantees one chunk of each
 * run. `logits`: the last position's. */
static tfm_status_code run_chunks(tfm_session *s, const int32_t *tokens,
                                  int64_t n, float *logits,
                                  tfm_status *status) {
  tfm_status_code code = TFM_OK;
  for (int64_t done = 0; done < n && code == TFM_OK;) {
    if (s->cache_used == s->cache_capacity)
      slide_cache(s);
    int64_t chunk = n - done;
    if (chunk > s->cache_capacity - s->cache_used)
      chunk = s->cache_capacity - s->cache_used;
    const float *image = NULL;
    int64_t run = tfm_session_run_at(s, s->length, n - done, &image);
    if (image) {
      /* Rows that see each other both ways run an image to a call. */
      int64_t whole = tfm_model_image_rows_per_call(s->model);
      run = run < whole ? run : whole;
      if (chunk < run && whole < INT64_MAX)
        return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                        "an image's %lld rows attend to each other and must "
                        "run together, but the cache has room for %lld more "
                        "positions",
                        (long long)run, (long long)chunk);
    }
    chunk = run < chunk ? run : chunk;
    if (image) {
      float *rows = (float *)(uintptr_t)image;
      tfm_memref2d_f32 input = {
          rows, rows, 0, {chunk, s->image_width}, {s->image_width, 1}};
      code = run_call(s, TFM_ENTRY_PREFILL_EMBEDDINGS, &input, chunk, 1, logits,
                      status);
    } else {
      code = run_tokens(s, chunk == 1 ? TFM_ENTRY_DECODE : TFM_ENTRY_PREFILL,
                        tokens + done, chunk, 1, logits, status);
    }
    done += chunk;
  }
  return code;
}

/* Recurrent states a failed call left half advanced, or a truncation
 * could not keep: recomputes them (and the KV rows with them) from the
 * tokens held before going on, from stale_from on. `logits`: a row of
 * scratch. */
static tfm_status_code refresh(tfm_session *s, float *logits,
                               tfm_status *status) {
  if (!s->stale)
    return TFM_OK;
  int64_t known = s->length, from = s->stale_from;
  s->length = s->cache_used = from;
  tfm_status_code code = from < known ? run_chunks(s, s->tokens + from,
                                                   known - from, logits, status)
                                      : TFM_OK;
  if (code != TFM_OK) {
    /* The states went part of the way: all of it next time. */
    s->length = known;
    s->stale_from = 0;
    return code;
  }
  s->stale = 0;
  s->stale_from = 0;
  return TFM_OK;
}

/* What tfm_prefill and tfm_verify (`function`) check before running: the
 * arguments, the room left and the ids; then the tokens are the session's
 * from its length on (not counted until they have run). */
static tfm_status_code take_tokens(const char *function, tfm_session *s,
                                   const int32_t *tokens, int64_t n,
                                   const float *logits, int take_images,
                                   tfm_status *status) {
  if (!s || !tokens || !logits)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "%s: NULL %s", function,
                    !s        ? "session"
                    : !tokens ? "tokens"
                              : "logits");
  if (n <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: expected at least one token, got %lld", function,
                    (long long)n);
  if (s->length + n > s->capacity)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "%lld more tokens after %lld exceed the session's "
                    "capacity of %lld positions",
                    (long long)n, (long long)s->length,
                    (long long)s->capacity);
  tfm_status_code code =
      tfm_check_token_ids(tfm_model_get_desc(s->model), tokens, n, status);
  if (code != TFM_OK)
    return code;
  memcpy(s->tokens + s->length, tokens, (size_t)n * sizeof *tokens);
  /* Placeholders take the image rows waiting (a prefill's only: a
   * speculative step's drafts are tokens). */
  if (take_images)
    tfm_session_take_image_rows(s, n);
  else if (s->image_row)
    for (int64_t p = s->length; p < s->length + n; ++p)
      s->image_row[p] = -1;
  /* What they kept is no longer the last call's. */
  s->ring_keep.count = s->state_kept_count = 0;
  return TFM_OK;
}

tfm_status_code tfm_prefill(tfm_session *s, const int32_t *tokens, int64_t n,
                            float *logits, tfm_status *status) {
  tfm_status_code code =
      take_tokens("tfm_prefill", s, tokens, n, logits, 1, status);
  if (code != TFM_OK)
    return code;
  const tfm_model_desc *desc = tfm_model_get_desc(s->model);
  int64_t vocab = desc->vocab_size;
  if (!s->cache) {
    /* No KV cache: recompute the whole history, its logits in a scratch
     * that at least doubles when it grows. */
    int64_t rows = s->length + n;
    if (rows > s->scratch_rows) {
      int64_t grown = rows > 2 * s->scratch_rows ? rows : 2 * s->scratch_rows;
      if (grown > s->capacity)
        grown = s->capacity;
      float *scratch =
          realloc(s->scratch, (size_t)grown * (size_t)vocab * sizeof(float));
      if (!scratch)
        return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                        "out of memory for the logits of %lld positions "
                        "(this model has no KV cache, so every call "
                        "recomputes the whole history)",
                        (long long)grown);
      s->scratch = scratch;
      s->scratch_rows = grown;
    }
    code = tfm_forward(s->model, s->tokens, rows, s->scratch, status);
    if (code != TFM_OK)
      return code;
    memcpy(logits, s->scratch + (s->length + n - 1) * vocab,
           (size_t)vocab * sizeof *logits);
    s->length += n;
    return tfm_ok(status);
  }
  code = refresh(s, logits, status);
  if (code != TFM_OK)
    return code;
  return run_chunks(s, tokens, n, logits, status);
}

/* The recurrent states before a @verify of `n` positions, for
 * tfm_session_truncate to go back to (nothing kept where memory runs out:
 * the truncation then recomputes the whole sequence). */
static void keep_state(tfm_session *s, int64_t n) {
  if (!s->state)
    return;
  size_t bytes = (size_t)s->state_descriptor.sizes[0] * sizeof(float);
  if (!s->state_keep)
    s->state_keep = tfm_model_state_alloc(s->model, bytes);
  if (s->state_keep &&
      tfm_model_state_move(s->model, s->state_keep, s->state, bytes)) {
    s->state_kept_at = s->length;
    s->state_kept_count = n;
  }
}

int64_t tfm_session_go_back_in_states(tfm_session *s, int64_t length) {
  if (!s->state)
    return length;
  if (s->state_kept_count == 0 ||
      s->length != s->state_kept_at + s->state_kept_count ||
      length < s->state_kept_at || s->cache_used != s->length ||
      !tfm_model_state_move(s->model, s->state, s->state_keep,
                            (size_t)s->state_descriptor.sizes[0] *
                                sizeof(float)))
    return 0;
  s->state_kept_count = 0;
  return s->state_kept_at;
}

tfm_status_code tfm_verify(tfm_session *s, const int32_t *tokens, int64_t n,
                           float *logits, tfm_status *status) {
  if (s && !tfm_model_entry_point(s->model, "verify"))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @verify for speculative decoding: "
                    "compile it with tfmc --speculative",
                    tfm_model_get_desc(s->model)->name);
  tfm_status_code code =
      take_tokens("tfm_verify", s, tokens, n, logits, 0, status);
  if (code != TFM_OK)
    return code;
  code = refresh(s, logits, status);
  if (code != TFM_OK)
    return code;
  /* One call: a window's cache that is full drops what no query sees
   * first; the tokens must then fit in what is left. */
  if (s->cache_used + n > s->cache_capacity && s->window)
    slide_cache(s);
  if (s->cache_used + n > s->cache_capacity)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "tfm_verify: %lld tokens do not fit the %lld cache rows "
                    "left of the window",
                    (long long)n,
                    (long long)(s->cache_capacity - s->cache_used));
  /* The ring rows the drafts overwrite, for tfm_session_truncate to put
   * back (where they cannot be kept, it recomputes instead). */
  if (s->rings)
    (void)tfm_ring_keep_take(s->model, &s->ring_geometry, &s->ring_keep,
                             s->rings, s->length, n);
  keep_state(s, n);
  return run_tokens(s, TFM_ENTRY_VERIFY, tokens, n, n, logits, status);
}

tfm_status_code tfm_decode(tfm_session *s, int32_t token, float *logits,
                           tfm_status *status) {
  return tfm_prefill(s, &token, 1, logits, status);
}

tfm_status_code tfm_session_set_lora(tfm_session *s, int32_t adapter,
                                     tfm_status *status) {
  if (!s)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_set_lora: NULL session");
  if (adapter == s->lora_adapter)
    return tfm_ok(status);
  int32_t slot = -1;
  if (adapter != 0) {
    slot = tfm_lora_acquire(tfm_model_lora_bank(s->model), adapter,
                            "tfm_session_set_lora",
                            tfm_model_get_desc(s->model)->name, status);
    if (slot < 0)
      return status ? status->code : TFM_ERROR_INVALID_ARGUMENT;
  }
  tfm_lora_release(tfm_model_lora_bank(s->model), s->lora_adapter);
  s->lora_adapter = adapter;
  s->lora_slot = slot;
  /* What the session holds was computed with the other adapter. Its image
   * rows wait for the same placeholders again (tfm_generate runs what the
   * session held again, in order). */
  int64_t image_rows = s->image_rows_stored;
  tfm_session_reset(s);
  s->image_rows_stored = image_rows;
  return tfm_ok(status);
}

int32_t tfm_session_lora(const tfm_session *s) {
  return s ? s->lora_adapter : 0;
}
