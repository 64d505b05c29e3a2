/*===- engine_step.c - the batch engine's step ----------------------------===//
 *
 * See tfm_engine.h. A step admits waiting requests to free slots, plans
 * each running request's chunk (a prompt chunk while the step's prefill
 * budget lasts, or the last generated token), backs its positions in the
 * paged pool (preempting the requests admitted last while it is short),
 * and runs the chunks in one @prefill_batch call: every chunk of its own
 * sequence. A request's tokens (prompt, then generated) are kept whole so
 * that a preempted request can be prefilled again. With drafts
 * (speculative decoding), the generating requests' chunks are their last
 * token and its drafts, checked in a @verify_batch call of their own
 * (every row's logits), and the prompt chunks go to @prefill_batch alone.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/engine/engine_internal.h"

#include "runtime/core/lora_bank.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"
#include "runtime/generate/speculation.h"

#include <stdlib.h>
#include <string.h>

/* Moves the last admitted running request back to the front of the queue,
 * its blocks freed; it will be prefilled again with all its tokens. */
static request *preempt_last(tfm_engine *e) {
  request *last = NULL;
  for (request *r = e->running; r; r = r->next)
    if (!last || r->admitted > last->admitted)
      last = r;
  if (!last)
    return NULL;
  tfm_engine_give_back_slot(e, last);
  tfm_engine_unlink(&e->running, last);
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
  tfm_engine_retire(e, r);
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
    tfm_kv_prefix prefix = tfm_engine_prefix(r);
    r->computed = e->options.share_prefixes
                      ? tfm_kv_pages_share_prefix(e->pages, r->slot, &prefix,
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
    /* -1: memory ran out, or the grammar is too ambiguous to follow. */
    event->finish = allowed < 0 ? TFM_FINISH_ERROR
                    : tfm_grammar_matcher_may_end(r->matcher)
                        ? TFM_FINISH_EOS
                        : TFM_FINISH_LENGTH;
    tfm_engine_retire(e, r);
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
    tfm_engine_retire(e, r);
  else
    r->state = kGenerating;
}

/* The drafts `r` may have this step: as many as it may still generate
 * after the next and the context holds. Their positions are backed only
 * where the pool has room without preempting anyone (drafts are a bet,
 * never a reason to evict). Prompt lookup drafts at once (draft()); the
 * draft model after the step is planned, for every request at once. */
static int64_t draft_room(const tfm_engine *e, const request *r) {
  int64_t room = r->draft_max;
  /* Rings: a step's rows must fit in one ring, whose overwritten rows are
   * kept to be put back (none where the rings differ in length). */
  if (e->rings && room > e->ring_geometry.ring - 1)
    room = e->ring_geometry.ring - 1;
  int64_t left = r->max_new_tokens - r->generated - 1;
  int64_t positions = e->capacity - r->length;
  if (left < room)
    room = left;
  if (positions < room)
    room = positions;
  return room > 0 ? room : 0;
}

/* `r`'s chunk takes its `drafts` drafts too, where the pool backs them. */
static void take_drafts(tfm_engine *e, request *r, int64_t drafts) {
  tfm_status ignored;
  if (drafts &&
      tfm_kv_pages_reserve(e->pages, r->slot, r->computed + 1 + drafts,
                           &ignored) != TFM_OK)
    drafts = 0;
  r->step_tokens += drafts;
  e->verifying |= drafts > 0;
}

static void draft(tfm_engine *e, request *r) {
  int64_t room = draft_room(e, r);
  if (room > 0)
    take_drafts(e, r,
                tfm_speculation_lookup(r->lookup_ngram, r->tokens,
                                       r->length - 1, r->tokens[r->length - 1],
                                       room, r->drafts));
}

/* Chooses the step's chunks in admission order: each generating request's
 * next token (and its drafts), and prompt chunks while the step's prefill
 * budget lasts (r->step_tokens), and backs their positions, preempting the
 * requests admitted last while the pool is short. */
static tfm_status_code plan_step(tfm_engine *e, tfm_engine_event *events,
                                 int32_t *count, tfm_status *status) {
  int64_t budget = e->options.prefill_chunk;
  e->verifying = e->stepping_rows = 0;
  for (request *r = e->running; r; r = r->next)
    r->step_tokens = r->draft_room = r->step_rows = 0;
  for (request *r = e->running; r; r = r->next) {
    int64_t n = 1;
    if (r->state == kPrefilling) {
      n = r->length - r->computed < budget ? r->length - r->computed : budget;
      if (n <= 0)
        continue;
      /* Text or an image's rows, not both: each runs in its own call.
       * Rows that see each other both ways run an image to a step, or
       * wait for a step with room for it (the first prefill of a step
       * always has: tfm_engine_new makes the chunk hold an image). */
      n = tfm_engine_run_at(r, r->computed, n, &r->step_rows);
      if (r->step_rows && e->image_rows_per_step < INT64_MAX) {
        int64_t whole = tfm_engine_run_at(
            r, r->computed, r->length - r->computed, &r->step_rows);
        if (whole > e->image_rows_per_step)
          whole = e->image_rows_per_step;
        if (whole > n) {
          r->step_rows = 0;
          continue;
        }
        n = whole;
      }
      e->stepping_rows |= r->step_rows;
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
    else if (e->draft)
      r->draft_room = draft_room(e, r);
  }
  /* The draft model's proposals: none this step where its call fails
   * (the step goes on without them). */
  if (e->draft) {
    tfm_status ignored;
    (void)tfm_engine_draft_run(e, &ignored);
    for (request *r = e->running; r; r = r->next)
      if (r->draft_room > 0)
        take_drafts(e, r, r->draft_count);
  }
  /* Drafts are checked in a call of their own, with every row's logits. */
  for (request *r = e->running; r; r = r->next)
    r->verify = e->verifying && r->step_tokens && r->state == kGenerating;
  return TFM_OK;
}

/* Takes `r`'s tokens from @verify_batch's logits of its chunk (`rows`: the
 * last chosen token's, then each draft's): the next token, then one more
 * for each draft the request chose itself, until it chooses otherwise or
 * ends. Each row taken is a position the cache keeps. Returns whether `r`
 * goes on (else it ended and is freed). */
static int take_verified(tfm_engine *e, request *r, float *rows, int64_t drafts,
                         tfm_engine_event *events, int32_t *count) {
  int64_t vocab = e->desc->vocab_size;
  r->drafted += drafts;
  e->stats.drafted_tokens += drafts;
  for (int64_t i = 0; i <= drafts; ++i) {
    ++r->computed;
    if (e->options.share_prefixes) {
      tfm_kv_prefix prefix = tfm_engine_prefix(r);
      tfm_kv_pages_publish(e->pages, r->slot, &prefix, r->computed);
    }
    int32_t drafted = i < drafts ? r->drafts[i] : -1;
    tfm_engine_event *event = &events[(*count)++];
    take_token(e, r, rows + i * vocab, event); /* may retire r */
    int accepted = event->token >= 0 && event->token == drafted;
    if (accepted) {
      ++event->accepted_tokens;
      ++e->stats.accepted_tokens;
    }
    if (event->finish != TFM_FINISH_NONE || !accepted)
      return event->finish == TFM_FINISH_NONE;
    ++r->accepted;
  }
  return 1;
}

/* One slot's rings in the engine's. */
static char *slot_rings(const tfm_engine *e, int64_t slot) {
  const tfm_ring_geometry *g = &e->ring_geometry;
  return (char *)e->rings + (size_t)slot * (size_t)g->planes * g->plane_bytes;
}

/* One slot's recurrent states in `states` (the engine's or their kept
 * copy). */
static float *slot_states(const tfm_engine *e, float *states, int64_t slot) {
  return states + slot * e->states_shape[1];
}

/* After `r`'s verify from position `start`, which kept fewer positions
 * than it ran: its states as before the verify, and those positions run
 * again by its next chunks (a prompt's, so that the last takes the next
 * token). */
static void go_back_in_states(tfm_engine *e, request *r, int64_t start) {
  memcpy(slot_states(e, e->states, r->slot),
         slot_states(e, e->state_keeps, r->slot),
         (size_t)e->states_shape[1] * sizeof(float));
  r->computed = start;
  r->state = kPrefilling;
}

/* After `r`'s verify of positions up to `held`: the ring rows of the
 * positions it dropped put back, or, where they were not kept (memory ran
 * out), its sequence prefilled again from its first token. */
static void put_back_rings(tfm_engine *e, request *r, int64_t held) {
  if (tfm_ring_keep_covers(&r->ring_keep, r->computed, held) &&
      tfm_ring_keep_restore(e->model, &e->ring_geometry, &r->ring_keep,
                            slot_rings(e, r->slot), r->computed, held))
    return;
  r->computed = 0;
  r->state = kPrefilling;
}

/* Most micro-batches a step's call runs as. */
enum { MAX_MICRO_BATCHES = 64 };

/* The micro-batches of a step's `chunks` chunks of `rows` rows (e->lengths)
 * for a model in pipeline stages: part p is chunks [bounds[p],
 * bounds[p + 1]), the parts about equal in rows. Returns their count: 1
 * for any other model, or a batch of fewer rows than two micro-batches'.
 * More parts than stages still pay: m parts take m + P - 1 stage-times of
 * a part, against P of the whole batch. */
static int32_t plan_micro_batches(const tfm_engine *e, int64_t rows,
                                  int64_t chunks, int64_t *bounds) {
  int64_t parts = 1;
  if (e->desc->pipeline_stages > 1) {
    parts = rows / e->options.micro_batch_rows;
    if (parts > chunks)
      parts = chunks;
    if (parts > MAX_MICRO_BATCHES)
      parts = MAX_MICRO_BATCHES;
  }
  /* Cut where the rows so far reach the next part's share, each part
   * keeping at least micro_batch_rows rows (a chunk is not split: a step
   * of one long chunk and a few single rows stays whole). */
  int64_t least = e->options.micro_batch_rows, seen = 0, at_cut = 0;
  int32_t made = 1;
  bounds[0] = 0;
  for (int64_t c = 0; c + 1 < chunks && made < parts; ++c) {
    seen += e->lengths[c];
    if (seen * parts >= rows * made && seen - at_cut >= least &&
        rows - seen >= least) {
      bounds[made++] = c + 1;
      at_cut = seen;
    }
  }
  bounds[made] = chunks;
  return made;
}

/* What a step's call runs: text chunks, image rows' chunks, or drafts. */
typedef enum { STEP_TOKENS, STEP_IMAGE_ROWS, STEP_VERIFY } step_kind;

/* Runs the planned chunks of `kind` in one call (or one a micro-batch,
 * plan_micro_batches): @prefill_batch (@prefill_batch_embeddings for
 * image rows), where a request whose chunk ends what it knows (its
 * prompt, or its last token) takes its next token from the chunk's
 * logits, or @verify_batch, where each takes its tokens from its rows'
 * (take_verified). */
static tfm_status_code run_chunks(tfm_engine *e, step_kind kind,
                                  tfm_engine_event *events, int32_t *count,
                                  tfm_status *status) {
  int verify = kind == STEP_VERIFY, image = kind == STEP_IMAGE_ROWS;
  const char *name = verify  ? "verify_batch"
                     : image ? "prefill_batch_embeddings"
                             : "prefill_batch";
  int64_t rows = 0, chunks = 0;
  for (request *r = e->running; r; r = r->next) {
    if (!r->step_tokens || r->verify != verify || r->step_rows != image)
      continue;
    if (image)
      tfm_engine_copy_step_rows(e, r, e->step_rows + rows * e->image_width);
    for (int64_t i = 0; i < r->step_tokens; ++i) {
      int64_t at = r->computed + i; /* past the known tokens: drafts */
      e->tokens[rows] =
          at < r->length ? r->tokens[at] : r->drafts[at - r->length];
      e->row_adapters[rows] = r->lora ? r->lora_slot : -1;
      e->positions[rows++] = (int32_t)at;
    }
    e->slots[chunks] = (int32_t)r->slot;
    e->lengths[chunks] = (int32_t)r->step_tokens;
    e->chunk_requests[chunks++] = r;
  }
  if (chunks == 0)
    return TFM_OK;
  /* The ring rows the drafts overwrite (draft() kept each chunk within a
   * ring). */
  for (int64_t c = 0; verify && e->rings && c < chunks; ++c) {
    request *r = e->chunk_requests[c];
    (void)tfm_ring_keep_take(e->model, &e->ring_geometry, &r->ring_keep,
                             slot_rings(e, r->slot), r->computed,
                             r->step_tokens);
  }
  /* And their states, to go back to where drafts are rejected. */
  for (int64_t c = 0; verify && e->states && c < chunks; ++c) {
    int64_t slot = e->chunk_requests[c]->slot;
    memcpy(slot_states(e, e->state_keeps, slot),
           slot_states(e, e->states, slot),
           (size_t)e->states_shape[1] * sizeof(float));
  }
  tfm_tensor cache = {
      tfm_kv_pages_base(e->pages), e->cache_dtype, 6, {0}, NULL};
  tfm_tensor rings = {e->rings, e->cache_dtype, 6, {0}, NULL};
  tfm_tensor states = {e->states, TFM_DTYPE_F32, 2, {0}, NULL};
  memcpy(cache.shape, e->cache_shape, sizeof e->cache_shape);
  memcpy(rings.shape, e->rings_shape, sizeof e->rings_shape);
  memcpy(states.shape, e->states_shape, sizeof e->states_shape);
  /* The paged cache, then the rings and the states where the model has
   * them, in the order the batched entry points list their caches. */
  const tfm_entry_point *entry = tfm_model_entry_point(e->model, name);
  tfm_tensor *caches[3];
  for (int32_t i = 0; i < entry->num_caches && i < 3; ++i) {
    int32_t kind = e->desc->caches[entry->caches[i]].kind;
    caches[i] = kind == TFM_CACHE_SELF_ATTENTION_RINGS ? &rings
                : kind == TFM_CACHE_RECURRENT_STATE    ? &states
                                                       : &cache;
  }
  /* Each row runs with its request's adapter. */
  tfm_lora_rows adapters = {tfm_model_lora_bank(e->model), e->row_adapters,
                            rows};
  const tfm_lora_rows *outer = tfm_lora_bind(adapters.bank ? &adapters : NULL);
  /* Micro-batches (one for most models; a model split over ranks takes no
   * adapters), each its chunks' rows. */
  int64_t bounds[MAX_MICRO_BATCHES + 1] = {0, chunks};
  int32_t parts =
      adapters.bank ? 1 : plan_micro_batches(e, rows, chunks, bounds);
  tfm_tensor inputs[MAX_MICRO_BATCHES][4], logits[MAX_MICRO_BATCHES];
  int64_t part_start = 0;
  for (int32_t p = 0; p < parts; ++p) {
    int64_t first = bounds[p], count = bounds[p + 1] - first, part_rows = 0;
    for (int64_t c = first; c < first + count; ++c)
      part_rows += e->lengths[c];
    tfm_tensor part[4] = {
        {e->tokens + part_start, TFM_DTYPE_I32, 1, {part_rows}, NULL},
        {e->positions + part_start, TFM_DTYPE_I32, 1, {part_rows}, NULL},
        {e->slots + first, TFM_DTYPE_I32, 1, {count}, NULL},
        {e->lengths + first, TFM_DTYPE_I32, 1, {count}, NULL}};
    if (image)
      part[0] = (tfm_tensor){e->step_rows + part_start * e->image_width,
                             TFM_DTYPE_F32,
                             2,
                             {part_rows, e->image_width},
                             NULL};
    memcpy(inputs[p], part, sizeof part);
    part_start += part_rows;
  }
  tfm_status_code code = tfm_model_call_parts(
      e->model, name, parts, &inputs[0][0], 4, caches, logits, 1, status);
  e->stats.model_calls += parts;
  tfm_lora_bind(outer);
  if (code != TFM_OK) {
    /* The call may have advanced some recurrent layers' states and not
     * others, or written over ring rows the positions before its chunks
     * still read: those sequences start again from their first token. */
    if (e->states || e->rings)
      for (int64_t c = 0; c < chunks; ++c) {
        e->chunk_requests[c]->computed = 0;
        e->chunk_requests[c]->state = kPrefilling;
      }
    return code;
  }
  /* @prefill_batch's logits: a row a chunk; @verify_batch's: a row a
   * token; a micro-batch's in its own tensor. */
  int64_t vocab = e->desc->vocab_size;
  float *row = NULL;
  for (int64_t c = 0, part = -1; c < chunks; ++c) {
    if (c == bounds[part + 1])
      row = logits[++part].data;
    request *r = e->chunk_requests[c];
    if (verify) {
      int64_t start = r->computed, held = start + e->lengths[c];
      if (take_verified(e, r, row, e->lengths[c] - 1, events, count) &&
          r->computed < held) {
        if (e->rings)
          put_back_rings(e, r, held);
        if (e->states && r->computed > 0)
          go_back_in_states(e, r, start);
      }
      row += e->lengths[c] * vocab;
      continue;
    }
    if (r->state == kPrefilling)
      e->stats.prompt_tokens += r->step_tokens;
    r->computed += r->step_tokens;
    if (e->options.share_prefixes) {
      tfm_kv_prefix prefix = tfm_engine_prefix(r);
      tfm_kv_pages_publish(e->pages, r->slot, &prefix, r->computed);
    }
    if (r->computed == r->length)
      take_token(e, r, row, &events[(*count)++]);
    row += vocab;
  }
  for (int32_t p = 0; p < parts; ++p)
    tfm_tensor_release(&logits[p]);
  return TFM_OK;
}

tfm_status_code tfm_engine_step(tfm_engine *e, tfm_engine_event *events,
                                int32_t capacity, int32_t *count,
                                tfm_status *status) {
  if (!e || !events || !count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_engine_step: NULL %s",
                    !e        ? "engine"
                    : !events ? "events"
                              : "count");
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
    code = run_chunks(e, STEP_TOKENS, events, count, status);
  if (code == TFM_OK && e->stepping_rows)
    code = run_chunks(e, STEP_IMAGE_ROWS, events, count, status);
  if (code == TFM_OK && e->verifying)
    code = run_chunks(e, STEP_VERIFY, events, count, status);
  return code == TFM_OK ? tfm_ok(status) : code;
}
