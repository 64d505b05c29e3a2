/* bench/seq2seq_bench.c: times an encoder-decoder compiled with --emit=lib
 * (header model.h, symbol model_model via --prefix model) generating NEW
 * tokens after its decoder start token, greedily or with a beam search of
 * BEAMS, from one source: SOURCE token ids (1000 + i, the last its
 * end-of-sequence token) or, for a speech model, its log-mel features
 * (values 0.01 i mod 1.5 - 0.5). One untimed run first; prints one JSON
 * line: the best and mean seconds per generation over REPS runs, the
 * tokens generated, and the seconds of @encode alone (best of REPS).
 *
 *   seq2seq_bench SOURCE NEW BEAMS REPS */
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

static void check(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK) {
    fprintf(stderr, "error: %s\n", status->message);
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s SOURCE NEW BEAMS REPS\n", argv[0]);
    return 2;
  }
  long source_length = atol(argv[1]), new_tokens = atol(argv[2]);
  int beams = atoi(argv[3]), reps = atoi(argv[4]);
  tfm_status status;
  tfm_model *model;
  check(tfm_model_load(&model_model, NULL, &model, &status), &status);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode");
  tfm_tensor source = {0};
  int32_t *ids = NULL;
  float *features = NULL;
  if (encode->inputs[0].dtype == TFM_DTYPE_F32) {
    int64_t count = 1;
    source.dtype = TFM_DTYPE_F32;
    source.rank = encode->inputs[0].rank;
    for (int d = 0; d < source.rank; ++d) {
      source.shape[d] = encode->inputs[0].shape[d];
      count *= source.shape[d];
    }
    features = malloc((size_t)count * sizeof *features);
    for (int64_t i = 0; i < count; ++i)
      features[i] = (float)((i % 150) * 0.01 - 0.5);
    source.data = features;
  } else {
    ids = malloc((size_t)source_length * sizeof *ids);
    for (long i = 0; i < source_length; ++i)
      ids[i] = (int32_t)(1000 + i);
    ids[source_length - 1] = (int32_t)desc->eos_token;
    source = (tfm_tensor){ids, TFM_DTYPE_I32, 1, {source_length}, NULL};
  }
  tfm_generation_rules rules;
  memset(&rules, 0, sizeof rules);
  if (desc->generation) {
    rules.prompt = desc->generation->prompt;
    rules.prompt_count = desc->generation->num_prompt;
  }
  int32_t *out = malloc((size_t)(new_tokens + 64) * sizeof *out);
  double best = 1e30, total = 0;
  int64_t count = 0;
  for (int r = -1; r < reps; ++r) {
    double start = now();
    if (beams > 1) {
      tfm_beam_options options = {beams, new_tokens, 1.0f, 0, NULL};
      check(tfm_seq2seq_beam_search_from(model, &source, &options, out,
                                         new_tokens + 64, &count, &status),
            &status);
    } else {
      tfm_generate_options options;
      memset(&options, 0, sizeof options);
      options.max_new_tokens = new_tokens;
      options.sampler = tfm_sampler_default_options();
      options.sampler.temperature = 0.0f;
      options.ignore_eos = 1;
      check(tfm_seq2seq_generate_from(model, &source, &options, &rules, out,
                                      new_tokens + 64, &count, &status),
            &status);
    }
    double elapsed = now() - start;
    if (r < 0)
      continue;
    total += elapsed;
    best = elapsed < best ? elapsed : best;
  }
  /* @encode alone: the source into a fresh cross-attention cache. */
  double encode_best = 1e30;
  const tfm_cache_desc *cross = &desc->caches[encode->caches[0]];
  int64_t cross_count = 1;
  tfm_tensor cache = {0, cross->dtype, cross->rank, {0}, NULL};
  for (int d = 0; d < cross->rank; ++d) {
    cache.shape[d] = cross->shape[d];
    cross_count *= cross->shape[d];
  }
  cache.data = calloc((size_t)cross_count, sizeof(float));
  tfm_tensor *caches[1] = {&cache};
  for (int r = 0; r < reps; ++r) {
    tfm_tensor hidden;
    double start = now();
    check(tfm_model_call(model, "encode", &source, 1, caches, &hidden, 1,
                         &status),
          &status);
    double elapsed = now() - start;
    tfm_tensor_release(&hidden);
    encode_best = elapsed < encode_best ? elapsed : encode_best;
  }
  printf("{\"best_seconds\": %.6f, \"mean_seconds\": %.6f, \"tokens\": %lld, "
         "\"encode_seconds\": %.6f}\n",
         best, total / reps, (long long)count, encode_best);
  free(cache.data);
  free(out);
  free(ids);
  free(features);
  tfm_model_free(model);
  return 0;
}
