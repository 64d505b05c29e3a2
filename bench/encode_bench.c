/* bench/encode_bench.c: times an encoder compiled with --emit=lib (header
 * model.h, symbol model_model via --prefix model) through tfm_model_call of
 * its first entry point on one sequence of SEQ tokens (ids 1000 + i, types
 * 0), or for an image model on one image of its declared shape (values
 * 0.01 i mod 1), after two untimed calls. Prints one JSON line: seconds per
 * call. `encode_bench SEQ REPS OUT` also writes the call's first output to
 * OUT as raw f32 (compare_encoders.py --accuracy).
 *
 * `encode_bench --batch B MIN MAX REPS`: B sequences of MIN to MAX tokens
 * (spread evenly, in a shuffled order), three ways: packed into one call
 * of the packed twin (@encode_batch), one call of @encode each, and packed
 * with every sequence padded to the batch's longest (the work a padded
 * batch does). Prints seconds per batch of each, and the batch's tokens.
 *
 * `encode_bench --images N REPS`: an image model on N images, one call of
 * its batch twin (@encode_batch, tfm-batch-images) and one call of @encode
 * each. Prints seconds per N images of both. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The best of `reps` timed calls after `warmup` untimed ones; their mean
 * in *mean when asked. Exits on an error. */
static double time_calls(tfm_model *model, const char *name,
                         tfm_tensor *inputs, int n, int warmup, int reps,
                         double *mean) {
  double best = 1e30, total = 0;
  tfm_status status;
  for (int r = -warmup; r < reps; ++r) {
    tfm_tensor out;
    double start = now();
    if (tfm_model_call(model, name, inputs, n, NULL, &out, 1, &status) !=
        TFM_OK) {
      fprintf(stderr, "error: %s\n", status.message);
      exit(1);
    }
    double elapsed = now() - start;
    tfm_tensor_release(&out);
    if (r < 0)
      continue;
    total += elapsed;
    if (elapsed < best)
      best = elapsed;
  }
  if (mean)
    *mean = total / reps;
  return best;
}

/* The best of `reps` passes (after one untimed pass) of one call of
 * `entry` per item, items[i] holding item i's inputs: whole passes, as a
 * batch call is timed, since a sum of per-item bests would flatter them. */
static double time_passes(tfm_model *model, const tfm_entry_point *entry,
                          tfm_tensor (*items)[2], int count, int reps) {
  double best = 1e30;
  for (int r = -1; r < reps; ++r) {
    double start = now();
    for (int i = 0; i < count; ++i)
      time_calls(model, entry->name, items[i], entry->num_inputs, 0, 1, NULL);
    double elapsed = now() - start;
    if (r >= 0 && elapsed < best)
      best = elapsed;
  }
  return best;
}

/* The --batch mode (see the top). */
static int bench_batch(tfm_model *model, int batch, int min, int max,
                       int reps) {
  const tfm_entry_point *entry = &tfm_model_get_desc(model)->entry_points[0];
  char packed_name[128];
  snprintf(packed_name, sizeof packed_name, "%s_batch", entry->name);
  int32_t *lengths = malloc(sizeof *lengths * batch);
  int32_t *padded = malloc(sizeof *padded * batch);
  long total = 0, longest = 0;
  for (int b = 0; b < batch; ++b) {
    int spread = batch > 1 ? (max - min) * ((b * 7) % batch) / (batch - 1) : 0;
    lengths[b] = min + spread;
    total += lengths[b];
    longest = lengths[b] > longest ? lengths[b] : longest;
  }
  for (int b = 0; b < batch; ++b)
    padded[b] = (int32_t)longest;
  long capacity = longest * batch;
  int32_t *ids = malloc(sizeof *ids * capacity);
  int32_t *types = calloc(capacity, sizeof *types);
  for (long i = 0; i < capacity; ++i)
    ids[i] = 1000 + (int32_t)(i % 512);
  tfm_tensor packed[3] = {{ids, TFM_DTYPE_I32, 1, {total}, NULL},
                          {types, TFM_DTYPE_I32, 1, {total}, NULL},
                          {lengths, TFM_DTYPE_I32, 1, {batch}, NULL}};
  double packed_s = time_calls(model, packed_name, packed, 3, 1, reps, NULL);
  packed[0].shape[0] = packed[1].shape[0] = capacity;
  packed[2].data = padded;
  double padded_s = time_calls(model, packed_name, packed, 3, 1, reps, NULL);
  tfm_tensor(*items)[2] = malloc(sizeof *items * batch);
  for (int b = 0; b < batch; ++b) {
    items[b][0] = (tfm_tensor){ids, TFM_DTYPE_I32, 1, {lengths[b]}, NULL};
    items[b][1] = (tfm_tensor){types, TFM_DTYPE_I32, 1, {lengths[b]}, NULL};
  }
  double alone_s = time_passes(model, entry, items, batch, reps);
  free(items);
  printf("{\"tokens\": %ld, \"packed_seconds\": %.6f, \"padded_seconds\": "
         "%.6f, \"one_by_one_seconds\": %.6f, \"lengths\": [",
         total, packed_s, padded_s, alone_s);
  for (int b = 0; b < batch; ++b)
    printf("%s%d", b ? ", " : "", lengths[b]);
  printf("]}\n");
  return 0;
}

/* One image of the entry point's features shape per `count` floats, as
 * the single-image mode fills it. */
static float *pixels_of(const tfm_tensor_desc *features, int images,
                        int64_t *count) {
  *count = 1;
  for (int32_t d = 0; d < features->rank; ++d)
    *count *= features->shape[d];
  float *pixels = malloc(sizeof *pixels * *count * images);
  for (int64_t i = 0; i < *count * images; ++i)
    pixels[i] = (float)((i % 100) * 0.01);
  return pixels;
}

/* The --images mode (see the top). */
static int bench_images(tfm_model *model, int images, int reps) {
  const tfm_entry_point *entry = &tfm_model_get_desc(model)->entry_points[0];
  const tfm_tensor_desc *features = &entry->inputs[0];
  if (features->role != TFM_ROLE_FEATURES) {
    fprintf(stderr, "error: @%s takes no images\n", entry->name);
    return 1;
  }
  char batch_name[128];
  snprintf(batch_name, sizeof batch_name, "%s_batch", entry->name);
  int64_t count;
  float *pixels = pixels_of(features, images, &count);
  tfm_tensor batch = {pixels, TFM_DTYPE_F32, features->rank + 1, {images},
                      NULL};
  memcpy(batch.shape + 1, features->shape,
         sizeof *features->shape * features->rank);
  double batch_s = time_calls(model, batch_name, &batch, 1, 1, reps, NULL);
  tfm_tensor(*items)[2] = malloc(sizeof *items * images);
  for (int i = 0; i < images; ++i) {
    items[i][0] = (tfm_tensor){pixels + i * count, TFM_DTYPE_F32,
                               features->rank, {0}, NULL};
    memcpy(items[i][0].shape, features->shape,
           sizeof *features->shape * features->rank);
  }
  double alone_s = time_passes(model, entry, items, images, reps);
  free(items);
  printf("{\"batch_seconds\": %.6f, \"one_by_one_seconds\": %.6f}\n", batch_s,
         alone_s);
  free(pixels);
  return 0;
}

/* One more call of `entry`, its first output's floats written to `path`. */
static int write_output(tfm_model *model, const tfm_entry_point *entry,
                        tfm_tensor *inputs, const char *path) {
  tfm_status status;
  tfm_tensor out;
  if (tfm_model_call(model, entry->name, inputs, entry->num_inputs, NULL, &out,
                     1, &status) != TFM_OK) {
    fprintf(stderr, "error: %s\n", status.message);
    return 1;
  }
  int64_t count = 1;
  for (int32_t d = 0; d < out.rank; ++d)
    count *= out.shape[d];
  FILE *file = fopen(path, "wb");
  int written = file && fwrite(out.data, sizeof(float), (size_t)count, file) ==
                            (size_t)count;
  if (file)
    fclose(file);
  tfm_tensor_release(&out);
  if (!written)
    fprintf(stderr, "error: cannot write %s\n", path);
  return !written;
}

int main(int argc, char **argv) {
  tfm_status status;
  tfm_model *model;
  if (tfm_model_load(&model_model, NULL, &model, &status) != TFM_OK) {
    fprintf(stderr, "error: %s\n", status.message);
    return 1;
  }
  if (argc == 6 && !strcmp(argv[1], "--batch")) {
    int code = bench_batch(model, atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                           atoi(argv[5]));
    tfm_model_free(model);
    return code;
  }
  if (argc == 4 && !strcmp(argv[1], "--images")) {
    int code = bench_images(model, atoi(argv[2]), atoi(argv[3]));
    tfm_model_free(model);
    return code;
  }
  int seq = argc > 1 ? atoi(argv[1]) : 128, reps = argc > 2 ? atoi(argv[2]) : 20;
  const tfm_entry_point *entry = &tfm_model_get_desc(model)->entry_points[0];
  int32_t *ids = malloc(sizeof *ids * seq), *types = calloc(seq, sizeof *types);
  for (int i = 0; i < seq; ++i)
    ids[i] = 1000 + i;
  tfm_tensor inputs[2] = {{ids, TFM_DTYPE_I32, 1, {seq}, NULL},
                          {types, TFM_DTYPE_I32, 1, {seq}, NULL}};
  const tfm_tensor_desc *first = &entry->inputs[0];
  if (first->role == TFM_ROLE_FEATURES) {
    int64_t count;
    float *pixels = pixels_of(first, 1, &count);
    inputs[0] = (tfm_tensor){pixels, TFM_DTYPE_F32, first->rank, {0}, NULL};
    for (int32_t d = 0; d < first->rank; ++d)
      inputs[0].shape[d] = first->shape[d];
  }
  double mean;
  double best = time_calls(model, entry->name, inputs, entry->num_inputs, 2,
                           reps, &mean);
  printf("{\"seconds_per_call\": %.6f, \"best_seconds\": %.6f}\n", mean,
         best);
  int code = argc > 3 ? write_output(model, entry, inputs, argv[3]) : 0;
  tfm_model_free(model);
  return code;
}
