/*===- speculation.c - drafted tokens checked through @verify -----------===//
 *
 * See speculation.h. Drafts come from prompt lookup (llama.cpp's
 * --lookup, "prompt lookup decoding"): the latest earlier occurrence of
 * the text's last `ngram` tokens (or of fewer, down to one) and the tokens
 * that followed it there. Text that repeats its context (code edits,
 * quotes, lists, summaries) drafts well; other text drafts little and pays
 * only the lookup. Or from a draft model: a smaller model of the same
 * vocabulary continues the text greedily, one @decode per draft, until
 * its most likely token is less likely than p_min (llama.cpp's
 * --draft-p-min); its session follows the model's text, prefilling what
 * it lacks and dropping what the model did not keep.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/generate/speculation.h"
#include "runtime/core/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
  kDefaultDrafts = 8,
  kMaxNgram = TFM_SPECULATION_MAX_NGRAM,
  kMaxDrafts = TFM_SPECULATION_MAX_DRAFTS
};

/* Token `id`'s bytes, or NULL past the vocabulary or its tokenizer. */
static const char *spelling(const tfm_tokenizer *tokenizer, int64_t vocab,
                            int64_t id, size_t *size) {
  *size = 0;
  return id < vocab ? tfm_tokenizer_decode(tokenizer, -1, (int32_t)id, -1, size)
                    : NULL;
}

tfm_status_code tfm_speculation_check_vocabulary(tfm_model *model,
                                                 tfm_model *draft,
                                                 tfm_status *status) {
  const tfm_model_desc *m = tfm_model_get_desc(model);
  const tfm_model_desc *d = tfm_model_get_desc(draft);
  if (m->bos_token != d->bos_token || m->eos_token != d->eos_token)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "draft model '%s' has another vocabulary than '%s': "
                    "bos/eos tokens %d/%d, not %d/%d",
                    d->name, m->name, d->bos_token, d->eos_token, m->bos_token,
                    m->eos_token);
  tfm_status ignored;
  const tfm_tokenizer *mt = tfm_model_tokenizer(model, &ignored);
  const tfm_tokenizer *dt = tfm_model_tokenizer(draft, &ignored);
  if (!mt || !dt) {
    if (mt || dt || m->vocab_size != d->vocab_size)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "cannot check draft model '%s' against '%s': %s has "
                      "no tokenizer and the vocabularies are %lld and "
                      "%lld tokens",
                      d->name, m->name, mt ? d->name : m->name,
                      (long long)d->vocab_size, (long long)m->vocab_size);
    return tfm_ok(status);
  }
  int64_t vocab = m->vocab_size > d->vocab_size ? m->vocab_size : d->vocab_size;
  for (int64_t id = 0; id < vocab; ++id) {
    size_t msize, dsize;
    const char *mp = spelling(mt, m->vocab_size, id, &msize);
    const char *dp = spelling(dt, d->vocab_size, id, &dsize);
    if (!mp != !dp || msize != dsize || (msize && memcmp(mp, dp, msize)))
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "draft model '%s' has another vocabulary than '%s': "
                      "token %lld is '%.*s' there and '%.*s' here",
                      d->name, m->name, (long long)id, (int)dsize, dp ? dp : "",
                      (int)msize, mp ? mp : "");
  }
  return tfm_ok(status);
}

static tfm_status_code start_draft(tfm_speculation *spec,
                                   const tfm_generate_options *o,
                                   tfm_session *session, int64_t needed,
                                   tfm_status *status) {
  tfm_model *model = tfm_session_model(session);
  tfm_model *draft = tfm_session_model(o->draft);
  const tfm_model_desc *d = tfm_model_get_desc(draft);
  if (o->draft == session)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the draft session is the model's own session");
  if (o->lookup_ngram)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "speculative decoding drafts by prompt lookup or by a "
                    "draft model, not both");
  if (!(o->draft_p_min >= 0.0f && o->draft_p_min <= 1.0f))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "draft_p_min must be between 0 and 1, got %g",
                    (double)o->draft_p_min);
  if (tfm_session_capacity(o->draft) < needed)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "draft model '%s' holds %lld positions; this generation "
                    "needs %lld",
                    d->name, (long long)tfm_session_capacity(o->draft),
                    (long long)needed);
  tfm_status_code code = tfm_speculation_check_vocabulary(model, draft, status);
  if (code != TFM_OK)
    return code;
  spec->draft = o->draft;
  spec->p_min = o->draft_p_min;
  spec->draft_vocab = d->vocab_size;
  spec->draft_logits = malloc((size_t)d->vocab_size * sizeof(float));
  spec->pending = malloc((size_t)(tfm_session_capacity(o->draft) + 1) *
                         sizeof *spec->pending);
  if (!spec->draft_logits || !spec->pending)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for the draft model's logits");
  return tfm_ok(status);
}

tfm_status_code tfm_speculation_start(tfm_speculation *spec,
                                      const tfm_generate_options *o,
                                      tfm_session *session, int64_t needed,
                                      tfm_status *status) {
  memset(spec, 0, sizeof *spec);
  if (o->lookup_ngram == 0 && !o->draft)
    return TFM_OK;
  tfm_model *model = tfm_session_model(session);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  if (!o->draft && (o->lookup_ngram < 0 || o->lookup_ngram > kMaxNgram))
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
  if (o->draft) {
    tfm_status_code code = start_draft(spec, o, session, needed, status);
    if (code != TFM_OK) {
      tfm_speculation_free(spec);
      return code;
    }
  }
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
  free(spec->draft_logits);
  free(spec->pending);
  spec->verified = NULL;
  spec->rows = NULL;
  spec->draft_logits = NULL;
  spec->pending = NULL;
}

int64_t tfm_speculation_length(const tfm_speculation *spec,
                               const tfm_session *session) {
  return spec->count ? spec->base + spec->used : tfm_session_length(session);
}

int64_t tfm_speculation_lookup(int32_t ngram, const int32_t *history,
                               int64_t length, int32_t next, int64_t room,
                               int32_t *out) {
  int64_t total = length + 1;
#define TEXT(i) ((i) < length ? history[i] : next)
  for (int64_t n = ngram < total - 1 ? ngram : total - 1; n >= 1; --n) {
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

int tfm_speculation_confident(const float *logits, int64_t vocab, int32_t token,
                              float p_min) {
  if (p_min <= 0.0f)
    return 1;
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += exp((double)logits[i] - (double)logits[token]);
  return 1.0 / sum >= (double)p_min;
}

/* Whether the draft's most likely token has at least probability p_min. */
static int confident(const tfm_speculation *spec, int32_t token) {
  return tfm_speculation_confident(spec->draft_logits, spec->draft_vocab, token,
                                   spec->p_min);
}

/* Drafts at most `room` tokens after history[0..length) + next with the
 * draft model into out; sets *count. The draft session first drops what
 * the text no longer has and prefills what it lacks, `next` included. */
static tfm_status_code draft_by_model(tfm_speculation *spec,
                                      const int32_t *history, int64_t length,
                                      int32_t next, int64_t room, int32_t *out,
                                      int64_t *count, tfm_status *status) {
  tfm_session *draft = spec->draft;
  const int32_t *held = tfm_session_tokens(draft);
  int64_t kept = 0, held_length = tfm_session_length(draft);
  while (kept < held_length && kept < length && held[kept] == history[kept])
    ++kept;
  tfm_status_code code =
      kept < held_length ? tfm_session_truncate(draft, kept, status) : TFM_OK;
  int64_t missing = length - kept;
  memcpy(spec->pending, history + kept, (size_t)missing * sizeof *history);
  spec->pending[missing] = next;
  if (code == TFM_OK)
    code = tfm_prefill(draft, spec->pending, missing + 1, spec->draft_logits,
                       status);
  /* Ids the model cannot take (a draft's larger padded table) never win. */
  int64_t ids =
      spec->vocab < spec->draft_vocab ? spec->vocab : spec->draft_vocab;
  *count = 0;
  while (code == TFM_OK && *count < room) {
    int32_t token = tfm_argmax(spec->draft_logits, ids);
    if (!confident(spec, token))
      break;
    out[(*count)++] = token;
    if (*count < room)
      code = tfm_decode(draft, token, spec->draft_logits, status);
  }
  return code;
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
  if (spec->ngram == 0 && !spec->draft)
    return tfm_decode(session, next, logits, status);
  int64_t length = tfm_session_length(session);
  const int32_t *history = tfm_session_tokens(session);
  if (room > spec->max)
    room = spec->max;
  int64_t drafts = 0;
  if (room > 0 && spec->draft) {
    tfm_status_code code = draft_by_model(spec, history, length, next, room,
                                          spec->verified + 1, &drafts, status);
    if (code != TFM_OK)
      return code;
  } else if (room > 0) {
    drafts = tfm_speculation_lookup(spec->ngram, history, length, next, room,
                                    spec->verified + 1);
  }
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
