/* Two different compiled models in one program: their symbols do not clash
 * and both run, sharing one runtime. */
#include "sorter.h"
#include "tiny.h"

#include <stdio.h>

static int first_token(const tfm_model_desc *desc, const int32_t *prompt,
                       int n) {
  tfm_status status;
  tfm_model *model;
  tfm_session *session;
  float logits[64];
  if (desc->vocab_size > 64 ||
      tfm_model_load(desc, NULL, &model, &status) != TFM_OK ||
      tfm_session_new(model, &session, &status) != TFM_OK ||
      tfm_prefill(session, prompt, n, logits, &status) != TFM_OK) {
    fprintf(stderr, "error: %s\n", status.message);
    return -1;
  }
  int next = tfm_argmax(logits, desc->vocab_size);
  tfm_session_free(session);
  tfm_model_free(model);
  return next;
}

int main(void) {
  /* "9 1 >": BOS, dummy space, 9, space, 1, space, '>' -> first answer " ". */
  const int32_t sorter_prompt[] = {1, 3, 13, 3, 5, 3, 14};
  const int32_t tiny_prompt[] = {1, 17, 42};
  int s = first_token(&sorter_model, sorter_prompt, 7);
  int t = first_token(&tiny_model, tiny_prompt, 3);
  printf("sorter %d (vocab %d), tiny %d (vocab %d)\n", s, SORTER_VOCAB_SIZE, t,
         TINY_VOCAB_SIZE);
  return s < 0 || t < 0;
}
