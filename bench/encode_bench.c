/* bench/encode_bench.c: times an encoder compiled with --emit=lib (header
 * model.h, symbol model_model via --prefix model) through tfm_model_call of
 * its first entry point on one sequence of SEQ tokens (ids 1000 + i, types
 * 0), or for an image model on one image of its declared shape (values
 * 0.01 i mod 1), after two untimed calls. Prints one JSON line: seconds per
 * call. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int seq = argc > 1 ? atoi(argv[1]) : 128, reps = argc > 2 ? atoi(argv[2]) : 20;
  tfm_status status;
  tfm_model *model;
  if (tfm_model_load(&model_model, NULL, &model, &status) != TFM_OK) {
    fprintf(stderr, "error: %s\n", status.message);
    return 1;
  }
  const tfm_entry_point *entry = &tfm_model_get_desc(model)->entry_points[0];
  int32_t *ids = malloc(sizeof *ids * seq), *types = calloc(seq, sizeof *types);
  for (int i = 0; i < seq; ++i)
    ids[i] = 1000 + i;
  tfm_tensor inputs[2] = {{ids, TFM_DTYPE_I32, 1, {seq}, NULL},
                          {types, TFM_DTYPE_I32, 1, {seq}, NULL}};
  const tfm_tensor_desc *first = &entry->inputs[0];
  if (first->role == TFM_ROLE_FEATURES) {
    int64_t count = 1;
    for (int32_t d = 0; d < first->rank; ++d)
      count *= first->shape[d];
    float *pixels = malloc(sizeof *pixels * count);
    for (int64_t i = 0; i < count; ++i)
      pixels[i] = (float)((i % 100) * 0.01);
    inputs[0] = (tfm_tensor){pixels, TFM_DTYPE_F32, first->rank, {0}, NULL};
    for (int32_t d = 0; d < first->rank; ++d)
      inputs[0].shape[d] = first->shape[d];
  }
  double best = 1e30, total = 0;
  for (int r = -2; r < reps; ++r) {
    tfm_tensor out;
    double start = now();
    if (tfm_model_call(model, entry->name, inputs, entry->num_inputs, NULL,
                       &out, 1, &status) != TFM_OK) {
      fprintf(stderr, "error: %s\n", status.message);
      return 1;
    }
    double elapsed = now() - start;
    tfm_tensor_release(&out);
    if (r < 0)
      continue;
    total += elapsed;
    if (elapsed < best)
      best = elapsed;
  }
  printf("{\"seconds_per_call\": %.6f, \"best_seconds\": %.6f}\n", total / reps,
         best);
  tfm_model_free(model);
  return 0;
}
