/*===- engine.c - the batch engine: continuous batching over a paged cache ===//
 *
 * See tfm_engine.h. A request waits in a queue until a slot of the batched
 * cache is free, then prefills (a chunk per step, after any blocks it
 * shares with earlier prompts), then generates one token per step. A step
 * is one @prefill_batch call: every generating request's token and the
 * prompt chunks, each a chunk of its own sequence. Its tokens (prompt, then
 * generated) are kept whole so that a preempted request can be prefilled
 * again. With drafts (speculative decoding), the generating requests'
 * chunks are their chosen token and its drafts, checked in a @verify_batch
 * call of their own (every row's logits), and the prompt chunks go to
 * @prefill_batch alone.
 *
 *===----------------------------------------------------------------------===*/

#include "tfm/tfm_engine.h"

#include "runtime/core/model_internal.h"
#include "runtime/core/ranks.h"
#include "runtime/core/status.h"
#include "runtime/engine/kv_pages.h"
#include "runtime/generate/speculation.h"

#include <stdlib.h>
#include <string.h>

typedef enum { kWaiting, kPrefilling, kGenerating } request_state;

typedef struct request {
  int64_t id;
  request_state state;
  int32_t *tokens;  /* prompt, then generated: [capacity] */
  int64_t length;   /* tokens known */
  int64_t computed; /* positions in the cache */
  int64_t generated, max_new_tokens;
  int ignore_eos;
  tfm_sampler *sampler;
  int greedy; /* temperature 0: a grammar checks the choice first */
  /* The request's grammar (its own) and where its text is in it; NULL:
   * none. */
  tfm_grammar *grammar;
  tfm_grammar_matcher *matcher;
  int64_t slot;      /* -1 while waiting */
  int64_t step_tokens; /* this step's chunk (0: none) */
  /* Speculative decoding by prompt lookup (lookup_ngram > 0): this step's
   * drafts after the last chosen token (checked through @verify_batch
   * where `verify`), and the totals its events report. */
  int32_t lookup_ngram, draft_max;
  int32_t *drafts; /* [draft_max] */
  int64_t draft_count, drafted, accepted;
  int verify;
  int64_t admitted;  /* admission order: the last admitted is preempted */
  struct request *next; /* in the waiting queue or the running list */
} request;

struct tfm_engine {
  tfm_model *model;
  const tfm_model_desc *desc;
  tfm_engine_options options;
  tfm_kv_pages *pages;
  int64_t capacity;       /* positions per sequence */
  int64_t cache_shape[6]; /* [slots, layers, 2, capacity, kv_heads, dim] */
  size_t slot_bytes;     /* one sequence's whole cache */
  int32_t cache_dtype;    /* f32, bf16, f16, or an int8 cache's rows */
  /* Windowed layers' rings where the model keeps them apart ([slots,
   * rings, 2, window, kv_heads, dim]; NULL: none): plain memory, each
   * slot's rewritten as its sequence goes on. */
  void *rings;
  int64_t rings_shape[6];
  /* Recurrent layers' states ([slots, elements] f32; NULL: none), read as
   * zeros by a chunk at position 0, so a reused slot needs no clearing. */
  float *states;
  int64_t states_shape[2];
  int64_t *free_slots, free_slot_count;
  request *waiting, *running; /* FIFO queue; admission order */
  int64_t next_id, admissions;
  float *logits;              /* [max_sequences, vocab] */
  int32_t *tokens, *positions; /* the step's rows: [max_step_tokens] */
  int verifying;               /* some of this step's chunks have drafts */
  int32_t *slots, *lengths;    /* its chunks: [max_sequences] */
  request **chunk_requests;    /* [max_sequences] */
  tfm_engine_stats stats;
};

tfm_engine_options tfm_engine_default_options(void) {
  tfm_engine_options o = {16, 0, TFM_KV_DEFAULT_BLOCK_POSITIONS, 512, 1, 0};
  return o;
}

/* The batched entry points' cache of `kind`, [-1, layers, 2, capacity,
 * kv_heads, head_dim] (@prefill's own may keep fewer planes, windowed
 * layers in rings) or the recurrent states [-1, elements]: the engine's
 * sequences. */
static const tfm_cache_desc *batched_cache(const tfm_model_desc *desc,
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
  const tfm_cache_desc *cache = batched_cache(desc, TFM_CACHE_SELF_ATTENTION);
  const tfm_cache_desc *rings =
      batched_cache(desc, TFM_CACHE_SELF_ATTENTION_RINGS);
  const tfm_cache_desc *states = batched_cache(desc, TFM_CACHE_RECURRENT_STATE);
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
  if (o.max_drafts && !tfm_model_entry_point(model, "verify_batch"))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @verify_batch to check drafts with: "
                    "compile it with tfmc --speculative",
                    desc->name);
  if (o.max_sequences < 0 || o.kv_pool_bytes < 0 || o.block_positions < 0 ||
      o.prefill_chunk < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_new: negative option (max_sequences %d, "
                    "kv_pool_bytes %lld, block_positions %d, prefill_chunk "
                    "%lld)",
                    o.max_sequences, (long long)o.kv_pool_bytes,
                    o.block_positions, (long long)o.prefill_chunk);
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
  /* No step has more prompt tokens than every sequence's whole context. */
  if (o.prefill_chunk > shape[2] * o.max_sequences)
    o.prefill_chunk = shape[2] * o.max_sequences;
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
  e->logits = malloc((size_t)(o.max_sequences * desc->vocab_size) * sizeof(float));
  /* A step: a token and its drafts of each generating sequence, and the
   * prompt chunks. */
  size_t step_tokens = (size_t)o.max_sequences * (1 + (size_t)o.max_drafts) +
                       (size_t)o.prefill_chunk;
  e->tokens = malloc(step_tokens * sizeof *e->tokens);
  e->positions = malloc(step_tokens * sizeof *e->positions);
  e->slots = malloc((size_t)o.max_sequences * sizeof *e->slots);
  e->lengths = malloc((size_t)o.max_sequences * sizeof *e->lengths);
  e->chunk_requests =
      malloc((size_t)o.max_sequences * sizeof *e->chunk_requests);
  if (!e->free_slots || !e->logits || !e->tokens || !e->positions ||
      !e->slots || !e->lengths || !e->chunk_requests) {
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
  for (int64_t s = 0; s < o.max_sequences; ++s)
    e->free_slots[s] = o.max_sequences - 1 - s;
  e->free_slot_count = o.max_sequences;
  e->next_id = 1;
  *out = e;
  return tfm_ok(status);
}

static void free_request(request *r) {
  tfm_grammar_matcher_free(r->matcher);
  tfm_grammar_free(r->grammar);
  tfm_sampler_free(r->sampler);
  free(r->tokens);
  free(r->drafts);
  free(r);
}

void tfm_engine_free(tfm_engine *e) {
  if (!e)
    return;
  for (request *lists[2] = {e->waiting, e->running}, **l = lists; l < lists + 2;
       ++l)
    for (request *r = *l, *next; r; r = next) {
      next = r->next;
      free_request(r);
    }
  tfm_kv_pages_free(e->pages);
  free(e->rings);
  free(e->states);
  free(e->free_slots);
  free(e->logits);
  free(e->tokens);
  free(e->positions);
  free(e->slots);
  free(e->lengths);
  free(e->chunk_requests);
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
  r->greedy = q->sampler.temperature == 0.0f;
  r->tokens = malloc((size_t)e->capacity * sizeof *r->tokens);
  r->lookup_ngram = q->lookup_ngram;
  r->draft_max = q->draft_max ? q->draft_max : e->options.max_drafts;
  if (r->lookup_ngram)
    r->drafts = malloc((size_t)r->draft_max * sizeof *r->drafts);
  if (!r->tokens || (r->lookup_ngram && !r->drafts)) {
    free_request(r);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  if (q->grammar) {
    code = tfm_grammar_matcher_new(q->grammar, &r->matcher, status);
    if (code != TFM_OK) {
      free_request(r);
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
static void unlink_request(request **list, request *r) {
  for (; *list; list = &(*list)->next)
    if (*list == r) {
      *list = r->next;
      r->next = NULL;
      return;
    }
}

static void give_back_slot(tfm_engine *e, request *r) {
  if (r->slot < 0)
    return;
  tfm_kv_pages_release(e->pages, r->slot);
  e->free_slots[e->free_slot_count++] = r->slot;
  r->slot = -1;
}

static void retire(tfm_engine *e, request *r) {
  give_back_slot(e, r);
  unlink_request(r->state == kWaiting ? &e->waiting : &e->running, r);
  free_request(r);
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
        retire(e, r);
        return tfm_ok(status);
      }
  return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                  "no request %lld in the engine", (long long)id);
}

/* Moves the last admitted running request back to the front of the queue,
 * its blocks freed; it will be prefilled again with all its tokens. */
static request *preempt_last(tfm_engine *e) {
  request *last = NULL;
  for (request *r = e->running; r; r = r->next)
    if (!last || r->admitted > last->admitted)
      last = r;
  if (!last)
    return NULL;
  give_back_slot(e, last);
  unlink_request(&e->running, last);
  last->state = kWaiting;
  last->computed = 0;
  last->next = e->waiting;
  e->waiting = last;
  ++e->stats.preemptions;
  return last;
}

/* Backs positions [0, end) of `r`'s slot, preempting the requests admitted
 * after it (or `r` itself) while the pool is short. 0 when `r` was
 * preempted or cannot fit at all (then *status says so). */
static int reserve(tfm_engine *e, request *r, int64_t end, tfm_status *status) {
  while (tfm_kv_pages_reserve(e->pages, r->slot, end, status) != TFM_OK) {
    if (status->code != TFM_ERROR_OUT_OF_MEMORY)
      return 0;
    if (e->running == r && !r->next) {
      /* Alone, and still short: the pool cannot hold this sequence. */
      tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
               "request %lld needs %lld positions of KV cache, more than "
               "the pool holds",
               (long long)r->id, (long long)end);
      return 0;
    }
    if (preempt_last(e) == r)
      return 0;
  }
  return 1;
}

/* Ends `r`, which cannot go on (the status says why): its event, then the
 * status's code for the step to return. */
static tfm_status_code fail_request(tfm_engine *e, request *r,
                                    tfm_engine_event *events, int32_t *count) {
  events[(*count)++] =
      (tfm_engine_event){r->id, -1, TFM_FINISH_ERROR, r->drafted, r->accepted};
  retire(e, r);
  return TFM_ERROR_OUT_OF_MEMORY;
}

static void admit(tfm_engine *e) {
  while (e->waiting && e->free_slot_count > 0) {
    request *r = e->waiting;
    e->waiting = r->next;
    r->next = NULL;
    r->slot = e->free_slots[--e->free_slot_count];
    r->state = kPrefilling;
    r->admitted = ++e->admissions;
    /* The last token is always computed: its logits start generation. */
    r->computed = e->options.share_prefixes
                      ? tfm_kv_pages_share_prefix(e->pages, r->slot, r->tokens,
                                                  r->length, r->length - 1)
                      : 0;
    e->stats.prefix_tokens_reused += r->computed;
    request **tail = &e->running;
    while (*tail)
      tail = &(*tail)->next;
    *tail = r;
  }
}

/* Takes the token sampled for `r` from `logits`: an event, and the
 * request's end when it is one. */
static void take_token(tfm_engine *e, request *r, float *logits,
                       tfm_engine_event *event) {
  event->id = r->id;
  event->token = -1;
  event->drafted_tokens = r->drafted;
  event->accepted_tokens = r->accepted;
  /* Greedy under a grammar: the best tokens the grammar allows, checked
   * before the mask is computed (generate.c says why); the sampler's pass
   * penalizes repeated tokens. Else the grammar's mask first. Where it
   * allows nothing the match is whole and nothing may follow (the end of
   * a sequence, EOS), or the vocabulary cannot spell what it needs (or
   * memory ran out): the request can go no further (LENGTH). */
  int32_t token = -1;
  int64_t allowed = 1;
  if (r->matcher && r->greedy) {
    (void)tfm_sampler_sample(r->sampler, logits, r->tokens, r->length);
    token = tfm_grammar_matcher_accept_greedy(r->matcher, logits, &allowed);
  } else if (r->matcher) {
    allowed = tfm_grammar_matcher_mask(r->matcher, logits);
  }
  if (allowed <= 0) {
    event->finish = allowed == 0 && tfm_grammar_matcher_may_end(r->matcher)
                        ? TFM_FINISH_EOS
                        : TFM_FINISH_LENGTH;
    retire(e, r);
    return;
  }
  int accepted = token >= 0;
  if (!accepted)
    token = tfm_sampler_sample(r->sampler, logits, r->tokens, r->length);
  event->token = token;
  event->finish = TFM_FINISH_NONE;
  if (r->matcher && !accepted &&
      tfm_grammar_matcher_accept(r->matcher, token, NULL)) {
    event->token = -1;
    event->finish = TFM_FINISH_LENGTH;
  } else if (tfm_ends_generation(e->desc, token) && !r->ignore_eos) {
    event->token = -1;
    event->finish = TFM_FINISH_EOS;
  } else {
    r->tokens[r->length++] = token;
    ++r->generated;
    ++e->stats.generated_tokens;
    if (r->generated >= r->max_new_tokens || r->length >= e->capacity)
      event->finish = TFM_FINISH_LENGTH;
  }
  if (event->finish != TFM_FINISH_NONE)
    retire(e, r);
  else
    r->state = kGenerating;
}

/* Chooses the step's chunks in admission order: each generating request's
 * next token, and prompt chunks while the step's prefill budget lasts
 * (r->step_tokens), and backs their positions, preempting the requests
 * admitted last while the pool is short. */
/* Drafts `r`'s next tokens by prompt lookup, as many as it may still
 * generate after the next and the context holds, where the pool backs
 * their positions without preempting anyone (drafts are a bet, never a
 * reason to evict). */
static void draft(tfm_engine *e, request *r) {
  int64_t room = r->draft_max;
  int64_t left = r->max_new_tokens - r->generated - 1;
  int64_t positions = e->capacity - r->length;
  if (left < room)
    room = left;
  if (positions < room)
    room = positions;
  if (room <= 0)
    return;
  int64_t drafts =
      tfm_speculation_lookup(r->lookup_ngram, r->tokens, r->length - 1,
                             r->tokens[r->length - 1], room, r->drafts);
  tfm_status ignored;
  if (drafts &&
      tfm_kv_pages_reserve(e->pages, r->slot, r->computed + 1 + drafts,
                           &ignored) != TFM_OK)
    drafts = 0;
  r->draft_count = drafts;
  r->step_tokens += drafts;
  e->verifying |= drafts > 0;
}

static tfm_status_code plan_step(tfm_engine *e, tfm_engine_event *events,
                                 int32_t *count, tfm_status *status) {
  int64_t budget = e->options.prefill_chunk;
  e->verifying = 0;
  for (request *r = e->running; r; r = r->next)
    r->step_tokens = r->draft_count = 0;
  for (request *r = e->running; r; r = r->next) {
    int64_t n = 1;
    if (r->state == kPrefilling) {
      n = r->length - r->computed < budget ? r->length - r->computed : budget;
      if (n <= 0)
        continue;
    }
    if (!reserve(e, r, r->computed + n, status)) {
      if (r->state == kWaiting)
        break; /* it was the last admitted: nothing after it either */
      return fail_request(e, r, events, count);
    }
    r->step_tokens = n;
    if (r->state == kPrefilling)
      budget -= n;
    else if (r->lookup_ngram)
      draft(e, r);
  }
  /* Drafts are checked in a call of their own, with every row's logits. */
  for (request *r = e->running; r; r = r->next)
    r->verify = e->verifying && r->step_tokens && r->state == kGenerating;
  return TFM_OK;
}

/* Takes `r`'s tokens from @verify_batch's logits of its chunk (`rows`: the
 * last chosen token's, then each draft's): the next token, then one more
 * for each draft the request chose itself, until it chooses otherwise or
 * ends. Each row taken is a position the cache keeps. */
static void take_verified(tfm_engine *e, request *r, float *rows,
                          int64_t drafts, tfm_engine_event *events,
                          int32_t *count) {
  int64_t vocab = e->desc->vocab_size;
  r->drafted += drafts;
  e->stats.drafted_tokens += drafts;
  for (int64_t i = 0; i <= drafts; ++i) {
    ++r->computed;
    if (e->options.share_prefixes)
      tfm_kv_pages_publish(e->pages, r->slot, r->tokens, r->computed);
    int32_t drafted = i < drafts ? r->drafts[i] : -1;
    tfm_engine_event *event = &events[(*count)++];
    take_token(e, r, rows + i * vocab, event); /* may retire r */
    int accepted = event->token >= 0 && event->token == drafted;
    if (accepted) {
      ++event->accepted_tokens;
      ++e->stats.accepted_tokens;
    }
    if (event->finish != TFM_FINISH_NONE || !accepted)
      return;
    ++r->accepted;
  }
}

/* Runs the planned chunks of the requests whose `verify` is `verify` in
 * one call: @prefill_batch, where a request whose chunk ends what it knows
 * (its prompt, or its last token) takes its next token from the chunk's
 * logits, or @verify_batch, where each takes its tokens from its rows'
 * (take_verified). */
static tfm_status_code run_chunks(tfm_engine *e, int verify,
                                  tfm_engine_event *events, int32_t *count,
                                  tfm_status *status) {
  const char *name = verify ? "verify_batch" : "prefill_batch";
  int64_t rows = 0, chunks = 0;
  for (request *r = e->running; r; r = r->next) {
    if (!r->step_tokens || r->verify != verify)
      continue;
    for (int64_t i = 0; i < r->step_tokens; ++i) {
      int64_t at = r->computed + i; /* past the known tokens: drafts */
      e->tokens[rows] =
          at < r->length ? r->tokens[at] : r->drafts[at - r->length];
      e->positions[rows++] = (int32_t)at;
    }
    e->slots[chunks] = (int32_t)r->slot;
    e->lengths[chunks] = (int32_t)r->step_tokens;
    e->chunk_requests[chunks++] = r;
  }
  if (chunks == 0)
    return TFM_OK;
  tfm_tensor inputs[4] = {{e->tokens, TFM_DTYPE_I32, 1, {rows}, NULL},
                          {e->positions, TFM_DTYPE_I32, 1, {rows}, NULL},
                          {e->slots, TFM_DTYPE_I32, 1, {chunks}, NULL},
                          {e->lengths, TFM_DTYPE_I32, 1, {chunks}, NULL}};
  tfm_tensor cache = {tfm_kv_pages_base(e->pages), e->cache_dtype, 6, {0},
                      NULL};
  tfm_tensor rings = {e->rings, e->cache_dtype, 6, {0}, NULL};
  tfm_tensor states = {e->states, TFM_DTYPE_F32, 2, {0}, NULL};
  memcpy(cache.shape, e->cache_shape, sizeof e->cache_shape);
  memcpy(rings.shape, e->rings_shape, sizeof e->rings_shape);
  memcpy(states.shape, e->states_shape, sizeof e->states_shape);
  /* The paged cache, then the rings and the states where the model has
   * them, in the order the batched entry points list their caches. */
  const tfm_entry_point *entry = tfm_model_entry_point(e->model, name);
  tfm_tensor *caches[3], logits;
  for (int32_t i = 0; i < entry->num_caches && i < 3; ++i) {
    int32_t kind = e->desc->caches[entry->caches[i]].kind;
    caches[i] = kind == TFM_CACHE_SELF_ATTENTION_RINGS ? &rings
                : kind == TFM_CACHE_RECURRENT_STATE    ? &states
                                                       : &cache;
  }
  tfm_status_code code =
      tfm_model_call(e->model, name, inputs, 4, caches, &logits, 1, status);
  if (code != TFM_OK) {
    /* The call may have advanced some recurrent layers' states and not
     * others: those sequences start again from their first token. */
    if (e->states)
      for (int64_t c = 0; c < chunks; ++c) {
        e->chunk_requests[c]->computed = 0;
        e->chunk_requests[c]->state = kPrefilling;
      }
    return code;
  }
  int64_t vocab = e->desc->vocab_size;
  if (verify) {
    float *row = logits.data;
    for (int64_t c = 0; c < chunks; ++c) {
      take_verified(e, e->chunk_requests[c], row, e->lengths[c] - 1, events,
                    count);
      row += e->lengths[c] * vocab;
    }
    tfm_tensor_release(&logits);
    return TFM_OK;
  }
  memcpy(e->logits, logits.data, (size_t)(chunks * vocab) * sizeof(float));
  tfm_tensor_release(&logits);
  for (int64_t c = 0; c < chunks; ++c) {
    request *r = e->chunk_requests[c];
    if (r->state == kPrefilling)
      e->stats.prompt_tokens += r->step_tokens;
    r->computed += r->step_tokens;
    if (e->options.share_prefixes)
      tfm_kv_pages_publish(e->pages, r->slot, r->tokens, r->computed);
    if (r->computed == r->length)
      take_token(e, r, e->logits + c * vocab, &events[(*count)++]);
  }
  return TFM_OK;
}

tfm_status_code tfm_engine_step(tfm_engine *e, tfm_engine_event *events,
                                int32_t capacity, int32_t *count,
                                tfm_status *status) {
  if (!e || !events || !count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_step: NULL %s",
                    !e ? "engine" : !events ? "events" : "count");
  *count = 0;
  int32_t needed = (2 + e->options.max_drafts) * e->options.max_sequences;
  if (capacity < needed)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_step: room for %d events, the engine may "
                    "need %d",
                    capacity, needed);
  ++e->stats.steps;
  admit(e);
  tfm_status_code code = plan_step(e, events, count, status);
  if (code == TFM_OK)
    code = run_chunks(e, 0, events, count, status);
  if (code == TFM_OK && e->verifying)
    code = run_chunks(e, 1, events, count, status);
  return code == TFM_OK ? tfm_ok(status) : code;
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
