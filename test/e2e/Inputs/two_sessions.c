/* Two sessions of one model, decoding in alternation, produce exactly the
 * logits (bit for bit) and tokens each produces alone: sessions share
 * nothing but the weights. Linked with a model library built with
 * --prefix tiny. */
#include "tiny.h"

#include <stdio.h>
#include <string.h>

enum { kSteps = 12 };

static int check(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK)
    fprintf(stderr, "error: %s\n", status->message);
  return code == TFM_OK;
}

/* Greedy: prefill `prompt`, then one decode per call of step(). */
typedef struct {
  tfm_session *session;
  float logits[TINY_VOCAB_SIZE];
  float history[kSteps][TINY_VOCAB_SIZE]; /* logits each token came from */
  int32_t out[kSteps];
  int steps;
} run;

static int start(tfm_model *model, run *r, const int32_t *prompt, int n) {
  tfm_status status;
  memset(r, 0, sizeof *r);
  return check(tfm_session_new(model, &r->session, &status), &status) &&
         check(tfm_prefill(r->session, prompt, n, r->logits, &status), &status);
}

static int step(run *r) {
  tfm_status status;
  int32_t next = tfm_argmax(r->logits, TINY_VOCAB_SIZE);
  memcpy(r->history[r->steps], r->logits, sizeof r->logits);
  r->out[r->steps++] = next;
  return check(tfm_decode(r->session, next, r->logits, &status), &status);
}

int main(void) {
  tfm_status status;
  tfm_model *model;
  if (!check(tfm_model_load(&tiny_model, NULL, &model, &status), &status))
    return 1;
  const int32_t a[] = {1, 17, 42, 5}, b[] = {1, 63, 0, 28, 9, 33};
  run alone_a, alone_b, mixed_a, mixed_b;
  int ok = start(model, &alone_a, a, 4) && start(model, &alone_b, b, 6);
  for (int i = 0; ok && i < kSteps; ++i)
    ok = step(&alone_a);
  for (int i = 0; ok && i < kSteps; ++i)
    ok = step(&alone_b);
  /* Interleaved, and B starts after A has already decoded. */
  ok = ok && start(model, &mixed_a, a, 4) && step(&mixed_a) &&
       start(model, &mixed_b, b, 6);
  for (int i = 1; ok && i < kSteps; ++i)
    ok = step(&mixed_b) && step(&mixed_a);
  ok = ok && step(&mixed_b);
  if (!ok)
    return 1;
  int same = !memcmp(alone_a.out, mixed_a.out, sizeof alone_a.out) &&
             !memcmp(alone_b.out, mixed_b.out, sizeof alone_b.out) &&
             !memcmp(alone_a.history, mixed_a.history, sizeof alone_a.history) &&
             !memcmp(alone_b.history, mixed_b.history, sizeof alone_b.history);
  printf("%s:", same ? "same" : "DIFFERENT");
  for (int i = 0; i < kSteps; ++i)
    printf(" %d", mixed_a.out[i]);
  printf(" |");
  for (int i = 0; i < kSteps; ++i)
    printf(" %d", mixed_b.out[i]);
  printf("\n");
  tfm_session_free(alone_a.session);
  tfm_session_free(alone_b.session);
  tfm_session_free(mixed_a.session);
  tfm_session_free(mixed_b.session);
  tfm_model_free(model);
  return same ? 0 : 1;
}
