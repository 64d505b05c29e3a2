/* A vision-language model's session (tfm_session_add_image): an image's
 * rows from @encode_image at the prompt's placeholders give transformers'
 * greedy ids; a copy decodes the same logits bit for bit; a session cut
 * back to a position after the image (its rows kept) and given the rest
 * again gives the same logits within 1e-4; a reset session and a saved
 * one are refused or emptied by name. Linked with the llava fixture built
 * with --prefix tiny; argv[1] is pixels.f32, argv[2] the prompt's ids
 * (one placeholder), argv[3] a scratch file. */
#include "tiny.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSteps = 6, kMaxPrompt = 256 };

static int check(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK)
    fprintf(stderr, "error: %s\n", status->message);
  return code == TFM_OK;
}

static float max_difference(const float *a, const float *b, size_t n) {
  float worst = 0;
  for (size_t i = 0; i < n; ++i)
    if (fabsf(a[i] - b[i]) > worst)
      worst = fabsf(a[i] - b[i]);
  return worst;
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  tfm_status status;
  tfm_model *model = NULL;
  if (!check(tfm_model_load(&tiny_model, NULL, &model, &status), &status))
    return 1;
  /* The image's rows. */
  static float pixels[3 * 32 * 32];
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(pixels, sizeof pixels, 1, f) != 1)
    return 1;
  fclose(f);
  tfm_tensor in = {pixels, TFM_DTYPE_F32, 3, {3, 32, 32}, NULL}, rows = {0};
  if (!check(tfm_model_call(model, "encode_image", &in, 1, NULL, &rows, 1,
                            &status),
             &status))
    return 1;
  int64_t count = rows.shape[0];
  /* The prompt, its one placeholder widened to the image's rows. */
  int32_t prompt[kMaxPrompt];
  int64_t n = 0;
  int32_t placeholder = tiny_model.image_token;
  for (char *at = argv[2], *end; *at; at = end) {
    long id = strtol(at, &end, 10);
    if (end == at)
      break;
    for (int64_t r = 0; r < (id == placeholder ? count : 1); ++r)
      prompt[n++] = (int32_t)id;
  }
  static float first[TINY_VOCAB_SIZE], logits[TINY_VOCAB_SIZE],
      again[TINY_VOCAB_SIZE];
  tfm_session *a = NULL, *b = NULL;
  if (!check(tfm_session_new(model, &a, &status), &status) ||
      !check(tfm_session_new(model, &b, &status), &status) ||
      !check(tfm_session_add_image(a, rows.data, count, &status), &status) ||
      !check(tfm_prefill(a, prompt, n, first, &status), &status))
    return 1;
  /* A copy goes on as the session it came from. */
  if (!check(tfm_session_copy(b, a, &status), &status))
    return 1;
  memcpy(logits, first, sizeof logits);
  memcpy(again, first, sizeof again);
  printf("greedy:");
  int same = 1;
  for (int i = 0; i < kSteps; ++i) {
    int32_t next = tfm_argmax(logits, TINY_VOCAB_SIZE);
    printf(" %d", next);
    if (!check(tfm_decode(a, next, logits, &status), &status) ||
        !check(tfm_decode(b, next, again, &status), &status))
      return 1;
    same &= memcmp(logits, again, sizeof logits) == 0;
  }
  printf("\ncopy: %s\n", same ? "same" : "differs");
  /* Cut back after the image and given the rest again. */
  int64_t keep = n - 3;
  if (!check(tfm_session_truncate(a, keep, &status), &status) ||
      !check(tfm_prefill(a, prompt + keep, n - keep, again, &status), &status))
    return 1;
  printf("truncated: %s\n",
         max_difference(first, again, TINY_VOCAB_SIZE) <= 1e-4f ? "same"
                                                                : "differs");
  /* A file keeps no image rows. */
  if (tfm_session_save(a, argv[3], &status) != TFM_OK)
    printf("save: %s\n", status.message);
  tfm_tensor_release(&rows);
  tfm_session_free(a);
  tfm_session_free(b);
  tfm_model_free(model);
  return 0;
}
