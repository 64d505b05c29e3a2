/*===- speculation.c - drafted tokens checked through @verify -----------===//
 *
 * See speculation.h. Drafts come from prompt lookup (llama.cpp's
 * --lookup, "prompt lookup decoding"): the latest earlier occurrence of
 * the text's last `ngram` tokens (or of fewer, down to one) and the tokens
 * that followed it there. Text that repeats its context (code edits,
 * quotes, lists, summaries) drafts well; other text drafts little and pays
 * only the lookup.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/generate/speculation.h"
#include "runtime/core/status.h"

#include <stdlib.h>
#include <string.h>

enum { kDefaultDrafts = 8, kMaxNgram = 64, kMaxDrafts = 64 };

tfm_status_code tfm_speculation_start(tfm_speculation *spec,
                                      const tfm_generate_options *o,
                                      tfm_session *session,
                                      tfm_status *status) {
  memset(spec, 0, sizeof *spec);
  if (o->lookup_ngram == 0)
    return TFM_OK;
  tfm_model *model = tfm_session_model(session);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  if (o->lookup_ngram < 0 || o->lookup_ngram > kMaxNgram)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "lookup_ngram must be between 0 and %d, got %d", kMaxNgram,
                    o->lookup_ngram);
  if (o->draft_max < 0 || o->draft_max > kMaxDrafts)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "draft_max must be between 0 (%d) and %d, got %d",
                    kDefaultDrafts, kMaxDrafts, o->draft_max);
  if (!tfm_model_entry_point(model, "verify"))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "speculative decoding needs @verify: compile model "
                    "'%s' with tfmc --speculative",
                    desc->name);
  spec->ngram = o->lookup_ngram;
  spec->max = o->draft_max ? o->draft_max : kDefaultDrafts;
  spec->vocab = desc->vocab_size;
  spec->verified = malloc((size_t)(spec->max + 1) * sizeof *spec->verified);
  spec->rows = malloc((size_t)(spec->max + 1) * (size_t)spec->vocab *
                      sizeof *spec->rows);
  if (!spec->verified || !spec->rows) {
    tfm_speculation_free(spec);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for %d drafts' logits", spec->max);
  }
  return TFM_OK;
}

void tfm_speculation_free(tfm_speculation *spec) {
  free(spec->verified);
  free(spec->rows);
  spec->verified = NULL;
  spec->rows = NULL;
}

int64_t tfm_speculation_length(const tfm_speculation *spec,
                               const tfm_session *session) {
  return spec->count ? spec->base + spec->used : tfm_session_length(session);
}

/* Drafts at most `room` tokens after text = history[0..length) + next into
 * out; returns how many. */
static int64_t lookup(const tfm_speculation *spec, const int32_t *history,
                      int64_t length, int32_t next, int64_t room,
                      int32_t *out) {
  int64_t total = length + 1;
#define TEXT(i) ((i) < length ? history[i] : next)
  for (int64_t n = spec->ngram < total - 1 ? spec->ngram : total - 1; n >= 1;
       --n) {
    /* The latest start before the suffix itself whose n tokens match it. */
    for (int64_t start = total - 1 - n; start >= 0; --start) {
      int64_t i = 0;
      while (i < n && TEXT(start + i) == TEXT(total - n + i))
        ++i;
      if (i < n)
        continue;
      int64_t count = 0;
      for (int64_t at = start + n; at < total && count < room; ++at)
        out[count++] = TEXT(at);
      return count;
    }
  }
#undef TEXT
  return 0;
}

tfm_status_code tfm_speculation_advance(tfm_speculation *spec,
                                        tfm_session *session, int32_t next,
                                        int64_t room, float *logits,
                                        tfm_status *status) {
  int64_t vocab = spec->vocab;
  if (spec->count) {
    if (spec->used < spec->count && spec->verified[spec->used] == next) {
      memcpy(logits, spec->rows + spec->used * vocab,
             (size_t)vocab * sizeof *logits);
      ++spec->used;
      ++spec->accepted;
      return tfm_ok(status);
    }
    tfm_status_code code = tfm_speculation_finish(spec, session, status);
    if (code != TFM_OK)
      return code;
  }
  if (spec->ngram == 0)
    return tfm_decode(session, next, logits, status);
  int64_t length = tfm_session_length(session);
  if (room > spec->max)
    room = spec->max;
  int64_t drafts = room > 0 ? lookup(spec, tfm_session_tokens(session), length,
                                     next, room, spec->verified + 1)
                            : 0;
  if (drafts == 0)
    return tfm_decode(session, next, logits, status);
  spec->verified[0] = next;
  tfm_status_code code =
      tfm_verify(session, spec->verified, drafts + 1, spec->rows, status);
  if (code != TFM_OK)
    return code;
  memcpy(logits, spec->rows, (size_t)vocab * sizeof *logits);
  spec->base = length;
  spec->count = drafts + 1;
  spec->used = 1;
  spec->drafted += drafts;
  return tfm_ok(status);
}

tfm_status_code tfm_speculation_finish(tfm_speculation *spec,
                                       tfm_session *session,
                                       tfm_status *status) {
  if (!spec->count)
    return TFM_OK;
  int64_t kept = spec->base + spec->used;
  spec->count = spec->used = 0;
  return tfm_session_truncate(session, kept, status);
}
