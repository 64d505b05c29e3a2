/*===- generation_rules.c - what an encoder-decoder may generate next ----===//
 *
 * transformers' logits processors that generation_config.json turns on, as
 * 4.40 applies them to each step's scores (logits for greedy decoding,
 * log-probabilities for beam search): NoRepeatNGram (a token that would
 * repeat an n-gram of the sequence so far, the decoder start token
 * included), NoBadWords of single tokens (never generated), MinNewTokens
 * (no end-of-sequence before that many tokens) and ForcedEOS (the last
 * step can only end the sequence). A banned token's score is -infinity.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/generate/seq2seq_internal.h"

#include <math.h>
#include <string.h>

tfm_status_code tfm_generation_rules_check(const char *function,
                                           const tfm_generation_rules *rules,
                                           tfm_status *status) {
  if (!rules)
    return tfm_ok(status);
  struct {
    const char *name;
    int64_t count;
    const void *array;
  } lists[] = {{"suppressed", rules->suppressed_count, rules->suppressed},
               {"bad_words", rules->bad_word_count, rules->bad_word_lengths},
               {"prompt", rules->prompt_count, rules->prompt},
               {"begin_suppressed", rules->begin_suppressed_count,
                rules->begin_suppressed},
               {"previous", rules->previous_count, rules->previous}};
  for (size_t i = 0; i < sizeof lists / sizeof *lists; ++i)
    if (lists[i].count < 0 || (lists[i].count > 0 && !lists[i].array))
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "%s: rules list %s has %lld entries at %p", function,
                      lists[i].name, (long long)lists[i].count,
                      lists[i].array);
  if (rules->bad_word_count > 0 && !rules->bad_words)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: rules have %d bad words and no tokens", function,
                    rules->bad_word_count);
  for (int32_t i = 0; i < rules->bad_word_count; ++i)
    if (rules->bad_word_lengths[i] <= 0)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "%s: bad word %d has %d tokens", function, i,
                      rules->bad_word_lengths[i]);
  for (int32_t i = 0; i < rules->prompt_count; ++i)
    if (rules->prompt[i] < 0 && rules->language_count <= 0)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "%s: prompt token %d is -1 (a language to detect) and "
                      "the rules list no languages",
                      function, i);
  if (rules->language_count < 0 ||
      (rules->language_count > 0 && !rules->languages))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: rules list %d languages at %p", function,
                    rules->language_count, (const void *)rules->languages);
  if (rules->no_repeat_ngram_size < 0 || rules->min_new_tokens < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: negative no_repeat_ngram_size or min_new_tokens",
                    function);
  return tfm_ok(status);
}

void tfm_apply_generation_rules(const tfm_generation_rules *rules,
                                const int32_t *sequence, int64_t length,
                                int64_t max_new_tokens, int32_t eos,
                                float *scores, int64_t vocab) {
  if (!rules)
    return;
  int64_t generated = length - 1; /* after the decoder start token */
  /* The prompt's tokens are forced; the rules below count from its end,
   * as transformers' processors count from the end of decoder_input_ids. */
  if (generated < rules->prompt_count) {
    int32_t forced = rules->prompt[generated];
    if (forced < 0) /* a language to detect: the likeliest */
      for (int32_t i = 0; i < rules->language_count; ++i)
        if (forced < 0 || scores[rules->languages[i]] > scores[forced])
          forced = rules->languages[i];
    for (int64_t v = 0; v < vocab; ++v)
      scores[v] = v == forced ? 0.0f : -INFINITY;
    return;
  }
  if (generated == rules->prompt_count)
    for (int32_t i = 0; i < rules->begin_suppressed_count; ++i)
      if (rules->begin_suppressed[i] >= 0 && rules->begin_suppressed[i] < vocab)
        scores[rules->begin_suppressed[i]] = -INFINITY;
  generated -= rules->prompt_count;
  int64_t n = rules->no_repeat_ngram_size;
  if (n > 0 && length + 1 >= n) {
    /* Tokens that followed the last n - 1 tokens anywhere before. */
    const int32_t *prefix = sequence + length + 1 - n;
    for (int64_t start = 0; start + n <= length; ++start) {
      int64_t k = 0;
      while (k < n - 1 && sequence[start + k] == prefix[k])
        ++k;
      int32_t next = sequence[start + n - 1];
      if (k == n - 1 && next >= 0 && next < vocab)
        scores[next] = -INFINITY;
    }
  }
  for (int32_t i = 0; i < rules->suppressed_count; ++i)
    if (rules->suppressed[i] >= 0 && rules->suppressed[i] < vocab)
      scores[rules->suppressed[i]] = -INFINITY;
  /* transformers' NoBadWordsLogitsProcessor: a word's last token after the
   * rest of it (the sequence, decoder start token included, ends with
   * them), once the sequence is at least as long as the whole word, as
   * its SequenceBiasLogitsProcessor checks. */
  const int32_t *word = rules->bad_words;
  for (int32_t i = 0; i < rules->bad_word_count;
       word += rules->bad_word_lengths[i++]) {
    int64_t before = rules->bad_word_lengths[i] - 1;
    if (before + 1 > length)
      continue;
    int64_t k = 0;
    while (k < before && sequence[length - before + k] == word[k])
      ++k;
    if (k == before && word[before] >= 0 && word[before] < vocab)
      scores[word[before]] = -INFINITY;
  }
  if (eos >= 0 && eos < vocab && generated < rules->min_new_tokens)
    scores[eos] = -INFINITY;
  /* transformers' ForcedBOSLogitsProcessor: the first new token. */
  if (rules->has_forced_bos && generated == 0 && rules->forced_bos >= 0 &&
      rules->forced_bos < vocab)
    for (int64_t v = 0; v < vocab; ++v)
      scores[v] = v == rules->forced_bos ? 0.0f : -INFINITY;
  if (rules->forced_eos && eos >= 0 && eos < vocab &&
      length - 1 == max_new_tokens - 1) /* the last step */
    for (int64_t v = 0; v < vocab; ++v)
      scores[v] = v == eos ? 0.0f : -INFINITY;
}

void tfm_generation_rules_defaults(const tfm_model *model,
                                   tfm_generation_rules *rules) {
  memset(rules, 0, sizeof *rules);
  const tfm_generation_defaults *g =
      model ? tfm_model_get_desc(model)->generation : NULL;
  rules->forced_bos = -1;
  if (!g)
    return;
  rules->no_repeat_ngram_size = g->no_repeat_ngram_size;
  rules->min_new_tokens = g->min_new_tokens;
  rules->forced_eos = g->forced_eos;
  rules->has_forced_bos = g->forced_bos >= 0;
  rules->forced_bos = g->forced_bos;
  rules->suppressed = g->suppressed;
  rules->suppressed_count = g->num_suppressed;
  rules->bad_words = g->bad_words;
  rules->bad_word_lengths = g->bad_word_lengths;
  rules->bad_word_count = g->num_bad_words;
  rules->prompt = g->prompt;
  rules->prompt_count = g->num_prompt;
  rules->begin_suppressed = g->begin_suppressed;
  rules->begin_suppressed_count = g->num_begin_suppressed;
  rules->languages = g->languages;
  rules->language_count = g->num_languages;
}
