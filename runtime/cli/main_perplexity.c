/*===- main_perplexity.c - how well a decoder predicts a text -----------===//
 *
 * `./story --perplexity eval.txt`: the text is tokenized (with BOS when the
 * model adds one) and cut into windows of the model's context, each
 * starting with BOS; every token of a window after the first is scored
 * from the ones before it. A model with a KV cache scores them as it
 * generates, through a session (@prefill of BOS, then a @decode a token),
 * so that what the cache stores (an int8 cache's rounding) counts; one
 * without, by @forward over the window. Prints one JSON line: the
 * perplexity (exp of the mean negative log-likelihood), the tokens scored,
 * the window and the path. What `bench/compare_weight_formats.py` compares
 * across weight formats.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -log softmax(logits)[target], in double. */
static double negative_log_likelihood(const float *logits, int64_t vocab,
                                      int32_t target) {
  float max = logits[0];
  for (int64_t j = 1; j < vocab; ++j)
    max = logits[j] > max ? logits[j] : max;
  double sum = 0;
  for (int64_t j = 0; j < vocab; ++j)
    sum += exp((double)logits[j] - max);
  return log(sum) - ((double)logits[target] - max);
}

int tfm_main_perplexity(const char *argv0, tfm_model *model,
                        const char *path) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  tfm_status status;
  char *text = tfm_main_read_text_file(path);
  if (!text) {
    fprintf(stderr, "%s: error: cannot read '%s': %s\n", argv0, path,
            strerror(errno));
    return 1;
  }
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
  if (!tokenizer)
    return tfm_main_fail(argv0, status.message);
  int64_t count = 0;
  if (tfm_tokenizer_encode(tokenizer, text, -1, NULL, 0, &count, &status))
    return tfm_main_fail(argv0, status.message);
  int32_t *ids = malloc((size_t)(count + 1) * sizeof *ids);
  if (!ids)
    return tfm_main_fail(argv0, "out of memory");
  if (tfm_tokenizer_encode(tokenizer, text, -1, ids, count, &count, &status))
    return tfm_main_fail(argv0, status.message);
  free(text);
  int32_t bos = desc->bos_token;
  int64_t window = desc->max_context;
  int64_t vocab = desc->vocab_size;
  if (bos < 0 || window < 2)
    return tfm_main_fail(argv0, "--perplexity needs a model with a BOS token and a "
                       "context of at least 2");
  if (count == 0)
    return tfm_main_fail(argv0, "--perplexity: the text has no tokens");
  /* A model with a cache prefills window by window through a session;
   * one without runs @forward over each window for all its logits. */
  int cached = tfm_model_entry_point(model, "prefill") != NULL;
  tfm_session *session = NULL;
  if (cached && tfm_session_new(model, &session, &status))
    return tfm_main_fail(argv0, status.message);
  int32_t *tokens = malloc((size_t)window * sizeof *tokens);
  float *logits = malloc((size_t)((cached ? 1 : window) * vocab) * sizeof *logits);
  if (!tokens || !logits)
    return tfm_main_fail(argv0, "out of memory");
  double total = 0;
  int64_t scored = 0;
  for (int64_t start = 0; start < count; start += window - 1) {
    int64_t n = count - start < window - 1 ? count - start : window - 1;
    tokens[0] = bos;
    memcpy(tokens + 1, ids + start, (size_t)n * sizeof *tokens);
    if (!cached) {
      if (tfm_forward(model, tokens, n + 1, logits, &status))
        return tfm_main_fail(argv0, status.message);
      for (int64_t i = 0; i < n; ++i)
        total += negative_log_likelihood(logits + i * vocab, vocab,
                                         tokens[i + 1]);
      scored += n;
      continue;
    }
    tfm_session_reset(session);
    for (int64_t i = 0; i < n; ++i) {
      if (tfm_prefill(session, tokens + i, 1, logits, &status))
        return tfm_main_fail(argv0, status.message);
      total += negative_log_likelihood(logits, vocab, tokens[i + 1]);
    }
    scored += n;
  }
  printf("{\"perplexity\": %.6f, \"mean_nll\": %.6f, \"tokens\": %lld, "
         "\"window\": %lld, \"through\": \"%s\"}\n",
         exp(total / (double)scored), total / (double)scored,
         (long long)scored, (long long)window,
         cached ? "kv-cache" : "forward");
  tfm_session_free(session);
  free(tokens);
  free(logits);
  free(ids);
  return 0;
}
