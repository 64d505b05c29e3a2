/* bench/engine_bench.c: the batch engine (runtime/include/tfm/tfm_engine.h) on
 * a model compiled with --emit=lib, without HTTP. Driven by compare_serving.py.
 *
 *   engine_bench LIBRARY SYMBOL decode B PROMPT STEPS [MICRO]
 *     B requests of PROMPT random tokens prefilled, then STEPS decode steps
 *     timed: one line of JSON with the aggregate decode tokens/s.
 *   engine_bench LIBRARY SYMBOL prefill B PROMPT CHUNK [MICRO]
 *     B requests of PROMPT random tokens prefilled, CHUNK prompt tokens a
 *     step, timed: one line of JSON with the prompt tokens/s.
 *   MICRO: the engine's micro_batch_rows (a model in pipeline stages runs
 *     a step's chunks as micro-batches of at least that many rows; 0: the
 *     default); the JSON counts the model's calls and the steps.
 *   engine_bench LIBRARY SYMBOL share N PREFIX OWN BLOCK
 *     one request of PREFIX + OWN tokens prefilled (its KV blocks counted),
 *     then N - 1 more with the same PREFIX and their own OWN tokens: one
 *     line of JSON with the KV bytes of all N against one's. */
#include "tfm/tfm_engine.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int check(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK) {
    fprintf(stderr, "engine_bench: %s\n", status->message);
    exit(1);
  }
  return 1;
}

static uint32_t state = 12345;
static int32_t random_token(int64_t vocab) {
  state = state * 1664525u + 1013904223u;
  return (int32_t)(3 + (state >> 8) % (uint32_t)(vocab - 3));
}

/* Steps until no request is prefilling: returns the events' tokens. */
static int64_t step(tfm_engine *engine, tfm_engine_event *events,
                    int32_t capacity) {
  tfm_status status;
  int32_t count;
  check(tfm_engine_step(engine, events, capacity, &count, &status), &status);
  int64_t tokens = 0;
  for (int32_t i = 0; i < count; ++i)
    tokens += events[i].token >= 0;
  return tokens;
}

static void submit(tfm_engine *engine, const int32_t *prompt, int64_t n,
                   int64_t new_tokens) {
  tfm_status status;
  tfm_engine_request request = {prompt, n, new_tokens,
                                tfm_sampler_default_options(), 1};
  int64_t id;
  check(tfm_engine_submit(engine, &request, &id, &status), &status);
}

/* An engine of `options` (max_sequences: `batch`) with `batch` requests of
 * `prompt` random tokens, each to generate `new_tokens`. */
static tfm_engine *engine_with_requests(tfm_model *model,
                                        tfm_engine_options options,
                                        int32_t batch, int64_t prompt,
                                        int64_t new_tokens) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  options.max_sequences = batch;
  tfm_status status;
  tfm_engine *engine;
  check(tfm_engine_new(model, &options, &engine, &status), &status);
  int32_t *ids = malloc((size_t)prompt * sizeof *ids);
  for (int32_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < prompt; ++i)
      ids[i] = random_token(desc->vocab_size);
    submit(engine, ids, prompt, new_tokens);
  }
  free(ids);
  return engine;
}

static void decode(tfm_model *model, int32_t batch, int64_t prompt,
                   int64_t steps, int64_t micro_batch_rows) {
  tfm_engine_options options = tfm_engine_default_options();
  options.micro_batch_rows = micro_batch_rows;
  tfm_engine *engine =
      engine_with_requests(model, options, batch, prompt, steps + 2);
  tfm_engine_event *events = malloc(2 * (size_t)batch * sizeof *events);
  /* Prefilled and past the first decode: every request generating. */
  tfm_engine_stats stats;
  do {
    step(engine, events, 2 * batch);
    tfm_engine_get_stats(engine, &stats);
  } while (stats.prompt_tokens < batch * prompt);
  step(engine, events, 2 * batch);
  tfm_engine_get_stats(engine, &stats);
  int64_t calls = stats.model_calls;
  double start = now();
  int64_t tokens = 0;
  for (int64_t s = 0; s < steps; ++s)
    tokens += step(engine, events, 2 * batch);
  double seconds = now() - start;
  tfm_engine_get_stats(engine, &stats);
  printf("{\"batch\": %d, \"prompt\": %lld, \"steps\": %lld, \"tokens\": %lld, "
         "\"seconds\": %.6f, \"tokens_per_s\": %.3f, \"model_calls\": %lld}\n",
         batch, (long long)prompt, (long long)steps, (long long)tokens, seconds,
         tokens / seconds, (long long)(stats.model_calls - calls));
  tfm_engine_free(engine);
  free(events);
}

static void prefill(tfm_model *model, int32_t batch, int64_t prompt,
                    int64_t chunk, int64_t micro_batch_rows) {
  tfm_engine_options options = tfm_engine_default_options();
  options.prefill_chunk = chunk;
  options.micro_batch_rows = micro_batch_rows;
  tfm_engine *engine = engine_with_requests(model, options, batch, prompt, 2);
  tfm_engine_event *events = malloc(2 * (size_t)batch * sizeof *events);
  tfm_engine_stats stats;
  double start = now();
  do {
    step(engine, events, 2 * batch);
    tfm_engine_get_stats(engine, &stats);
  } while (stats.prompt_tokens < batch * prompt);
  double seconds = now() - start;
  printf("{\"batch\": %d, \"prompt\": %lld, \"chunk\": %lld, "
         "\"seconds\": %.6f, \"prompt_tokens_per_s\": %.3f, \"steps\": %lld, "
         "\"model_calls\": %lld}\n",
         batch, (long long)prompt, (long long)chunk, seconds,
         (double)stats.prompt_tokens / seconds, (long long)stats.steps,
         (long long)stats.model_calls);
  tfm_engine_free(engine);
  free(events);
}

static void share(tfm_model *model, int32_t n, int64_t prefix, int64_t own,
                  int32_t block) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  tfm_engine_options options = tfm_engine_default_options();
  options.max_sequences = n;
  options.block_positions = block;
  tfm_status status;
  tfm_engine *engine;
  check(tfm_engine_new(model, &options, &engine, &status), &status);
  int32_t *ids = malloc((size_t)(prefix + own) * sizeof *ids);
  tfm_engine_event *events = malloc(2 * (size_t)n * sizeof *events);
  for (int64_t i = 0; i < prefix; ++i)
    ids[i] = random_token(desc->vocab_size);
  tfm_engine_stats one, all;
  for (int32_t r = 0; r < n; ++r) {
    for (int64_t i = prefix; i < prefix + own; ++i)
      ids[i] = random_token(desc->vocab_size);
    submit(engine, ids, prefix + own, 8);
    if (r == 0) {
      step(engine, events, 2 * n); /* prefilled, one token decoded */
      tfm_engine_get_stats(engine, &one);
    }
  }
  step(engine, events, 2 * n);
  tfm_engine_get_stats(engine, &all);
  printf("{\"sequences\": %d, \"prefix\": %lld, \"own\": %lld, "
         "\"block_positions\": %lld, \"block_bytes\": %lld, "
         "\"one_bytes\": %lld, \"all_bytes\": %lld, \"shared_blocks\": %lld, "
         "\"prompt_tokens_reused\": %lld, \"ratio\": %.4f}\n",
         n, (long long)prefix, (long long)own,
         (long long)all.kv_block_positions, (long long)all.kv_block_bytes,
         (long long)(one.kv_blocks_used * one.kv_block_bytes),
         (long long)(all.kv_blocks_used * all.kv_block_bytes),
         (long long)all.kv_blocks_shared, (long long)all.prefix_tokens_reused,
         (double)all.kv_blocks_used / (double)one.kv_blocks_used);
  tfm_engine_free(engine);
  free(ids);
  free(events);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: engine_bench LIBRARY SYMBOL decode B PROMPT STEPS"
                    " [MICRO] | prefill B PROMPT CHUNK [MICRO] | share N "
                    "PREFIX OWN BLOCK\n");
    return 2;
  }
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "engine_bench: %s\n", dlerror());
    return 1;
  }
  const tfm_model_desc *desc = dlsym(library, argv[2]);
  if (!desc) {
    fprintf(stderr, "engine_bench: no symbol %s\n", argv[2]);
    return 1;
  }
  tfm_status status;
  tfm_model *model;
  check(tfm_model_load(desc, NULL, &model, &status), &status);
  int64_t micro = argc == 8 ? atoll(argv[7]) : 0;
  if (strcmp(argv[3], "decode") == 0 && (argc == 7 || argc == 8))
    decode(model, atoi(argv[4]), atoll(argv[5]), atoll(argv[6]), micro);
  else if (strcmp(argv[3], "prefill") == 0 && (argc == 7 || argc == 8))
    prefill(model, atoi(argv[4]), atoll(argv[5]), atoll(argv[6]), micro);
  else if (strcmp(argv[3], "share") == 0 && argc == 8)
    share(model, atoi(argv[4]), atoll(argv[5]), atoll(argv[6]), atoi(argv[7]));
  else
    return fprintf(stderr, "engine_bench: bad arguments\n"), 2;
  tfm_model_free(model);
  return 0;
}
