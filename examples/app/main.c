/* main.c - a C program that links a model compiled by tfmc (the bundled
 * sorter) and generates text with it through the runtime API.
 *
 *   ./sorter_c "7 3 9 1 5 >"      prints   7 3 9 1 5 > 1 3 5 7 9
 */
#include "sorter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Streams each token's text as it is generated. */
static int print_piece(void *user, int32_t token, const char *text,
                       size_t size) {
  (void)user;
  (void)token;
  fwrite(text, 1, size, stdout);
  return 0; /* keep going */
}

int main(int argc, char **argv) {
  const char *prompt = argc > 1 ? argv[1] : "7 3 9 1 5 >";
  tfm_status status;
  tfm_model *model = NULL;
  tfm_session *session = NULL;
  int exit_code = 1;

  if (tfm_model_load(&sorter_model, NULL, &model, &status) != TFM_OK)
    goto fail;
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
  if (!tokenizer)
    goto fail;
  int32_t ids[SORTER_MAX_CONTEXT];
  int64_t count = 0;
  if (tfm_tokenizer_encode(tokenizer, prompt, SORTER_BOS_TOKEN, ids,
                           SORTER_MAX_CONTEXT, &count, &status) != TFM_OK)
    goto fail;
  if (count > SORTER_MAX_CONTEXT) {
    fprintf(stderr, "the prompt is too long\n");
    goto done;
  }
  if (tfm_session_new(model, &session, &status) != TFM_OK)
    goto fail;

  tfm_generate_options options;
  memset(&options, 0, sizeof options);
  options.max_new_tokens = 20;
  options.sampler = tfm_sampler_default_options(); /* greedy */
  options.on_token = print_piece;
  tfm_generate_result result;
  fputs(prompt, stdout);
  if (tfm_generate(session, ids, count, &options, &result, &status) != TFM_OK)
    goto fail;
  putchar('\n');
  exit_code = 0;
  goto done;
fail:
  fprintf(stderr, "error: %s\n", status.message);
done:
  tfm_session_free(session); /* sessions before their model */
  tfm_model_free(model);
  return exit_code;
}
