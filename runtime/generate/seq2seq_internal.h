/*===- seq2seq_internal.h - an encoder-decoder's decoding state ---------===//
 *
 * What greedy generation (seq2seq.c) and beam search (beam_search.c) share:
 * the source encoded once into the cross-attention cache, and the beams'
 * self-attention caches in slots of one buffer, decoded a token per beam
 * at a time: all beams in one @decode_batch call when the model has it
 * (the weights read once per step), else one @decode call per beam. A
 * beam's first continuation takes its parent's slot; further
 * continuations copy the positions written so far into a free one.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_GENERATE_SEQ2SEQ_INTERNAL_H
#define TFM_RUNTIME_GENERATE_SEQ2SEQ_INTERNAL_H

#include "tfm/tfm_runtime.h"

typedef struct tfm_seq2seq_state tfm_seq2seq_state;

/* Encodes `source` (@encode: ids, or a speech model's features) and makes
 * `beams` self-attention caches for `steps` decoder positions after the
 * `rules`' previous text (Whisper's; rules may be NULL), which it decodes
 * on the first beam at positions of their own: the caller's positions
 * count from the decoder start token. The model must be an
 * encoder-decoder with its caches and a decoder start token. */
tfm_status_code tfm_seq2seq_begin(tfm_model *model, const tfm_tensor *source,
                                  int beams, const tfm_generation_rules *rules,
                                  int64_t steps, tfm_seq2seq_state **state,
                                  tfm_status *status);
/* Decodes tokens[b] at `position` (after the previous text) on beam b for
 * b in [0, count); *logits ([count, vocab]) are the state's, the caller's
 * to change until the next step. */
tfm_status_code tfm_seq2seq_step(tfm_seq2seq_state *state, int count,
                                 const int32_t *tokens, int64_t position,
                                 float **logits, tfm_status *status);
/* The next step's beam `to` continues beam `from`, whose first `used`
 * positions after the previous text are written (recorded;
 * tfm_seq2seq_commit moves the caches, the previous text's too). */
tfm_status_code tfm_seq2seq_fork(tfm_seq2seq_state *state, int from, int to,
                                 int64_t used, tfm_status *status);
/* The forked beams become the beams: the first continuation of a beam
 * takes its cache without copying; only further ones copy the prefix. */
void tfm_seq2seq_commit(tfm_seq2seq_state *state);
void tfm_seq2seq_end(tfm_seq2seq_state *state);
/* @align (Whisper's alignment heads, for word timestamps) over tokens[0..n)
 * teacher-forced from position 0 against the state's cross cache:
 * *weights f32 [n, heads, source positions], released by the caller
 * (tfm_tensor_release). TFM_ERROR_NOT_FOUND where the model has no @align
 * (no alignment_heads when it was compiled). */
tfm_status_code tfm_seq2seq_align(tfm_seq2seq_state *state,
                                  const int32_t *tokens, int64_t n,
                                  tfm_tensor *weights, tfm_status *status);

/* The arguments every generation entry shares, checked before anything
 * runs: a model, a source tensor with data, a `count`, and `out` unless
 * `capacity` is 0; `function` names the entry in the message. */
tfm_status_code tfm_seq2seq_check_arguments(const char *function,
                                            const tfm_model *model,
                                            const tfm_tensor *source,
                                            const int32_t *out,
                                            int64_t capacity,
                                            const int64_t *count,
                                            tfm_status *status);
/* The model's cache descriptions: the cross cache, and one sequence's
 * self-attention cache (the one @decode takes); NULL where it has none. */
void tfm_seq2seq_find_caches(const tfm_model_desc *desc,
                             const tfm_cache_desc **self,
                             const tfm_cache_desc **cross);

/* The id of special token `spelling` (matched whole by the tokenizer:
 * Whisper's <|startofprev|>, <|de|>), or -1 where it has no such token. */
int32_t tfm_seq2seq_special_token(const tfm_tokenizer *tokenizer,
                                  const char *spelling);

/* The ids source[0..n) as a tensor (read only). */
tfm_tensor tfm_seq2seq_ids(const int32_t *source, int64_t n);

/* Whether `rules` (may be NULL) has every array its counts promise, and no
 * negative count or size (generation_rules.c). */
tfm_status_code tfm_generation_rules_check(const char *function,
                                           const tfm_generation_rules *rules,
                                           tfm_status *status);
/* Bans what `rules` forbid after sequence[0..length) (the decoder start
 * token first) in this step's `scores` (generation_rules.c). */
void tfm_apply_generation_rules(const tfm_generation_rules *rules,
                                const int32_t *sequence, int64_t length,
                                int64_t max_new_tokens, int32_t eos,
                                float *scores, int64_t vocab);

#endif /* TFM_RUNTIME_GENERATE_SEQ2SEQ_INTERNAL_H */
