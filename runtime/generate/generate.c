/*===- generate.c - the generation loop ---------------------------------===//
 *
 * Prefill the prompt, then sample, stream and decode one token at a time
 * until max_new_tokens, the end-of-sequence token, a stop string or the
 * callback says stop. The whole run is checked against the session's
 * capacity before anything runs: a KV cache is never written past its end.
 * With lookup_ngram or a draft model, drafted tokens are checked through
 * @verify (speculation.c) and the loop's choices are unchanged.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"
#include "runtime/generate/speculation.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The generated text, kept for stop-string matching. */
typedef struct {
  char *data;
  size_t size, capacity;
} text_buffer;

static int append_text(text_buffer *t, const char *text, size_t size) {
  if (t->size + size + 1 > t->capacity) {
    size_t capacity = (t->size + size + 1) * 2;
    char *grown = realloc(t->data, capacity);
    if (!grown)
      return 0;
    t->data = grown;
    t->capacity = capacity;
  }
  memcpy(t->data + t->size, text, size);
  t->size += size;
  t->data[t->size] = '\0';
  return 1;
}

/* Whether a stop string ends inside the text added since `from`. */
static int hits_stop_string(const text_buffer *t, size_t from,
                            const tfm_generate_options *o) {
  for (int32_t i = 0; i < o->stop_string_count; ++i) {
    size_t length = strlen(o->stop_strings[i]);
    if (length == 0 || length > t->size)
      continue;
    size_t start = from >= length ? from - length + 1 : 0;
    for (size_t end = start + length; end <= t->size; ++end)
      if (end > from && !memcmp(t->data + end - length, o->stop_strings[i],
                                length))
        return 1;
  }
  return 0;
}

tfm_status_code tfm_check_forced_tokens(const char *function,
                                        const tfm_generate_options *options,
                                        tfm_status *status) {
  if (options->forced_count < 0 ||
      (options->forced_count && !options->forced_tokens))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: %lld forced tokens at %p", function,
                    (long long)options->forced_count,
                    (const void *)options->forced_tokens);
  return tfm_ok(status);
}

/* Sets the session to `adapter`; what it held, computed with another, is
 * computed again (a chat's earlier turns stay its context). `logits`: a
 * row of scratch. */
static tfm_status_code use_adapter(tfm_session *session, int32_t adapter,
                                   float *logits, tfm_status *status) {
  if (tfm_session_lora(session) == adapter)
    return TFM_OK;
  int64_t held = tfm_session_length(session);
  int32_t *tokens = malloc((size_t)(held ? held : 1) * sizeof *tokens);
  if (!tokens)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  memcpy(tokens, tfm_session_tokens(session), (size_t)held * sizeof *tokens);
  tfm_status_code code = tfm_session_set_lora(session, adapter, status);
  if (code == TFM_OK && held > 0)
    code = tfm_prefill(session, tokens, held, logits, status);
  free(tokens);
  return code;
}

tfm_status_code tfm_generate(tfm_session *session, const int32_t *prompt,
                             int64_t n, const tfm_generate_options *o,
                             tfm_generate_result *result, tfm_status *status) {
  tfm_generate_result ignored_result;
  if (!result)
    result = &ignored_result;
  if (!session || !prompt || !o)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_generate: NULL argument");
  memset(result, 0, sizeof *result);
  result->prompt_tokens = n;
  /* The first new token is chosen from the logits of the last prompt
   * token: there must be one. */
  if (n <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_generate: expected at least one prompt token, got "
                    "%lld",
                    (long long)n);
  if (o->max_new_tokens < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "max_new_tokens must be >= 0, got %lld",
                    (long long)o->max_new_tokens);
  if (o->stop_string_count < 0 || (o->stop_string_count && !o->stop_strings))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_generate: %d stop strings at %p",
                    o->stop_string_count, (const void *)o->stop_strings);
  for (int32_t i = 0; i < o->stop_string_count; ++i)
    if (!o->stop_strings[i])
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "tfm_generate: stop string %d is NULL", i);
  tfm_status_code checked = tfm_check_forced_tokens("tfm_generate", o, status);
  if (checked != TFM_OK)
    return checked;
  int64_t held = tfm_session_length(session);
  int64_t capacity = tfm_session_capacity(session);
  int64_t new_tokens = o->forced_tokens ? o->forced_count : o->max_new_tokens;
  int64_t needed = held + n + new_tokens;
  if (needed > capacity)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "the prompt (%lld tokens) plus %lld new tokens needs %lld "
                    "positions%s; the context holds %lld",
                    (long long)n, (long long)new_tokens,
                    (long long)needed, held ? " with what the session holds" : "",
                    (long long)capacity);

  tfm_model *model = tfm_session_model(session);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  tfm_tokenizer *tokenizer = NULL;
  if (o->stop_string_count > 0 || o->on_token) {
    tfm_status ignored;
    tokenizer = tfm_model_tokenizer(model, &ignored);
    if (!tokenizer && o->stop_string_count > 0)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "stop strings need a tokenizer; model '%s' was "
                      "compiled without one",
                      desc->name);
  }
  tfm_speculation spec;
  tfm_status_code code =
      tfm_speculation_start(&spec, o, session, needed, status);
  if (code != TFM_OK)
    return code;
  tfm_sampler *sampler = NULL;
  code = tfm_sampler_new(&o->sampler, desc->vocab_size, &sampler, status);
  if (code != TFM_OK) {
    tfm_speculation_free(&spec);
    return code;
  }
  tfm_grammar_matcher *matcher = NULL;
  if (o->grammar && !o->forced_tokens) {
    code = tfm_grammar_matcher_new(o->grammar, &matcher, status);
    if (code != TFM_OK) {
      tfm_sampler_free(sampler);
      tfm_speculation_free(&spec);
      return code;
    }
  }
  float *logits = malloc((size_t)desc->vocab_size * sizeof *logits);
  text_buffer text = {0};
  if (!logits) {
    tfm_grammar_matcher_free(matcher);
    tfm_sampler_free(sampler);
    tfm_speculation_free(&spec);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }

  double start = now_seconds();
  code = use_adapter(session, o->lora, logits, status);
  if (code == TFM_OK)
    code = tfm_prefill(session, prompt, n, logits, status);
  result->prefill_seconds = now_seconds() - start;
  result->stop_reason = TFM_STOP_LENGTH;
  start = now_seconds();
  for (int64_t step = 0; code == TFM_OK && step < new_tokens; ++step) {
    const int32_t *history = tfm_session_tokens(session);
    int64_t length = tfm_speculation_length(&spec, session);
    /* Greedy under a grammar: the best tokens the grammar allows, checked
     * one by one before the mask (a trie walk, a cache miss each step in a
     * bounded string) is computed, as llama.cpp checks a sampled token
     * before it masks. The sampler's pass penalizes repeated tokens. */
    int32_t chosen = -1;
    int64_t allowed = 1;
    int greedy = matcher && o->sampler.temperature == 0.0f && !o->on_logits;
    if (greedy) {
      (void)tfm_sampler_sample(sampler, logits, history, length);
      chosen = tfm_grammar_matcher_accept_greedy(matcher, logits, &allowed);
    }
    if (matcher && (!greedy || chosen < 0)) {
      if (!greedy)
        allowed = tfm_grammar_matcher_mask(matcher, logits);
      if (allowed < 0) {
        code = tfm_grammar_matcher_failure(matcher, status);
        break;
      }
      if (allowed == 0) {
        /* A whole match with nothing after it and no end token to say
         * so; else the vocabulary cannot spell what the grammar needs. */
        if (tfm_grammar_matcher_may_end(matcher))
          result->stop_reason = TFM_STOP_GRAMMAR;
        else
          code = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                          "the grammar allows no token of the vocabulary "
                          "after %lld generated tokens",
                          (long long)result->generated_tokens);
        break;
      }
    }
    if (o->on_logits)
      o->on_logits(o->user, logits, desc->vocab_size);
    int32_t next = chosen >= 0        ? chosen
                   : o->forced_tokens ? o->forced_tokens[step]
                       : tfm_sampler_sample(sampler, logits, history, length);
    ++result->generated_tokens;
    if (matcher && chosen < 0) {
      code = tfm_grammar_matcher_accept(matcher, next, status);
      if (code != TFM_OK)
        break;
    }
    int32_t previous = length ? history[length - 1] : -1;
    size_t size = 0;
    const char *piece =
        tokenizer ? tfm_tokenizer_decode(tokenizer, previous, next,
                                         desc->bos_token, &size)
                  : NULL;
    int is_eos = tfm_ends_generation(desc, next) && !o->ignore_eos;
    if (is_eos || next == desc->bos_token)
      size = 0; /* control tokens print nothing */
    size_t before = text.size;
    if (piece && size && !append_text(&text, piece, size)) {
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    if (o->on_token && o->on_token(o->user, next, piece ? piece : "", size)) {
      result->stop_reason = TFM_STOP_CALLBACK;
      break;
    }
    if (is_eos) {
      result->stop_reason = TFM_STOP_EOS;
      break;
    }
    if (hits_stop_string(&text, before, o)) {
      result->stop_reason = TFM_STOP_STRING;
      break;
    }
    /* Decoded even when it is the last: the session then holds the whole
     * text, ready to continue. Drafts go no further than the tokens left
     * and the cache's room. */
    int64_t room = new_tokens - step - 1;
    int64_t free_rows = capacity - tfm_session_length(session) - 1;
    code = tfm_speculation_advance(&spec, session, next,
                                   room < free_rows ? room : free_rows, logits,
                                   status);
  }
  if (code == TFM_OK)
    code = tfm_speculation_finish(&spec, session, status);
  result->drafted_tokens = spec.drafted;
  result->accepted_tokens = spec.accepted;
  tfm_speculation_free(&spec);
  result->decode_seconds = now_seconds() - start;
  free(text.data);
  free(logits);
  tfm_grammar_matcher_free(matcher);
  tfm_sampler_free(sampler);
  return code == TFM_OK ? tfm_ok(status) : code;
}
