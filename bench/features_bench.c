/* bench/features_bench.c: a model whose entry point takes f32 features,
 * compiled with --emit=staticlib --prefix model (symbol model_model), timed
 * through tfm_model_call: a Wav2Vec2 recognizer's @recognize on `seconds`
 * of 16 kHz noise, or an image or audio classifier's @classify on
 * features of noise of their fixed shape. Prints one JSON line with the
 * best seconds over `reps` calls, after a warm-up call. Built by
 * bench/compare_speech.py and bench/compare_swin.py.
 *
 *   features_bench SECONDS REPS */
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

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 30;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  tfm_model *model;
  tfm_status status;
  if (tfm_model_load(&model_model, NULL, &model, &status) != TFM_OK) {
    fprintf(stderr, "%s\n", status.message);
    return 1;
  }
  const char *entry = tfm_model_entry_point(model, "recognize") ? "recognize"
                                                                : "classify";
  const tfm_tensor_desc *desc = &tfm_model_entry_point(model, entry)->inputs[0];
  tfm_tensor input = {NULL, TFM_DTYPE_F32, desc->rank, {0}, NULL};
  int64_t n = 1;
  for (int32_t d = 0; d < desc->rank; ++d) {
    /* A waveform's length is the clip's; features have their shape. */
    input.shape[d] = desc->shape[d] < 0 ? (int64_t)(seconds * 16000)
                                        : desc->shape[d];
    n *= input.shape[d];
  }
  float *samples = malloc((size_t)n * sizeof *samples);
  unsigned state = 1;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1103515245u + 12345u;
    samples[i] = (float)((state >> 8) & 0xFFFF) / 65536.0f - 0.5f;
  }
  input.data = samples;
  double best = INFINITY;
  int64_t frames = 0;
  for (int r = 0; r <= reps; ++r) {
    tfm_tensor logits;
    double start = now();
    if (tfm_model_call(model, entry, &input, 1, NULL, &logits, 1, &status) !=
        TFM_OK) {
      fprintf(stderr, "@%s: %s\n", entry, status.message);
      return 1;
    }
    double took = now() - start;
    frames = logits.shape[0];
    tfm_tensor_release(&logits);
    if (r > 0 && took < best) /* the first call warms up */
      best = took;
  }
  printf("{\"seconds\": %.6f, \"rows\": %lld}\n", best, (long long)frames);
  free(samples);
  tfm_model_free(model);
  return 0;
}
