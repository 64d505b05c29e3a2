/* A session copied (tfm_session_copy), saved and loaded back
 * (tfm_session_save/load), or cut back to a prefix (tfm_session_truncate)
 * goes on as the session it came from: copies and loads decode the same
 * logits bit for bit, a truncated session within 1e-4 or argv[2] (its rows
 * were computed in other chunks). For a KV-cache model and a hybrid with
 * recurrent states alike. Linked with a model library built with --prefix
 * tiny; argv[1] is a scratch file for the saved session. */
#include "tiny.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSteps = 6, kPrompt = 5 };
static const int32_t kTokens[kPrompt] = {1, 17, 42, 5, 63};

static int check(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK)
    fprintf(stderr, "error: %s\n", status->message);
  return code == TFM_OK;
}

/* Greedy decoding of kSteps tokens from `logits`, the logits of each step
 * into history. */
static int decode(tfm_session *s, float *logits,
                  float history[kSteps][TINY_VOCAB_SIZE]) {
  tfm_status status;
  for (int i = 0; i < kSteps; ++i) {
    memcpy(history[i], logits, TINY_VOCAB_SIZE * sizeof *logits);
    int32_t next = tfm_argmax(logits, TINY_VOCAB_SIZE);
    if (!check(tfm_decode(s, next, logits, &status), &status))
      return 0;
  }
  return 1;
}

static float max_difference(const float *a, const float *b, size_t n) {
  float worst = 0;
  for (size_t i = 0; i < n; ++i)
    worst = fmaxf(worst, fabsf(a[i] - b[i]));
  return worst;
}

static float reference[kSteps][TINY_VOCAB_SIZE], other[kSteps][TINY_VOCAB_SIZE];
static float logits[TINY_VOCAB_SIZE], kept[TINY_VOCAB_SIZE];

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3)
    return 2;
  float tolerance = argc == 3 ? strtof(argv[2], NULL) : 1e-4f;
  tfm_status status;
  tfm_model *model;
  tfm_session *source, *copy, *loaded, *cut;
  if (!check(tfm_model_load(&tiny_model, NULL, &model, &status), &status) ||
      !check(tfm_session_new(model, &source, &status), &status) ||
      !check(tfm_session_new(model, &copy, &status), &status) ||
      !check(tfm_session_new(model, &loaded, &status), &status) ||
      !check(tfm_session_new(model, &cut, &status), &status))
    return 1;
  /* The prompt prefilled once, copied and saved before the source goes on. */
  if (!check(tfm_prefill(source, kTokens, kPrompt, logits, &status), &status) ||
      !check(tfm_session_copy(copy, source, &status), &status) ||
      !check(tfm_session_save(source, argv[1], &status), &status))
    return 1;
  memcpy(kept, logits, sizeof logits);
  if (!decode(source, logits, reference))
    return 1;
  memcpy(logits, kept, sizeof logits);
  if (!decode(copy, logits, other))
    return 1;
  printf("copy: %s, %lld positions\n",
         memcmp(reference, other, sizeof other) ? "DIFFERENT" : "same",
         (long long)tfm_session_length(copy));
  if (!check(tfm_session_load(loaded, argv[1], &status), &status))
    return 1;
  printf("loaded: %lld positions, %lld cached\n",
         (long long)tfm_session_length(loaded),
         (long long)tfm_session_cached(loaded));
  memcpy(logits, kept, sizeof logits);
  if (!decode(loaded, logits, other))
    return 1;
  printf("loaded decodes: %s\n",
         memcmp(reference, other, sizeof other) ? "DIFFERENT" : "same");

  /* The source, holding prompt + kSteps, cut back to all of the prompt but
   * its last token, which then runs again. */
  if (!check(tfm_session_copy(cut, source, &status), &status) ||
      !check(tfm_session_truncate(cut, kPrompt - 1, &status), &status))
    return 1;
  printf("truncated: %lld positions, %lld cached\n",
         (long long)tfm_session_length(cut),
         (long long)tfm_session_cached(cut));
  if (!check(tfm_prefill(cut, kTokens + kPrompt - 1, 1, logits, &status),
             &status) ||
      !decode(cut, logits, other))
    return 1;
  float difference =
      max_difference(&reference[0][0], &other[0][0], sizeof other / 4);
  printf("truncated decodes: %s\n", difference <= tolerance ? "close" : "FAR");

  /* Refusals. */
  tfm_status_code code = tfm_session_truncate(cut, 1000, &status);
  printf("%d %s\n", code, status.message);
  code = tfm_session_load(loaded, "/nonexistent/session", &status);
  printf("%d %s; %lld positions left\n", code, status.message,
         (long long)tfm_session_length(loaded));
  tfm_session_free(source);
  tfm_session_free(copy);
  tfm_session_free(loaded);
  tfm_session_free(cut);
  tfm_model_free(model);
  return 0;
}
