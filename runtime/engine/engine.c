/*===- engine.c - the batch engine: making, feeding and freeing it -------===//
 *
 * See tfm_engine.h. A request waits in a queue until a slot of the batched
 * cache is free, then prefills (a chunk per step, after any blocks it
 * shares with earlier prompts), then generates; engine_step.c runs the
 * steps. Here: the engine's buffers and pool, requests submitted and
 * cancelled, and its counters.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/engine/engine_internal.h"

#include "runtime/core/lora_bank.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/ranks.h"
#include "runtime/core/status.h"
#include "runtime/generate/speculation.h"

#include <stdlib.h>
#include <string.h>

tfm_engine_options tfm_engine_default_options(void) {
  tfm_engine_options o = {.max_sequences = 16,
                          .block_positions = TFM_KV_DEFAULT_BLOCK_POSITIONS,
                          .prefill_chunk = 512,
                          .share_prefixes = 1,
                          .draft_p_min = 0.75f,
                          .micro_batch_rows = 64};
  return o;
}

/* [-1, layers, 2, capacity, kv_heads, head_dim] (@prefill's own may keep
 * fewer planes, windowed layers in rings) or the recurrent states [-1,
 * elements]. */
const tfm_cache_desc *tfm_engine_batched_cache(const tfm_model_desc *desc,
                                               int32_t kind) {
  int32_t rank = kind == TFM_CACHE_RECURRENT_STATE ? 2 : 6;
  for (int32_t i = 0; i < desc->num_caches; ++i)
    if (desc->caches[i].kind == kind && desc->caches[i].rank == rank)
      return &desc->caches[i];
  return NULL;
}

/* Zeroed buffers of batched cache `batched` ([-1, ...]) for `sequences`
 * sequences: its shape into `shape` (batched's rank), its bytes into
 * *stat and *bytes; NULL when out of memory. */
static void *sequence_buffers(const tfm_cache_desc *batched,
                              int64_t sequences, int64_t *shape, int64_t *stat,
                              size_t *bytes) {
  shape[0] = sequences;
  memcpy(shape + 1, batched->shape + 1,
         (size_t)(batched->rank - 1) * sizeof *shape);
  *bytes = (size_t)tfm_dtype_bytes(batched->dtype);
  for (int32_t i = 0; i < batched->rank; ++i)
    *bytes *= (size_t)shape[i];
  *stat = (int64_t)*bytes;
  return calloc(1, *bytes ? *bytes : 1);
}

tfm_status_code tfm_engine_new(tfm_model *model,
                               const tfm_engine_options *options,
                               tfm_engine **out, tfm_status *status) {
  if (!model || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_new: NULL %s", model ? "output" : "model");
  *out = NULL;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_cache_desc *cache =
      tfm_engine_batched_cache(desc, TFM_CACHE_SELF_ATTENTION);
  const tfm_cache_desc *rings =
      tfm_engine_batched_cache(desc, TFM_CACHE_SELF_ATTENTION_RINGS);
  const tfm_cache_desc *states =
      tfm_engine_batched_cache(desc, TFM_CACHE_RECURRENT_STATE);
  if (!cache || !tfm_model_entry_point(model, "prefill_batch"))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @prefill_batch over a KV cache: "
                    "compile a decoder language model with tfmc's defaults "
                    "to serve it",
                    desc->name);
  if (cache->dtype != TFM_DTYPE_F32 && cache->dtype != TFM_DTYPE_BF16 &&
      cache->dtype != TFM_DTYPE_F16 && cache->dtype != TFM_DTYPE_I8)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s': the engine serves f32, bf16, f16 and int8 "
                    "KV caches, not dtype %d",
                    desc->name, (int)cache->dtype);
  const int64_t *shape = cache->shape + 1; /* one sequence's */
  tfm_engine_options o = options ? *options : tfm_engine_default_options();
  tfm_engine_options d = tfm_engine_default_options();
  if (o.max_drafts < 0 || o.max_drafts > TFM_SPECULATION_MAX_DRAFTS)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_new: max_drafts must be between 0 and %d, "
                    "got %d",
                    TFM_SPECULATION_MAX_DRAFTS, o.max_drafts);
  if (!(o.draft_p_min >= 0.0f && o.draft_p_min <= 1.0f))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_new: draft_p_min must be between 0 and 1, "
                    "got %g",
                    (double)o.draft_p_min);
  if (o.draft_model && !o.max_drafts)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_new: a draft model needs max_drafts > 0 "
                    "(the drafts a request may have checked a step)");
  if (o.max_drafts && !tfm_model_entry_point(model, "verify_batch"))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @verify_batch to check drafts with: "
                    "compile it with tfmc --speculative",
                    desc->name);
  if (o.max_sequences < 0 || o.kv_pool_bytes < 0 || o.block_positions < 0 ||
      o.prefill_chunk < 0 || o.micro_batch_rows < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_new: negative option (max_sequences %d, "
                    "kv_pool_bytes %lld, block_positions %d, prefill_chunk "
                    "%lld, micro_batch_rows %lld)",
                    o.max_sequences, (long long)o.kv_pool_bytes,
                    o.block_positions, (long long)o.prefill_chunk,
                    (long long)o.micro_batch_rows);
  if (!o.max_sequences)
    o.max_sequences = d.max_sequences;
  /* A block is at most a whole sequence: blocks are rounded up to sizes
   * that divide the context, and none past it does (tfm-serve
   * --block-positions 513 on a 512-position model spun forever looking
   * for one). The default shrinks to a smaller context. */
  if (o.block_positions > shape[2])
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_new: block_positions %d is more than the %lld "
                    "positions of model '%s' (a block holds at most one "
                    "sequence's)",
                    o.block_positions, (long long)shape[2], desc->name);
  if (!o.block_positions)
    o.block_positions =
        d.block_positions < shape[2] ? d.block_positions : (int32_t)shape[2];
  if (!o.prefill_chunk)
    o.prefill_chunk = d.prefill_chunk;
  if (!o.micro_batch_rows)
    o.micro_batch_rows = d.micro_batch_rows;
  /* No step has more prompt tokens than every sequence's whole context. */
  if (o.prefill_chunk > shape[2] * o.max_sequences)
    o.prefill_chunk = shape[2] * o.max_sequences;
  /* Nor fewer than an image whose rows must run in one step. */
  int64_t image_rows = tfm_model_image_rows_per_call(model);
  if (image_rows < INT64_MAX && o.prefill_chunk < image_rows)
    o.prefill_chunk = image_rows;
  tfm_engine *e = calloc(1, sizeof *e);
  if (!e)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  e->model = model;
  e->desc = desc;
  e->capacity = shape[2];
  e->cache_shape[0] = o.max_sequences;
  memcpy(e->cache_shape + 1, shape, 5 * sizeof *e->cache_shape);
  e->cache_dtype = cache->dtype;
  e->slot_bytes = (size_t)tfm_dtype_bytes(cache->dtype);
  for (int i = 0; i < 5; ++i)
    e->slot_bytes *= (size_t)shape[i];
  if (!o.kv_pool_bytes)
    o.kv_pool_bytes = (int64_t)e->slot_bytes * o.max_sequences;
  /* A ring's rows and a recurrent state are rewritten as their sequence
   * goes on, so no block of a prefix holds what a later request's windowed
   * or recurrent layers need. */
  if (rings || states)
    o.share_prefixes = 0;
  e->options = o;
  tfm_kv_pages_options pages = {
      o.max_sequences, shape[0] * shape[1],
      shape[2],        shape[3] * shape[4] * tfm_dtype_bytes(cache->dtype),
      o.kv_pool_bytes, o.block_positions};
  tfm_status_code code = tfm_kv_pages_new(&pages, &e->pages, status);
  if (code != TFM_OK) {
    free(e);
    return code;
  }
  /* A split model's other ranks keep pools of their parts of the heads,
   * mapped as this one is. */
  if (tfm_model_leads(model))
    tfm_kv_pages_lead_ranks(e->pages);
  e->free_slots = malloc((size_t)o.max_sequences * sizeof *e->free_slots);
  /* A step: a token and its drafts of each generating sequence, and the
   * prompt chunks. */
  size_t step_tokens = (size_t)o.max_sequences * (1 + (size_t)o.max_drafts) +
                       (size_t)o.prefill_chunk;
  e->tokens = malloc(step_tokens * sizeof *e->tokens);
  e->row_adapters = malloc(step_tokens * sizeof *e->row_adapters);
  e->positions = malloc(step_tokens * sizeof *e->positions);
  e->slots = malloc((size_t)o.max_sequences * sizeof *e->slots);
  e->lengths = malloc((size_t)o.max_sequences * sizeof *e->lengths);
  e->chunk_requests =
      malloc((size_t)o.max_sequences * sizeof *e->chunk_requests);
  e->image_width = tfm_engine_image_width(model);
  e->image_rows_per_step = image_rows;
  if (e->image_width)
    e->step_rows = malloc((size_t)o.prefill_chunk * (size_t)e->image_width *
                          sizeof *e->step_rows);
  if (!e->free_slots || !e->tokens || !e->row_adapters || !e->positions ||
      !e->slots || !e->lengths || !e->chunk_requests ||
      (e->image_width && !e->step_rows)) {
    tfm_engine_free(e);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for an engine of %d sequences",
                    o.max_sequences);
  }
  size_t bytes = 0;
  if (rings &&
      !(e->rings = sequence_buffers(rings, o.max_sequences, e->rings_shape,
                                    &e->stats.kv_ring_bytes, &bytes))) {
    tfm_engine_free(e);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for the windowed layers' rings of %d "
                    "sequences (%zu bytes)",
                    o.max_sequences, bytes);
  }
  if (rings)
    e->ring_geometry = tfm_ring_geometry_of(rings);
  if (states &&
      !(e->states = sequence_buffers(states, o.max_sequences, e->states_shape,
                                     &e->stats.recurrent_state_bytes,
                                     &bytes))) {
    tfm_engine_free(e);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for the recurrent states of %d "
                    "sequences (%zu bytes)",
                    o.max_sequences, bytes);
  }
  /* A second copy of the states, before each step's drafts: a request
   * whose drafts are rejected goes back to it. */
  if (states && o.max_drafts && !(e->state_keeps = malloc(bytes ? bytes : 1))) {
    tfm_engine_free(e);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for a copy of the recurrent states of %d "
                    "sequences (%zu bytes, for speculative decoding)",
                    o.max_sequences, bytes);
  }
  if (o.draft_model) {
    tfm_status_code code =
        tfm_engine_draft_new(e, o.draft_model, &e->draft, status);
    if (code != TFM_OK) {
      tfm_engine_free(e);
      return code;
    }
  }
  for (int64_t s = 0; s < o.max_sequences; ++s)
    e->free_slots[s] = o.max_sequences - 1 - s;
  e->free_slot_count = o.max_sequences;
  e->next_id = 1;
  *out = e;
  return tfm_ok(status);
}

static void free_request(tfm_engine *e, request *r) {
  tfm_lora_release(tfm_model_lora_bank(e->model), r->lora);
  tfm_grammar_matcher_free(r->matcher);
  tfm_grammar_free(r->grammar);
  tfm_sampler_free(r->sampler);
  tfm_ring_keep_free(e->model, &r->ring_keep);
  free(r->tokens);
  free(r->drafts);
  free(r->image_rows);
  free(r->image_row);
  free(r->row_keys);
  free(r);
}

void tfm_engine_free(tfm_engine *e) {
  if (!e)
    return;
  for (request *lists[2] = {e->waiting, e->running}, **l = lists; l < lists + 2;
       ++l)
    for (request *r = *l, *next; r; r = next) {
      next = r->next;
      free_request(e, r);
    }
  tfm_kv_pages_free(e->pages);
  free(e->rings);
  free(e->states);
  free(e->state_keeps);
  tfm_engine_draft_free(e->draft);
  free(e->free_slots);
  free(e->tokens);
  free(e->row_adapters);
  free(e->positions);
  free(e->slots);
  free(e->lengths);
  free(e->chunk_requests);
  free(e->step_rows);
  free(e);
}

tfm_status_code tfm_engine_submit(tfm_engine *e, const tfm_engine_request *q,
                                  int64_t *id, tfm_status *status) {
  if (!e || !q || !id || !q->prompt)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_submit: NULL %s",
                    !e ? "engine" : !q ? "request" : !id ? "id" : "prompt");
  if (q->prompt_count < 1 || q->max_new_tokens < 1)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a request needs at least one prompt token and one new "
                    "token, got %lld and %lld",
                    (long long)q->prompt_count, (long long)q->max_new_tokens);
  if (q->prompt_count >= e->capacity)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "a prompt of %lld tokens leaves no room to generate in "
                    "the %lld positions of model '%s'",
                    (long long)q->prompt_count, (long long)e->capacity,
                    e->desc->name);
  tfm_status_code code =
      tfm_check_token_ids(e->desc, q->prompt, q->prompt_count, status);
  if (code != TFM_OK)
    return code;
  if ((q->lookup_ngram || q->draft_max) && !e->options.max_drafts)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a request drafts (lookup_ngram %d, draft_max %d) in an "
                    "engine that checks no drafts (max_drafts 0)",
                    q->lookup_ngram, q->draft_max);
  if (q->lookup_ngram < 0 || q->lookup_ngram > TFM_SPECULATION_MAX_NGRAM ||
      q->draft_max < 0 || q->draft_max > e->options.max_drafts)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a request's lookup_ngram must be between 0 and %d and "
                    "its draft_max between 0 and the engine's max_drafts "
                    "%d, got %d and %d",
                    TFM_SPECULATION_MAX_NGRAM, e->options.max_drafts,
                    q->lookup_ngram, q->draft_max);
  request *r = calloc(1, sizeof *r);
  if (!r)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  code = tfm_sampler_new(&q->sampler, e->desc->vocab_size, &r->sampler, status);
  if (code != TFM_OK) {
    free(r);
    return code;
  }
  if (q->lora) {
    r->lora_slot = tfm_lora_acquire(tfm_model_lora_bank(e->model), q->lora,
                                    "tfm_engine_submit", e->desc->name, status);
    if (r->lora_slot < 0) {
      free_request(e, r);
      return status ? status->code : TFM_ERROR_INVALID_ARGUMENT;
    }
    r->lora = q->lora;
  }
  r->greedy = q->sampler.temperature == 0.0f;
  r->tokens = malloc((size_t)e->capacity * sizeof *r->tokens);
  r->lookup_ngram = q->lookup_ngram;
  r->draft_max = q->draft_max ? q->draft_max : e->options.max_drafts;
  /* Prompt lookup, or else the engine's draft model. */
  int drafting = r->lookup_ngram || e->draft;
  if (drafting)
    r->drafts = malloc((size_t)r->draft_max * sizeof *r->drafts);
  if (!r->tokens || (drafting && !r->drafts)) {
    free_request(e, r);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  /* Before the grammar, which only a successful submit takes. */
  code = tfm_engine_take_images(e, r, q, status);
  if (code != TFM_OK) {
    free_request(e, r);
    return code;
  }
  if (q->grammar) {
    code = tfm_grammar_matcher_new(q->grammar, &r->matcher, status);
    if (code != TFM_OK) {
      free_request(e, r);
      return code;
    }
    r->grammar = q->grammar; /* the request's from here on */
  }
  memcpy(r->tokens, q->prompt, (size_t)q->prompt_count * sizeof *r->tokens);
  r->length = q->prompt_count;
  r->max_new_tokens = q->max_new_tokens;
  r->ignore_eos = q->ignore_eos;
  r->slot = -1;
  r->id = e->next_id++;
  request **tail = &e->waiting;
  while (*tail)
    tail = &(*tail)->next;
  *tail = r;
  *id = r->id;
  return tfm_ok(status);
}

/* Unlinks `r` from `list`. */
void tfm_engine_unlink(request **list, request *r) {
  for (; *list; list = &(*list)->next)
    if (*list == r) {
      *list = r->next;
      r->next = NULL;
      return;
    }
}

void tfm_engine_give_back_slot(tfm_engine *e, request *r) {
  if (r->slot < 0)
    return;
  tfm_kv_pages_release(e->pages, r->slot);
  if (e->draft)
    tfm_engine_draft_release(e->draft, r->slot);
  e->free_slots[e->free_slot_count++] = r->slot;
  r->slot = -1;
}

void tfm_engine_retire(tfm_engine *e, request *r) {
  tfm_engine_give_back_slot(e, r);
  tfm_engine_unlink(r->state == kWaiting ? &e->waiting : &e->running, r);
  free_request(e, r);
}

tfm_status_code tfm_engine_cancel(tfm_engine *e, int64_t id,
                                  tfm_status *status) {
  if (!e)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_cancel: NULL engine");
  for (request *lists[2] = {e->waiting, e->running}, **l = lists; l < lists + 2;
       ++l)
    for (request *r = *l; r; r = r->next)
      if (r->id == id) {
        tfm_engine_retire(e, r);
        return tfm_ok(status);
      }
  return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                  "no request %lld in the engine", (long long)id);
}

void tfm_engine_get_stats(const tfm_engine *e, tfm_engine_stats *s) {
  if (!e || !s)
    return;
  *s = e->stats;
  s->running = s->waiting = 0;
  for (const request *r = e->running; r; r = r->next)
    ++s->running;
  for (const request *r = e->waiting; r; r = r->next)
    ++s->waiting;
  tfm_kv_pages_stats pages;
  tfm_kv_pages_get_stats(e->pages, &pages);
  s->kv_blocks = pages.blocks;
  s->kv_blocks_used = pages.blocks_mapped;
  s->kv_blocks_shared = pages.blocks_shared;
  s->kv_blocks_cached = pages.blocks_cached;
  s->kv_block_bytes = pages.block_bytes;
  s->kv_paged = pages.mapped;
  s->kv_block_positions = tfm_kv_pages_block_positions(e->pages);
}
