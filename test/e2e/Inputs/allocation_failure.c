/* Allocation failure in a real compiled model: for N = 0, 1, ... the
 * (N+1)th buffer allocation fails (tfm_buffer_fail_after). Every entry the
 * application can reach (tfm_model_call of @forward, a session's prefill
 * and decode) returns TFM_ERROR_OUT_OF_MEMORY or succeeds, never crashes;
 * once N passes the allocations a call makes, it succeeds with the same
 * logits as a call that never failed, and a session that saw failures goes
 * on as if they had not happened. Prints what it saw. */
#include "model.h"
#include "runtime/core/buffer_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int32_t kPrompt[] = {1, 17, 42, 5, 63};
enum { kPromptLength = 5, kMaxVocab = 1024 };

/* Runs `attempt` with the (N+1)th allocation failing for N = 0, 1, ...
 * until it succeeds; returns how many attempts ran out of memory, or -1. */
typedef tfm_status_code (*attempt_fn)(tfm_model *model, float *logits,
                                      tfm_status *status);

static int failures_until_success(const char *what, attempt_fn attempt,
                                  tfm_model *model, float *logits) {
  for (long long n = 0; n < 10000; ++n) {
    tfm_status status;
    tfm_buffer_fail_after(n);
    tfm_status_code code = attempt(model, logits, &status);
    tfm_buffer_fail_after(-1);
    if (code == TFM_OK)
      return (int)n;
    if (code != TFM_ERROR_OUT_OF_MEMORY) {
      printf("%s: unexpected status %d: %s\n", what, code, status.message);
      return -1;
    }
  }
  printf("%s: never succeeded\n", what);
  return -1;
}

static tfm_status_code forward_last_row(tfm_model *model, float *logits,
                                        tfm_status *status) {
  tfm_tensor input = {(void *)kPrompt, TFM_DTYPE_I32, 1, {kPromptLength},
                      NULL};
  tfm_tensor output;
  tfm_status_code code =
      tfm_model_call(model, "forward", &input, 1, NULL, &output, 1, status);
  if (code != TFM_OK)
    return code;
  int64_t vocab = output.shape[1];
  memcpy(logits, (float *)output.data + (kPromptLength - 1) * vocab,
         (size_t)vocab * sizeof *logits);
  tfm_tensor_release(&output);
  return TFM_OK;
}

/* One session, kept across attempts: a failed prefill must leave it as it
 * was, so that the retry continues it. */
static tfm_session *session;

static tfm_status_code prefill_then_decode(tfm_model *model, float *logits,
                                           tfm_status *status) {
  (void)model;
  if (tfm_session_length(session) < kPromptLength - 1) {
    tfm_status_code code =
        tfm_prefill(session, kPrompt, kPromptLength - 1, logits, status);
    if (code != TFM_OK)
      return code;
  }
  return tfm_decode(session, kPrompt[kPromptLength - 1], logits, status);
}

static float max_difference(const float *a, const float *b, int64_t n) {
  float worst = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!(fabsf(a[i] - b[i]) <= worst))
      worst = isnan(a[i] - b[i]) ? INFINITY : fabsf(a[i] - b[i]);
  return worst;
}

int main(void) {
  tfm_status status;
  tfm_model *model;
  if (tfm_model_load(&model_model, NULL, &model, &status) != TFM_OK ||
      tfm_session_new(model, &session, &status) != TFM_OK) {
    printf("error: %s\n", status.message);
    return 1;
  }
  int64_t vocab = tfm_model_get_desc(model)->vocab_size;
  if (vocab > kMaxVocab)
    return 1;
  static float reference[kMaxVocab], logits[kMaxVocab];
  if (forward_last_row(model, reference, &status) != TFM_OK) {
    printf("error: %s\n", status.message);
    return 1;
  }
  int forward_failures = failures_until_success(
      "forward", forward_last_row, model, logits);
  float forward_error = max_difference(reference, logits, vocab);
  int session_failures = failures_until_success(
      "session", prefill_then_decode, model, logits);
  float session_error = max_difference(reference, logits, vocab);
  printf("forward: %d allocation failures returned out of memory, then "
         "logits within %g\n",
         forward_failures, forward_error);
  printf("session: %d allocation failures returned out of memory, then "
         "logits within %g\n",
         session_failures, session_error);
  tfm_session_free(session);
  tfm_model_free(model);
  return forward_failures > 0 && session_failures > 0 &&
                 forward_error < 1e-4f && session_error < 1e-4f
             ? 0
             : 1;
}
