/*===- tfm_engine.h - serving many sequences: the batch engine ----------===//
 *
 * The engine decodes many sequences of one language model together: each
 * step is one @prefill_batch call over the next token of every sequence
 * that is generating and chunks of waiting prompts (at most
 * `prefill_chunk` prompt tokens a step, so that a long prompt does not
 * stall the others), each weight read once for all of them. Sequences join
 * (tfm_engine_submit) and leave (finished, or tfm_engine_cancel) between steps:
 * continuous batching.
 *
 * KV memory is a pool of fixed-size blocks bounded in bytes (runtime/
 * kv_pages.h): a sequence holds blocks for the positions it has, not for
 * the model's maximum context, and sequences whose prompts begin with the
 * same tokens share those blocks. When the pool runs out, the sequence
 * admitted last gives its blocks back and waits to be prefilled again
 * (with what it generated so far): preemption by recomputation, so a
 * sequence's tokens are the same whatever else runs.
 *
 * Speculative decoding (max_drafts > 0, a model compiled with tfmc
 * --speculative): a request with lookup_ngram drafts, after each chosen
 * token, the tokens that followed the latest earlier occurrence of its
 * text's last tokens (tfm_generate's prompt lookup), and with a draft
 * model (draft_model) every other request drafts with it, greedily; the
 * step checks the drafts with the chosen token in one @verify_batch call
 * over the generating sequences (prompt chunks run in a @prefill_batch
 * call of their own) and keeps those the request then chooses itself, so
 * its text is the same as without drafts. Rejected drafts' positions are
 * written over next step; the ring rows and recurrent states they changed
 * are put back.
 *
 * Models need @prefill_batch (tfmc's default for decoder language
 * models). An engine is used by one thread at a time; it owns
 * no thread (the caller steps it).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_ENGINE_H
#define TFM_ENGINE_H

#include "tfm/tfm_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

typedef struct {
  int32_t max_sequences; /* generating at once; 0: 16 */
  int64_t kv_pool_bytes; /* bound on KV memory; 0: max_sequences full
                            contexts */
  int32_t block_positions; /* positions per KV block (at least; rounded up
                              to whole pages); 0: 8; at most the model's
                              context (more is refused) */
  int64_t prefill_chunk;   /* prompt tokens prefilled per step; 0: 512 */
  int share_prefixes;      /* share blocks of common prefixes (1: yes;
                              never for a model with rings or recurrent
                              states: see kv_ring_bytes) */
  int32_t max_drafts;      /* speculative decoding: drafts a request may
                              have checked in one step, at most 64 (needs
                              @verify_batch); 0: none */
  /* A draft model (NULL: none; needs max_drafts): every request that does
   * not draft by prompt lookup drafts with it, greedily, in @prefill_batch
   * calls of its own over a cache of its own. It must keep every
   * position's rows (no rings or recurrent states), hold as many positions
   * and spell every id alike; the caller keeps it loaded while the engine
   * lives. */
  tfm_model *draft_model;
  /* A request's drafts stop where the draft's top token is less likely
   * than this (0.75; 0: never), as tfm_generate_options.draft_p_min. */
  float draft_p_min;
  /* A model split into pipeline stages (tfmc --pipeline-stages): a step's
   * chunks run as micro-batches of whole chunks and at least this many
   * rows each, so that the stages work at once, each on another
   * micro-batch. Fewer rows run as one: a micro-batch reads its stage's
   * weights again, which costs more than it overlaps where a batch is too
   * small to keep the stage's cores computing. 0: 64. */
  int64_t micro_batch_rows;
} tfm_engine_options;

/* max_sequences 16, the pool for 16 full contexts, blocks of 8, prefill
 * chunks of 512, prefixes shared, no drafts, no draft model, draft_p_min
 * 0.75, micro-batches of 64 rows. */
tfm_engine_options tfm_engine_default_options(void);

typedef struct tfm_engine tfm_engine;

tfm_status_code tfm_engine_new(tfm_model *model,
                               const tfm_engine_options *options,
                               tfm_engine **engine, tfm_status *status);
void tfm_engine_free(tfm_engine *engine);

typedef struct {
  const int32_t *prompt; /* copied by submit */
  int64_t prompt_count;  /* >= 1 */
  int64_t max_new_tokens; /* > 0; the context bounds it too */
  tfm_sampler_options sampler;
  int ignore_eos; /* keep going past the end-of-sequence token */
  /* The grammar the request's text must match (tfm_grammar_new; NULL:
   * none): each request its own, which a successful submit takes (the
   * engine frees it with the request). Where it allows no token the
   * request finishes: TFM_FINISH_EOS where its match is whole. */
  tfm_grammar *grammar;
  /* Speculative decoding by prompt lookup (the engine's max_drafts > 0):
   * the n-gram length, 1 to 64; 0: off. */
  int32_t lookup_ngram;
  int32_t draft_max; /* drafts a step; 0: the engine's max_drafts */
  /* The LoRA adapter the request runs with (tfm_lora_load; 0: none):
   * requests with different adapters share a step, each row its own; a
   * prompt's blocks are shared only between requests of one adapter. */
  int32_t lora;
  /* A vision-language model's images (tfmc's llava folders): the rows of
   * the prompt's placeholders (desc->image_token), one a placeholder in
   * order, [image_row_count, hidden] as @encode_image returns them
   * (copied by submit); NULL and 0: none. A prompt's positions are shared
   * with other requests whose tokens and rows agree (each row keyed by a
   * hash of its values), so the same image is computed once. */
  const float *image_rows;
  int64_t image_row_count;
} tfm_engine_request;

/* Queues a request; *id names it in events and in cancel. A prompt the
 * model cannot hold with one more token (TFM_ERROR_CONTEXT_OVERFLOW), bad
 * ids (TFM_ERROR_OUT_OF_RANGE) or options are refused here. */
tfm_status_code tfm_engine_submit(tfm_engine *engine,
                                  const tfm_engine_request *request,
                                  int64_t *id, tfm_status *status);

/* Removes a request, waiting or running; its blocks are free at once.
 * TFM_ERROR_NOT_FOUND for an id that is not (or no longer) there. */
tfm_status_code tfm_engine_cancel(tfm_engine *engine, int64_t id,
                                  tfm_status *status);

typedef enum {
  TFM_FINISH_NONE = 0,   /* still generating */
  TFM_FINISH_LENGTH = 1, /* max_new_tokens, or the context is full */
  TFM_FINISH_EOS = 2,    /* the end-of-sequence token (not emitted) */
  TFM_FINISH_ERROR = 3   /* could not go on (see the step's status) */
} tfm_finish_reason;

typedef struct {
  int64_t id;
  int32_t token;            /* -1 when the event only finishes */
  tfm_finish_reason finish; /* the request is gone when not NONE */
  /* The request's speculative decoding so far: tokens drafted, and how
   * many of them it chose (each saved a step). */
  int64_t drafted_tokens, accepted_tokens;
} tfm_engine_event;

/* One step: admits, prefills, decodes. Writes the step's events to
 * events[0..*count): at most two per request (the first token of a prompt
 * prefilled, then a decoded one) and one more per accepted draft, so
 * capacity must be (2 + max_drafts) * max_sequences.
 * A model call that fails (out of memory) returns its status after the
 * events of what ran; the requests it concerned did not advance and run
 * again next step (a model with recurrent states prefills them again from
 * their first token: the failed call may have advanced some layers'
 * states). A request the KV pool cannot hold even alone gets a
 * TFM_FINISH_ERROR event and the step returns TFM_ERROR_OUT_OF_MEMORY. */
tfm_status_code tfm_engine_step(tfm_engine *engine, tfm_engine_event *events,
                                int32_t capacity, int32_t *count,
                                tfm_status *status);

typedef struct {
  int32_t running;   /* holding a slot: prefilling or generating */
  int32_t waiting;   /* queued */
  int64_t kv_blocks, kv_blocks_used, kv_blocks_shared, kv_blocks_cached;
  int64_t kv_block_bytes, kv_block_positions;
  int kv_paged; /* 0: the model's cache capacity is no whole number of
                   pages per layer, so each slot's cache is plain memory,
                   the blocks only count it, and nothing is shared */
  int64_t prefix_tokens_reused; /* prompt tokens not prefilled: shared */
  int64_t prompt_tokens, generated_tokens, preemptions, steps;
  /* Windowed layers' rings, where the model keeps them beside the paged
   * layers (GPT-Neo's and Gemma 2's local layers): every slot's, allocated
   * with the engine (0: none). Such a model shares no prefixes, whatever
   * share_prefixes says: a ring is rewritten as its sequence goes on. */
  int64_t kv_ring_bytes;
  /* Recurrent layers' states (Gated DeltaNet's), every slot's, allocated
   * with the engine (0: none). Such a model shares no prefixes either. */
  int64_t recurrent_state_bytes;
  int64_t drafted_tokens, accepted_tokens; /* speculative decoding's */
  /* The model's calls the steps made: a step's batch is one, or one a
   * micro-batch (micro_batch_rows). */
  int64_t model_calls;
} tfm_engine_stats;
void tfm_engine_get_stats(const tfm_engine *engine, tfm_engine_stats *stats);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* TFM_ENGINE_H */
