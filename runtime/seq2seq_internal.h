/*===- seq2seq_internal.h - an encoder-decoder's decoding state ---------===//
 *
 * What greedy generation (seq2seq.c) and beam search (beam_search.c) share:
 * the source encoded once into the cross-attention cache, and one
 * self-attention cache per beam, decoded a token at a time through
 * @decode. A beam's first continuation takes its cache over; further
 * continuations copy the positions written so far.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_SEQ2SEQ_INTERNAL_H
#define TFM_RUNTIME_SEQ2SEQ_INTERNAL_H

#include "runtime/tfm_runtime.h"

typedef struct tfm_seq2seq_state tfm_seq2seq_state;

/* Encodes `source` (@encode: ids, or a speech model's features) and makes
 * `beams` self-attention caches for `steps` decoder positions; the model
 * must be an encoder-decoder with its caches and a decoder start token. */
tfm_status_code tfm_seq2seq_begin(tfm_model *model, const tfm_tensor *source,
                                  int beams, int64_t steps,
                                  tfm_seq2seq_state **state,
                                  tfm_status *status);
/* Decodes `token` at `position` on beam `beam`; *logits ([vocab]) are the
 * state's, the caller's to change until the next step. */
tfm_status_code tfm_seq2seq_step(tfm_seq2seq_state *state, int beam,
                                 int32_t token, int64_t position,
                                 float **logits, tfm_status *status);
/* The next step's beam `to` continues beam `from`: the first `used`
 * positions of its cache. The first continuation of a beam takes its
 * cache without copying; only further ones copy the prefix. */
tfm_status_code tfm_seq2seq_fork(tfm_seq2seq_state *state, int from, int to,
                                 int64_t used, tfm_status *status);
/* The forked caches become the beams. */
void tfm_seq2seq_commit(tfm_seq2seq_state *state);
void tfm_seq2seq_end(tfm_seq2seq_state *state);

/* Bans what `rules` forbid after sequence[0..length) (the decoder start
 * token first) in this step's `scores` (generation_rules.c). */
/* The ids source[0..n) as a tensor (read only). */
tfm_tensor tfm_seq2seq_ids(const int32_t *source, int64_t n);

void tfm_apply_generation_rules(const tfm_generation_rules *rules,
                                const int32_t *sequence, int64_t length,
                                int64_t max_new_tokens, int32_t eos,
                                float *scores, int64_t vocab);

#endif /* TFM_RUNTIME_SEQ2SEQ_INTERNAL_H */
