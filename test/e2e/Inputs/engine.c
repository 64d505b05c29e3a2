/* The batch engine (runtime/include/tfm/tfm_engine.h) against sessions, on a
 * decoder library built with --prefix model:
 *  - batched: requests of mixed prompt lengths, more than the engine runs
 *    at once, prompts prefilled in small chunks; each request's tokens
 *    equal tfm_generate's alone (greedy, and sampled with its seed);
 *  - preemption: the same through a pool too small for all of them;
 *  - sharing: 16 requests with one long common prefix hold about one
 *    sequence's blocks;
 *  - churn: 10,000 requests of random lengths, some cancelled, through a
 *    small pool; afterwards no block is held and every block is counted;
 *  - errors: what submit, cancel, step and new refuse.
 * Arguments: the churn's requests (10000), and micro_batch_rows for the
 * batched checks (the engine's default): a model in pipeline stages then
 * runs a step's chunks as micro-batches, more model calls than steps. */
#include "model.h"
#include "tfm/tfm_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxNew = 24, kRequests = 7 };

static tfm_model *model;

static int failed(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK)
    fprintf(stderr, "error: %s\n", status->message);
  return code != TFM_OK;
}

/* Deterministic pseudo-random numbers (no libc state). */
static uint64_t rng = 88172645463325252ull;
static uint32_t next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)rng;
}

/* Prompt `index`: BOS, then ids from a fixed stream; `shared` leading
 * tokens are the same in every prompt. */
static int64_t make_prompt(int32_t *out, int64_t length, int64_t shared,
                           uint32_t index) {
  out[0] = MODEL_BOS_TOKEN;
  for (int64_t i = 1; i < length; ++i) {
    uint32_t key = (uint32_t)i * 2654435761u + (i < shared ? 0 : index * 40503u);
    out[i] = (int32_t)(3 + key % (MODEL_VOCAB_SIZE - 3));
  }
  return length;
}

typedef struct {
  int32_t tokens[MODEL_MAX_CONTEXT];
  int64_t count;
  int finished;
} output;

static int collect(void *user, int32_t token, const char *text, size_t size) {
  (void)text, (void)size;
  output *o = user;
  o->tokens[o->count++] = token;
  return 0;
}

/* What tfm_generate makes of `prompt` alone. */
static int generate_alone(const int32_t *prompt, int64_t n,
                          const tfm_sampler_options *sampler, output *out) {
  tfm_status status;
  tfm_session *session;
  if (failed(tfm_session_new(model, &session, &status), &status))
    return 0;
  tfm_generate_options options = {.max_new_tokens = kMaxNew,
                                  .sampler = *sampler,
                                  .on_token = collect,
                                  .user = out};
  out->count = 0;
  int ok = !failed(tfm_generate(session, prompt, n, &options, NULL, &status),
                   &status);
  tfm_session_free(session);
  return ok;
}

/* Steps until the engine is empty, appending tokens to outputs[id - first]. */
static int run(tfm_engine *engine, output *outputs, int64_t first,
               int64_t max_steps) {
  static tfm_engine_event events[1024];
  tfm_status status;
  tfm_engine_stats stats;
  for (int64_t step = 0; step < max_steps; ++step) {
    int32_t count;
    if (failed(tfm_engine_step(engine, events, 1024, &count, &status),
               &status))
      return 0;
    for (int32_t i = 0; i < count; ++i) {
      output *o = &outputs[events[i].id - first];
      if (events[i].token >= 0)
        o->tokens[o->count++] = events[i].token;
      if (events[i].finish != TFM_FINISH_NONE)
        o->finished = 1;
    }
    tfm_engine_get_stats(engine, &stats);
    if (stats.running == 0 && stats.waiting == 0)
      return 1;
  }
  fprintf(stderr, "error: requests still running after %lld steps\n",
          (long long)max_steps);
  return 0;
}

/* kRequests prompts through an engine of `options`, against each alone. */
static int check_against_sessions(const char *name,
                                  const tfm_engine_options *options,
                                  const tfm_sampler_options *sampler) {
  static const int64_t lengths[kRequests] = {5, 40, 3, 77, 12, 33, 64};
  static int32_t prompts[kRequests][MODEL_MAX_CONTEXT];
  static output expected[kRequests], got[kRequests];
  tfm_status status;
  tfm_engine *engine;
  if (failed(tfm_engine_new(model, options, &engine, &status), &status))
    return 0;
  memset(got, 0, sizeof got);
  int64_t first = 0;
  for (int r = 0; r < kRequests; ++r) {
    make_prompt(prompts[r], lengths[r], 0, (uint32_t)r + 1);
    if (!generate_alone(prompts[r], lengths[r], sampler, &expected[r]))
      return 0;
    tfm_engine_request request = {prompts[r], lengths[r], kMaxNew, *sampler, 0};
    int64_t id;
    if (failed(tfm_engine_submit(engine, &request, &id, &status), &status))
      return 0;
    if (r == 0)
      first = id;
  }
  if (!run(engine, got, first, 10000))
    return 0;
  tfm_engine_stats stats;
  tfm_engine_get_stats(engine, &stats);
  int mismatches = 0;
  for (int r = 0; r < kRequests; ++r)
    if (!got[r].finished || got[r].count != expected[r].count ||
        memcmp(got[r].tokens, expected[r].tokens,
               (size_t)got[r].count * sizeof(int32_t)) != 0) {
      fprintf(stderr, "%s: request %d: %lld tokens, alone %lld\n", name, r,
              (long long)got[r].count, (long long)expected[r].count);
      ++mismatches;
    }
  printf("%s: %d of %d requests equal alone, %lld steps, %lld preemptions, "
         "%lld blocks held after, %s\n",
         name, kRequests - mismatches, kRequests, (long long)stats.steps,
         (long long)stats.preemptions, (long long)stats.kv_blocks_used,
         stats.model_calls > stats.steps ? "micro-batches"
                                         : "one model call a step");
  tfm_engine_free(engine);
  return mismatches == 0;
}

/* 16 requests sharing a prefix: blocks held once all are prefilled. */
static int check_sharing(void) {
  enum { kShared = 16, kPrefix = 256, kOwn = 8 };
  tfm_engine_options options = tfm_engine_default_options();
  options.max_sequences = kShared;
  tfm_status status;
  tfm_engine *engine;
  if (failed(tfm_engine_new(model, &options, &engine, &status), &status))
    return 0;
  static int32_t prompt[kPrefix + kOwn];
  static tfm_engine_event events[2 * kShared];
  tfm_engine_stats stats;
  int32_t count;
  /* The first request alone, then the others: they find its blocks. */
  for (int r = 0; r < kShared; ++r) {
    make_prompt(prompt, kPrefix + kOwn, kPrefix, (uint32_t)r + 1);
    tfm_engine_request request = {prompt, kPrefix + kOwn, 8,
                                  tfm_sampler_default_options(), 1};
    int64_t id;
    if (failed(tfm_engine_submit(engine, &request, &id, &status), &status) ||
        (r == 0 && failed(tfm_engine_step(engine, events, 2 * kShared, &count,
                                          &status),
                          &status)))
      return 0;
  }
  if (failed(tfm_engine_step(engine, events, 2 * kShared, &count, &status),
             &status))
    return 0;
  tfm_engine_get_stats(engine, &stats);
  /* Each holds positions [0, prompt + 2) after its second token. */
  int64_t size = stats.kv_block_positions;
  int64_t shared = kPrefix / size;
  int64_t one = (kPrefix + kOwn + 2 + size - 1) / size;
  int64_t expected = shared + kShared * (one - shared);
  printf("sharing: %d sequences with a %d-token prefix hold %lld blocks of "
         "%lld positions (expected %lld; one sequence %lld: %.2fx), %lld "
         "shared, %lld prompt tokens reused\n",
         kShared, kPrefix, (long long)stats.kv_blocks_used, (long long)size,
         (long long)expected, (long long)one,
         (double)stats.kv_blocks_used / (double)one,
         (long long)stats.kv_blocks_shared,
         (long long)stats.prefix_tokens_reused);
  tfm_engine_free(engine);
  return stats.kv_blocks_used == expected && stats.kv_blocks_shared == shared &&
         stats.prefix_tokens_reused == (kShared - 1) * shared * size;
}

/* Many requests of random lengths, every fifth cancelled early. */
static int check_churn(int64_t total) {
  tfm_engine_options options = tfm_engine_default_options();
  options.max_sequences = 8;
  options.prefill_chunk = 64;
  tfm_status status;
  tfm_engine *engine;
  /* Room for one full context: preemption happens. */
  tfm_engine *probe;
  if (failed(tfm_engine_new(model, &options, &probe, &status), &status))
    return 0;
  tfm_engine_stats stats;
  tfm_engine_get_stats(probe, &stats);
  tfm_engine_free(probe);
  options.kv_pool_bytes = stats.kv_block_bytes * MODEL_MAX_CONTEXT /
                          stats.kv_block_positions;
  if (failed(tfm_engine_new(model, &options, &engine, &status), &status))
    return 0;
  static int32_t prompt[MODEL_MAX_CONTEXT];
  static tfm_engine_event events[16];
  int64_t submitted = 0, finished = 0, cancelled = 0, tokens = 0;
  int64_t live[64], live_count = 0;
  while (finished + cancelled < total) {
    while (submitted < total && live_count < 24) {
      int64_t length = 1 + next_random() % (MODEL_MAX_CONTEXT / 4);
      make_prompt(prompt, length, next_random() % 2 ? length : 0,
                  next_random() % 4);
      tfm_engine_request request = {prompt, length,
                                    1 + next_random() % 8,
                                    tfm_sampler_default_options(), 1};
      if (failed(tfm_engine_submit(engine, &request, &live[live_count++],
                                   &status),
                 &status))
        return 0;
      ++submitted;
    }
    if (next_random() % 5 == 0) {
      int64_t victim = next_random() % live_count;
      if (failed(tfm_engine_cancel(engine, live[victim], &status), &status))
        return 0;
      live[victim] = live[--live_count];
      ++cancelled;
    }
    int32_t count;
    if (failed(tfm_engine_step(engine, events, 16, &count, &status), &status))
      return 0;
    for (int32_t i = 0; i < count; ++i) {
      tokens += events[i].token >= 0;
      if (events[i].finish == TFM_FINISH_NONE)
        continue;
      for (int64_t l = 0; l < live_count; ++l)
        if (live[l] == events[i].id) {
          live[l] = live[--live_count];
          break;
        }
      ++finished;
    }
  }
  tfm_engine_get_stats(engine, &stats);
  printf("churn: %lld requests (%lld cancelled), %lld tokens, %lld "
         "preemptions; after: %lld running, %lld waiting, %lld of %lld blocks "
         "held, %lld kept for their prefix\n",
         (long long)total, (long long)cancelled, (long long)tokens,
         (long long)stats.preemptions, (long long)stats.running,
         (long long)stats.waiting, (long long)stats.kv_blocks_used,
         (long long)stats.kv_blocks, (long long)stats.kv_blocks_cached);
  tfm_engine_free(engine);
  return stats.kv_blocks_used == 0 && stats.running == 0 && stats.waiting == 0;
}

static void refused(tfm_status_code code, const tfm_status *status) {
  if (code == TFM_OK)
    printf("NOT refused\n");
  else
    printf("refused: %s\n", status->message);
}

static void check_errors(void) {
  tfm_status status;
  tfm_engine *engine;
  int64_t id;
  static int32_t prompt[MODEL_MAX_CONTEXT];
  make_prompt(prompt, MODEL_MAX_CONTEXT, 0, 1);
  tfm_engine_options options = tfm_engine_default_options();
  options.max_sequences = -1;
  refused(tfm_engine_new(model, &options, &engine, &status), &status);
  options = tfm_engine_default_options();
  options.kv_pool_bytes = 100;
  refused(tfm_engine_new(model, &options, &engine, &status), &status);
  /* Blocks larger than a sequence: no size past the context divides it
   * (the search for one never ended). */
  options = tfm_engine_default_options();
  options.block_positions = MODEL_MAX_CONTEXT + 1;
  refused(tfm_engine_new(model, &options, &engine, &status), &status);
  refused(tfm_engine_new(NULL, NULL, &engine, &status), &status);
  if (failed(tfm_engine_new(model, NULL, &engine, &status), &status))
    return;
  tfm_engine_request request = {prompt, MODEL_MAX_CONTEXT, 4,
                                tfm_sampler_default_options(), 0};
  refused(tfm_engine_submit(engine, &request, &id, &status), &status);
  request.prompt_count = 0;
  refused(tfm_engine_submit(engine, &request, &id, &status), &status);
  prompt[1] = MODEL_VOCAB_SIZE;
  request.prompt_count = 3;
  refused(tfm_engine_submit(engine, &request, &id, &status), &status);
  prompt[1] = 5;
  request.sampler.top_p = 2;
  refused(tfm_engine_submit(engine, &request, &id, &status), &status);
  request.sampler = tfm_sampler_default_options();
  request.prompt = NULL;
  refused(tfm_engine_submit(engine, &request, &id, &status), &status);
  refused(tfm_engine_cancel(engine, 12345, &status), &status);
  tfm_engine_event events[4];
  int32_t count;
  refused(tfm_engine_step(engine, events, 4, &count, &status), &status);
  tfm_engine_free(engine);
}

int main(int argc, char **argv) {
  int64_t churn = argc > 1 ? atoll(argv[1]) : 10000;
  int64_t micro_batch_rows = argc > 2 ? atoll(argv[2]) : 0;
  tfm_status status;
  if (failed(tfm_model_load(&model_model, NULL, &model, &status), &status))
    return 1;
  tfm_engine_options options = tfm_engine_default_options();
  options.max_sequences = 4;
  options.prefill_chunk = 24;
  options.micro_batch_rows = micro_batch_rows;
  tfm_sampler_options greedy = tfm_sampler_default_options();
  tfm_sampler_options sampled = greedy;
  sampled.temperature = 0.9f;
  sampled.top_p = 0.95f;
  sampled.seed = 7;
  int ok = check_against_sessions("greedy", &options, &greedy) &&
           check_against_sessions("sampled", &options, &sampled);
  /* A pool of two requests' whole lengths (128 positions, in whole
   * blocks) for four sequences: preemption. */
  tfm_engine *probe;
  tfm_engine_stats stats;
  if (ok && !failed(tfm_engine_new(model, &options, &probe, &status), &status)) {
    tfm_engine_get_stats(probe, &stats);
    tfm_engine_free(probe);
    options.kv_pool_bytes =
        stats.kv_block_bytes * 2 *
        ((128 + stats.kv_block_positions - 1) / stats.kv_block_positions);
    ok = check_against_sessions("preempted", &options, &greedy);
  }
  ok = ok && check_sharing() && check_churn(churn);
  check_errors();
  tfm_model_free(model);
  return ok ? 0 : 1;
}
