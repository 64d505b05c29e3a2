/* bench/encode_bench.c: times an encoder compiled with --emit=lib (header
 * model.h, symbol model_model via --prefix model) through tfm_model_call of
 * its first entry point on one sequence of SEQ tokens (ids 1000 + i, types
 * 0), after two untimed calls. Prints one JSON line: seconds per call. */
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
