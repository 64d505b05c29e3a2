/* bench/clip_bench.c: a CLIP model compiled with --emit=staticlib
 * --prefix model (symbol model_model) through tfm_model_call: @embed_image
 * on one 224x224 image and @embed_text on `tokens` ids (77: Stable
 * Diffusion's padded prompt). Prints one JSON line with the best seconds
 * of each over `reps` calls, after a warm-up call. Built by
 * bench/compare_clip.py.
 *
 *   clip_bench TOKENS REPS */
#include "model.h"
#include "tfm/tfm_runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The best seconds of `reps` calls of `entry` on `input`. */
static double best_seconds(tfm_model *model, const char *entry,
                           const tfm_tensor *input, int reps) {
  double best = INFINITY;
  for (int r = 0; r <= reps; ++r) {
    tfm_tensor output;
    tfm_status status;
    double start = now();
    if (tfm_model_call(model, entry, input, 1, NULL, &output, 1, &status) !=
        TFM_OK) {
      fprintf(stderr, "@%s: %s\n", entry, status.message);
      exit(1);
    }
    double took = now() - start;
    tfm_tensor_release(&output);
    if (r > 0 && took < best) /* the first call warms up */
      best = took;
  }
  return best;
}

int main(int argc, char **argv) {
  int64_t tokens = argc > 1 ? atoll(argv[1]) : 77;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  tfm_model *model;
  tfm_status status;
  if (tfm_model_load(&model_model, NULL, &model, &status) != TFM_OK) {
    fprintf(stderr, "%s\n", status.message);
    return 1;
  }
  const tfm_entry_point *image = tfm_model_entry_point(model, "embed_image");
  const tfm_tensor_desc *pixels_desc = &image->inputs[0];
  int64_t count = 1;
  for (int32_t d = 0; d < pixels_desc->rank; ++d)
    count *= pixels_desc->shape[d];
  float *pixels = malloc((size_t)count * sizeof *pixels);
  int32_t *ids = malloc((size_t)tokens * sizeof *ids);
  for (int64_t i = 0; i < count; ++i)
    pixels[i] = (float)(i % 251) / 251.0f - 0.5f;
  for (int64_t i = 0; i < tokens; ++i)
    ids[i] = (int32_t)(1000 + i);
  ids[tokens - 1] = (int32_t)(tfm_model_get_desc(model)->vocab_size - 1);
  tfm_tensor image_input = {
      pixels, TFM_DTYPE_F32, pixels_desc->rank, {0}, NULL};
  for (int32_t d = 0; d < pixels_desc->rank; ++d)
    image_input.shape[d] = pixels_desc->shape[d];
  tfm_tensor text_input = {ids, TFM_DTYPE_I32, 1, {tokens}, NULL};
  double image_seconds = best_seconds(model, "embed_image", &image_input, reps);
  double text_seconds = best_seconds(model, "embed_text", &text_input, reps);
  printf("{\"image_seconds\": %.6f, \"text_seconds\": %.6f}\n", image_seconds,
         text_seconds);
  free(ids);
  free(pixels);
  tfm_model_free(model);
  return 0;
}
