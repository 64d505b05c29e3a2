/*===- speculation.h - drafted tokens checked through @verify -----------===//
 *
 * Speculative decoding inside tfm_generate's loop. The loop chooses every
 * token from the model's logits as it always does; this only changes how
 * those logits are produced. After a chosen token, up to `max` tokens are
 * drafted (by prompt lookup, or greedily by a draft model) and written
 * with it through @verify in one call
 * (the weights read once for all of them); while the loop then chooses the
 * drafted tokens, their logits are already there and no call runs. The
 * first token it chooses otherwise ends the run of drafts: the rest are
 * dropped from the cache (tfm_session_truncate) and the chosen one goes on
 * as usual. Choosing from the same logits gives the same output, greedy or
 * sampled: both drafts are deterministic, and for a draft that proposes
 * one token with certainty the rejection rule of speculative sampling
 * (accept with probability p(x), else sample from p with x removed) is
 * exactly "sample from p, then compare".
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_GENERATE_SPECULATION_H
#define TFM_RUNTIME_GENERATE_SPECULATION_H

#include "tfm/tfm_runtime.h"

/* The longest lookup n-gram, and the most drafts one step checks. */
enum { TFM_SPECULATION_MAX_NGRAM = 64, TFM_SPECULATION_MAX_DRAFTS = 64 };

typedef struct {
  int32_t ngram, max; /* lookup n-gram length, drafts per step; 0: off */
  int64_t vocab;
  tfm_session *draft;  /* the draft model's session, or NULL */
  float p_min;         /* a draft's least top probability */
  int64_t draft_vocab; /* its logits' width */
  float *draft_logits; /* [draft_vocab] */
  int32_t *pending;    /* [capacity + 1]: tokens the draft must prefill */
  int32_t *verified; /* [max + 1]: the chosen token, then its drafts */
  float *rows;       /* [max + 1, vocab]: @verify's logits */
  int64_t base;      /* the session's length before the verified tokens */
  int64_t count;     /* tokens verified (the chosen one and the drafts) */
  int64_t used;      /* of them, those the loop has chosen so far */
  int64_t drafted, accepted;
} tfm_speculation;

/* Prompt lookup: drafts at most `room` tokens after the text
 * history[0..length) + next into `out`, the tokens that followed the
 * latest earlier occurrence of its last `ngram` tokens (or of fewer, down
 * to one); returns how many. The batch engine's drafts too. */
int64_t tfm_speculation_lookup(int32_t ngram, const int32_t *history,
                               int64_t length, int32_t next, int64_t room,
                               int32_t *out);

/* Whether `draft`'s ids mean what `model`'s do: the same special tokens,
 * and every id spelled alike by both tokenizers (a padded embedding
 * table's extra rows spell nothing) or, without tokenizers, vocabularies
 * of one size. The batch engine's draft model too. */
tfm_status_code tfm_speculation_check_vocabulary(tfm_model *model,
                                                 tfm_model *draft,
                                                 tfm_status *status);

/* Whether `token` (the argmax of a draft's `logits`, [vocab]) has at
 * least probability p_min (0: always): a draft stops where it does not,
 * as llama.cpp's --draft-p-min. */
int tfm_speculation_confident(const float *logits, int64_t vocab, int32_t token,
                              float p_min);

/* Off unless options->lookup_ngram > 0 or options->draft, which need a
 * model with @verify (TFM_ERROR_NOT_FOUND, naming tfmc --speculative), a
 * sensible length, and a draft of the same vocabulary that holds
 * `needed` positions. */
tfm_status_code tfm_speculation_start(tfm_speculation *spec,
                                      const tfm_generate_options *options,
                                      tfm_session *session, int64_t needed,
                                      tfm_status *status);
void tfm_speculation_free(tfm_speculation *spec);

/* The positions the loop has chosen so far: the session's length, less
 * the drafts still ahead of the loop. */
int64_t tfm_speculation_length(const tfm_speculation *spec,
                               const tfm_session *session);

/* Appends the chosen token `next` and writes the logits that follow it:
 * from the last @verify when it was the next draft; else after dropping
 * the drafts left, through @verify with new drafts (at most `room` of
 * them) or @decode. */
tfm_status_code tfm_speculation_advance(tfm_speculation *spec,
                                        tfm_session *session, int32_t next,
                                        int64_t room, float *logits,
                                        tfm_status *status);

/* Drops the drafts the loop did not choose: the session then holds exactly
 * the chosen tokens. */
tfm_status_code tfm_speculation_finish(tfm_speculation *spec,
                                       tfm_session *session,
                                       tfm_status *status);

#endif /* TFM_RUNTIME_GENERATE_SPECULATION_H */
