/*===- engine_draft.c - the batch engine's draft model --------------------===//
 *
 * Speculative decoding with a second, smaller model of the same vocabulary
 * (tfm_engine_options.draft_model). It keeps a paged cache of its own, a
 * slot for each of the engine's, and how many positions of each it holds.
 * Each step, before the engine's @verify_batch, it drafts for every
 * generating request that drafts with it: one @prefill_batch call catches
 * each request up on the tokens it has not seen (a whole prompt the first
 * time; after that the token last chosen, and the drafts it accepted before
 * that) and proposes a first token greedily, and each further call feeds
 * every request its last proposal and proposes the next, until each has
 * its room or the draft's top token is less likely than draft_p_min.
 * Drafts are only proposals: the engine chooses from the target model's
 * logits as without them, so the text does not change. What the draft
 * holds past the positions the target kept is dropped when it next drafts
 * (its rows are written again).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/engine/engine_internal.h"

#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"
#include "runtime/generate/speculation.h"

#include <stdlib.h>
#include <string.h>

struct tfm_engine_draft {
  tfm_model *model;
  tfm_kv_pages *pages;
  int64_t cache_shape[6]; /* [slots, layers, 2, capacity, kv_heads, dim] */
  int32_t cache_dtype;
  int64_t *held;               /* [slots]: positions the draft cache holds */
  int32_t *tokens, *positions; /* a call's rows: [slots * capacity] */
  int32_t *slots, *lengths;    /* its chunks: [slots] */
  request **requests;          /* [slots]: those still drafting */
  int64_t vocab;               /* the target's: drafts stay below it */
  float p_min; /* a draft's least top probability (options.draft_p_min) */
};

void tfm_engine_draft_free(tfm_engine_draft *d) {
  if (!d)
    return;
  tfm_kv_pages_free(d->pages);
  free(d->held);
  free(d->tokens);
  free(d->positions);
  free(d->slots);
  free(d->lengths);
  free(d->requests);
  free(d);
}

tfm_status_code tfm_engine_draft_new(tfm_engine *e, tfm_model *model,
                                     tfm_engine_draft **out,
                                     tfm_status *status) {
  *out = NULL;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_cache_desc *cache =
      tfm_engine_batched_cache(desc, TFM_CACHE_SELF_ATTENTION);
  if (!cache || !tfm_model_entry_point(model, "prefill_batch"))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "draft model '%s' has no @prefill_batch over a KV cache: "
                    "compile a decoder language model with tfmc's defaults",
                    desc->name);
  /* Its rows are dropped by shortening what it holds, which rings and
   * recurrent states cannot follow. */
  if (tfm_engine_batched_cache(desc, TFM_CACHE_SELF_ATTENTION_RINGS) ||
      tfm_engine_batched_cache(desc, TFM_CACHE_RECURRENT_STATE))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "draft model '%s' keeps windowed layers' rings or "
                    "recurrent states: the engine drafts with models whose "
                    "cache is every position's rows",
                    desc->name);
  tfm_status_code code =
      tfm_speculation_check_vocabulary(e->model, model, status);
  if (code != TFM_OK)
    return code;
  if (cache->shape[3] < e->capacity)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "draft model '%s' holds %lld positions; the engine's "
                    "model holds %lld",
                    desc->name, (long long)cache->shape[3],
                    (long long)e->capacity);
  tfm_engine_draft *d = calloc(1, sizeof *d);
  if (!d)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  d->model = model;
  d->vocab = e->desc->vocab_size;
  d->p_min = e->options.draft_p_min;
  int64_t slots = e->options.max_sequences;
  d->cache_shape[0] = slots;
  memcpy(d->cache_shape + 1, cache->shape + 1, 5 * sizeof *d->cache_shape);
  d->cache_dtype = cache->dtype;
  const int64_t *shape = cache->shape + 1;
  /* Every slot's whole context: the draft is small beside its target. */
  int64_t position_bytes = shape[3] * shape[4] * tfm_dtype_bytes(cache->dtype);
  tfm_kv_pages_options pages = {slots,
                                shape[0] * shape[1],
                                shape[2],
                                position_bytes,
                                slots * shape[0] * shape[1] * shape[2] *
                                    position_bytes,
                                e->options.block_positions};
  code = tfm_kv_pages_new(&pages, &d->pages, status);
  size_t rows = (size_t)slots * (size_t)e->capacity;
  d->held = calloc((size_t)slots, sizeof *d->held);
  d->tokens = malloc(rows * sizeof *d->tokens);
  d->positions = malloc(rows * sizeof *d->positions);
  d->slots = malloc((size_t)slots * sizeof *d->slots);
  d->lengths = malloc((size_t)slots * sizeof *d->lengths);
  d->requests = malloc((size_t)slots * sizeof *d->requests);
  if (code == TFM_OK && (!d->held || !d->tokens || !d->positions || !d->slots ||
                         !d->lengths || !d->requests))
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for draft model '%s''s cache of %lld "
                    "sequences",
                    desc->name, (long long)slots);
  if (code != TFM_OK) {
    tfm_engine_draft_free(d);
    return code;
  }
  *out = d;
  return tfm_ok(status);
}

void tfm_engine_draft_release(tfm_engine_draft *d, int64_t slot) {
  tfm_kv_pages_release(d->pages, slot);
  d->held[slot] = 0;
}

/* One @prefill_batch call of the draft over the `chunks` chunks in d's
 * buffers (`rows` tokens): each chunk's request proposes the greedy token
 * after it as its next draft, or stops drafting (its room set to what it
 * has) where that token is past the target's vocabulary. */
static tfm_status_code propose(tfm_engine_draft *d, int64_t rows,
                               int64_t chunks, tfm_status *status) {
  tfm_tensor inputs[4] = {{d->tokens, TFM_DTYPE_I32, 1, {rows}, NULL},
                          {d->positions, TFM_DTYPE_I32, 1, {rows}, NULL},
                          {d->slots, TFM_DTYPE_I32, 1, {chunks}, NULL},
                          {d->lengths, TFM_DTYPE_I32, 1, {chunks}, NULL}};
  tfm_tensor cache = {
      tfm_kv_pages_base(d->pages), d->cache_dtype, 6, {0}, NULL};
  memcpy(cache.shape, d->cache_shape, sizeof d->cache_shape);
  tfm_tensor *caches[1] = {&cache}, logits;
  tfm_status_code code = tfm_model_call(d->model, "prefill_batch", inputs, 4,
                                        caches, &logits, 1, status);
  if (code != TFM_OK)
    return code;
  int64_t width = logits.shape[1];
  for (int64_t c = 0; c < chunks; ++c) {
    request *r = d->requests[c];
    d->held[d->slots[c]] += d->lengths[c];
    const float *row = (const float *)logits.data + c * width;
    int32_t token = tfm_argmax(row, width);
    /* Padding (nothing the target has), or a guess too unsure to pay. */
    if (token >= d->vocab ||
        !tfm_speculation_confident(row, width, token, d->p_min))
      r->draft_room = r->draft_count;
    else
      r->drafts[r->draft_count++] = token;
  }
  tfm_tensor_release(&logits);
  return TFM_OK;
}

tfm_status_code tfm_engine_draft_run(tfm_engine *e, tfm_status *status) {
  tfm_engine_draft *d = e->draft;
  /* The first call: what each request's draft has not seen, up to and
   * with its last chosen token. */
  int64_t rows = 0, chunks = 0;
  for (request *r = e->running; r; r = r->next) {
    r->draft_count = 0;
    if (r->draft_room <= 0)
      continue;
    /* What it holds past the target's positions is of drafts the target
     * rejected (or never checked: its call failed). */
    if (d->held[r->slot] > r->computed)
      d->held[r->slot] = r->computed;
    int64_t from = d->held[r->slot];
    /* Backed up to the last draft it feeds itself. */
    if (tfm_kv_pages_reserve(d->pages, r->slot, r->length + r->draft_room - 1,
                             status) != TFM_OK) {
      r->draft_room = 0;
      continue;
    }
    for (int64_t p = from; p < r->length; ++p) {
      d->tokens[rows] = r->tokens[p];
      d->positions[rows++] = (int32_t)p;
    }
    d->slots[chunks] = (int32_t)r->slot;
    d->lengths[chunks] = (int32_t)(r->length - from);
    d->requests[chunks++] = r;
  }
  /* Then one token more a call, for those with room left. */
  while (chunks > 0) {
    tfm_status_code code = propose(d, rows, chunks, status);
    if (code != TFM_OK) {
      /* No drafts this step; what the call wrote is written again. */
      for (request *r = e->running; r; r = r->next)
        r->draft_count = 0;
      return code;
    }
    int64_t still = 0;
    rows = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      request *r = d->requests[c];
      if (r->draft_count >= r->draft_room)
        continue;
      d->tokens[rows] = r->drafts[r->draft_count - 1];
      d->positions[rows++] = (int32_t)d->held[r->slot];
      d->slots[still] = (int32_t)r->slot;
      d->lengths[still] = 1;
      d->requests[still++] = r;
    }
    chunks = still;
  }
  return TFM_OK;
}
