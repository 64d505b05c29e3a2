/*===- seq2seq_text.c - an encoder-decoder's output as text -------------===//
 *
 * tfm_seq2seq_text: what the executable prints for a source (main_seq2seq.c)
 * as one call for the libraries' users (the Python package's translate()
 * and Whisper's transcribe()): the generation_config.json defaults as
 * rules (generation_rules.c), beam search or greedy decoding, then the new
 * tokens as text, special tokens skipped (tfm_seq2seq_decode_text, which
 * the executable prints with too).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"
#include "runtime/generate/seq2seq_internal.h"
#include "tfm/tfm_runtime.h"

#include <stdlib.h>
#include <string.h>

tfm_status_code tfm_seq2seq_decode_text(const tfm_model *model,
                                        const tfm_tokenizer *tokenizer,
                                        const int32_t *ids, int64_t count,
                                        char **text, size_t *length_out,
                                        tfm_status *status) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  size_t length = 0, capacity = 64;
  char *out = malloc(capacity);
  int32_t start = desc->bos_token, previous = start;
  for (int64_t i = 0; out && i < count; ++i) {
    if (ids[i] == desc->eos_token ||
        tfm_tokenizer_is_special(tokenizer, ids[i]))
      continue;
    size_t size = 0;
    const char *piece =
        tfm_tokenizer_decode(tokenizer, previous, ids[i], start, &size);
    previous = ids[i];
    if (!piece)
      continue;
    if (length + size + 1 > capacity) {
      while (length + size + 1 > capacity)
        capacity *= 2;
      char *grown = realloc(out, capacity);
      if (!grown) {
        free(out);
        out = NULL;
        break;
      }
      out = grown;
    }
    memcpy(out + length, piece, size);
    length += size;
  }
  if (!out)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  out[length] = '\0';
  *text = out;
  if (length_out)
    *length_out = length;
  return tfm_ok(status);
}

tfm_status_code tfm_seq2seq_text(tfm_model *model, const tfm_tensor *source,
                                 int32_t beams, int64_t max_new_tokens,
                                 const tfm_generation_rules *given, char **text,
                                 tfm_status *status) {
  if (!model || !source || !text)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_text: NULL %s",
                    !model    ? "model"
                    : !source ? "source"
                              : "text");
  if (beams < 0 || max_new_tokens < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_text: negative %s",
                    beams < 0 ? "beams" : "max_new_tokens");
  const tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, status);
  if (!tokenizer)
    return status ? status->code : TFM_ERROR_NOT_FOUND;
  const tfm_generation_defaults *g = tfm_model_get_desc(model)->generation;
  if (!beams)
    beams = g && g->num_beams > 0 ? g->num_beams : 1;
  tfm_generation_rules rules;
  if (given)
    rules = *given;
  else
    tfm_generation_rules_defaults(model, &rules);
  if (!max_new_tokens) {
    /* The config's, or as many as the decoder's cache holds after the
     * forced prompt, at most 128 (the executable's default). */
    max_new_tokens = g && g->max_new_tokens > 0 ? g->max_new_tokens : 128;
    const tfm_cache_desc *self, *cross;
    tfm_seq2seq_find_caches(tfm_model_get_desc(model), &self, &cross);
    int64_t room =
        self ? self->shape[2] - rules.previous_count - rules.prompt_count
             : max_new_tokens;
    if (room < max_new_tokens)
      max_new_tokens = room > 0 ? room : 1;
  }
  int64_t capacity = max_new_tokens + rules.prompt_count + 1, count = 0;
  int32_t *generated = malloc((size_t)capacity * sizeof *generated);
  if (!generated)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  tfm_status_code code;
  if (beams > 1) {
    tfm_beam_options options = {beams, max_new_tokens,
                                g ? g->length_penalty : 1.0f,
                                g ? g->early_stopping : 0, &rules};
    code = tfm_seq2seq_beam_search_from(model, source, &options, generated,
                                        capacity, &count, status);
  } else {
    tfm_generate_options options;
    memset(&options, 0, sizeof options);
    options.max_new_tokens = max_new_tokens;
    options.sampler = tfm_sampler_default_options(); /* greedy */
    code = tfm_seq2seq_generate_from(model, source, &options, &rules, generated,
                                     capacity, &count, status);
  }
  if (code == TFM_OK)
    code = tfm_seq2seq_decode_text(model, tokenizer, generated,
                                   count < capacity ? count : capacity, text,
                                   NULL, status);
  free(generated);
  return code;
}

int32_t tfm_seq2seq_special_token(const tfm_tokenizer *tokenizer,
                                  const char *spelling) {
  int32_t id = -1;
  int64_t count = 0;
  tfm_status status;
  if (tfm_tokenizer_encode(tokenizer, spelling, -1, &id, 1, &count, &status) !=
          TFM_OK ||
      count != 1 || !tfm_tokenizer_is_special(tokenizer, id))
    return -1;
  return id;
}

tfm_status_code tfm_seq2seq_previous_text(tfm_model *model, const char *text,
                                          int32_t **ids, int32_t *count,
                                          tfm_status *status) {
  if (!model || !text || !ids || !count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_previous_text: NULL %s",
                    !model  ? "model"
                    : !text ? "text"
                            : "output");
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, status);
  if (!tokenizer)
    return status ? status->code : TFM_ERROR_TOKENIZER;
  int32_t start = tfm_seq2seq_special_token(tokenizer, "<|startofprev|>");
  const tfm_cache_desc *self, *cross;
  tfm_seq2seq_find_caches(desc, &self, &cross);
  if (start < 0 || !self)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' takes no previous text: %s", desc->name,
                    self ? "its tokenizer has no <|startofprev|>"
                         : "it is not an encoder-decoder with caches");
  /* " " + the text without the whitespace at its ends, as
   * WhisperProcessor.get_prompt_ids spells it. */
  while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r')
    ++text;
  size_t length = strlen(text);
  while (length && strchr(" \t\n\r", text[length - 1]))
    --length;
  char *spaced = malloc(length + 2);
  if (!spaced)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  spaced[0] = ' ';
  memcpy(spaced + 1, text, length);
  spaced[length + 1] = '\0';
  int64_t needed = 0;
  int32_t *tokens = NULL;
  tfm_status_code code =
      tfm_tokenizer_encode(tokenizer, spaced, -1, NULL, 0, &needed, status);
  if (code == TFM_OK &&
      !(tokens = malloc((size_t)(needed + 1) * sizeof *tokens)))
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (code == TFM_OK)
    code = tfm_tokenizer_encode(tokenizer, spaced, -1, tokens + 1, needed,
                                &needed, status);
  free(spaced);
  if (code != TFM_OK) {
    free(tokens);
    return code;
  }
  /* The text's last tokens that fit half the context less one, as
   * OpenAI's decoding keeps them. */
  int64_t kept = self->shape[2] / 2 - 1;
  if (kept > needed)
    kept = needed;
  memmove(tokens + 1, tokens + 1 + (needed - kept),
          (size_t)kept * sizeof *tokens);
  tokens[0] = start;
  *ids = tokens;
  *count = (int32_t)(kept + 1);
  return tfm_ok(status);
}
