/*===- engine_internal.h - what the engine's two files share ------------===//
 *
 * The batch engine's requests and state (tfm_engine.h): engine.c makes,
 * feeds and frees an engine and its requests; engine_step.c runs its
 * steps, with engine.c's request bookkeeping.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_ENGINE_ENGINE_INTERNAL_H
#define TFM_RUNTIME_ENGINE_ENGINE_INTERNAL_H

#include "tfm/tfm_engine.h"

#include "runtime/core/ring_keep.h"
#include "runtime/engine/kv_pages.h"

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
  int64_t slot;        /* -1 while waiting */
  int64_t step_tokens; /* this step's chunk (0: none) */
  /* Speculative decoding by prompt lookup (lookup_ngram > 0): this step's
   * drafts after the last chosen token (checked through @verify_batch
   * where `verify`), and the totals its events report. */
  int32_t lookup_ngram, draft_max;
  int32_t *drafts; /* [draft_max] */
  /* With the engine's draft model: the drafts this step may have, and
   * those proposed so far (engine_draft.c). */
  int64_t draft_room, draft_count;
  int64_t drafted, accepted;
  int verify;
  /* Its rings' rows the step's drafts overwrite, put back for those
   * rejected (runtime/core/ring_keep.h). */
  tfm_ring_keep ring_keep;
  /* The LoRA adapter it runs with (0: none) and its slot, held until the
   * request is freed (runtime/core/lora_bank.h). */
  int32_t lora, lora_slot;
  /* A vision-language model's prompt: its placeholders' rows
   * ([placeholders, image_width]; NULL: none), each prompt position's row
   * (-1: a token; image_span of them, the prompt's) and its row's hash
   * for the prefix table (0: a token), the first position that has one
   * (the prompt's length without), and whether this step's chunk is rows
   * (engine_images.c). */
  float *image_rows;
  int32_t *image_row;
  uint64_t *row_keys;
  int64_t image_span, first_image;
  int step_rows;
  int64_t admitted;     /* admission order: the last admitted is preempted */
  struct request *next; /* in the waiting queue or the running list */
} request;

struct tfm_engine {
  tfm_model *model;
  const tfm_model_desc *desc;
  tfm_engine_options options;
  tfm_kv_pages *pages;
  int64_t capacity;       /* positions per sequence */
  int64_t cache_shape[6]; /* [slots, layers, 2, capacity, kv_heads, dim] */
  size_t slot_bytes;      /* one sequence's whole cache */
  int32_t cache_dtype;    /* f32, bf16, f16, or an int8 cache's rows */
  /* Windowed layers' rings where the model keeps them apart ([slots,
   * rings, 2, window, kv_heads, dim]; NULL: none): plain memory, each
   * slot's rewritten as its sequence goes on. */
  void *rings;
  int64_t rings_shape[6];
  tfm_ring_geometry ring_geometry; /* one slot's rings */
  /* Recurrent layers' states ([slots, elements] f32; NULL: none), read as
   * zeros by a chunk at position 0, so a reused slot needs no clearing. */
  float *states;
  int64_t states_shape[2];
  /* With max_drafts: each slot's states before its step's drafts, which
   * a request whose drafts are rejected goes back to (and runs the
   * positions it keeps again). */
  float *state_keeps;
  int64_t *free_slots, free_slot_count;
  request *waiting, *running; /* FIFO queue; admission order */
  int64_t next_id, admissions;
  int32_t *tokens, *positions; /* the step's rows: [max_step_tokens] */
  int32_t *row_adapters;       /* each row's adapter slot (-1: none) */
  int verifying;               /* some of this step's chunks have drafts */
  /* A vision-language model's rows a row (0: the model takes none), and
   * this step's chunks of rows: [prefill_chunk, image_width]. */
  int64_t image_width;
  float *step_rows;
  int stepping_rows;           /* some of this step's chunks are rows */
  /* The most image rows a request's step may take (an image's, where they
   * see each other both ways: tfm_model_image_rows_per_call). */
  int64_t image_rows_per_step;
  int32_t *slots, *lengths;    /* its chunks: [max_sequences] */
  request **chunk_requests;    /* [max_sequences] */
  /* The draft model's side (options.draft_model; NULL: none). */
  struct tfm_engine_draft *draft;
  tfm_engine_stats stats;
};

/* The batched entry points' cache of `kind` in `desc` (rank 6, or 2 for
 * the recurrent states): the engine's sequences; NULL where none. */
const tfm_cache_desc *tfm_engine_batched_cache(const tfm_model_desc *desc,
                                               int32_t kind);

/* Image rows (engine_images.c). The rows a row of `model`'s
 * @prefill_batch_embeddings takes (0: none). */
int64_t tfm_engine_image_width(const tfm_model *model);
/* Submit's part: `q`'s image rows checked against its placeholders and
 * copied into `r`. */
tfm_status_code tfm_engine_take_images(tfm_engine *e, request *r,
                                       const tfm_engine_request *q,
                                       tfm_status *status);
/* The chunk from `position` (at most `most` positions) a step may run:
 * consecutive rows (*rows 1) or tokens. */
int64_t tfm_engine_run_at(const request *r, int64_t position, int64_t most,
                          int *rows);
/* `r`'s positions as the prefix table keys them: its tokens, its image
 * rows' hashes, its adapter. */
tfm_kv_prefix tfm_engine_prefix(const request *r);
/* `r`'s step chunk of rows into `into` ([step_tokens, image_width]). */
void tfm_engine_copy_step_rows(const tfm_engine *e, const request *r,
                               float *into);

/* The draft model (engine_draft.c): its cache and what each slot holds. */
typedef struct tfm_engine_draft tfm_engine_draft;
/* Checks `model` as `e`'s draft (a decoder with @prefill_batch whose cache
 * is rows alone, as long a context, the same vocabulary) and makes its
 * side. */
tfm_status_code tfm_engine_draft_new(tfm_engine *e, tfm_model *model,
                                     tfm_engine_draft **out,
                                     tfm_status *status);
void tfm_engine_draft_free(tfm_engine_draft *draft);
/* A slot given back: its blocks freed, nothing held. */
void tfm_engine_draft_release(tfm_engine_draft *draft, int64_t slot);
/* Proposes drafts[0..draft_count) for every running request with
 * draft_room > 0 (each at most that many). A failed call leaves every
 * draft_count 0 and returns its status. */
tfm_status_code tfm_engine_draft_run(tfm_engine *e, tfm_status *status);

/* Unlinks `r` from `list` (the waiting queue or the running list). */
void tfm_engine_unlink(request **list, request *r);

/* Gives `r`'s slot and its blocks back (none held: nothing). */
void tfm_engine_give_back_slot(tfm_engine *e, request *r);

/* Ends `r`: its slot's blocks back to the pool, out of its list, freed. */
void tfm_engine_retire(tfm_engine *e, request *r);

#endif /* TFM_RUNTIME_ENGINE_ENGINE_INTERNAL_H */
