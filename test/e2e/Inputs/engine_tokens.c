/* The batch engine's tokens for two prompts on two sequences, sampled at
 * temperature 1.5 (seed 7), so that any change in the logits shows: one
 * line of "request:token" pairs, in the order the steps give them. Linked
 * with a model compiled as a static library (`--prefix model`), split over
 * MPI ranks or not, whose vocabulary has at least 12 tokens. */
#include "model.h"
#include "tfm/tfm_engine.h"

#include <stdio.h>

static int failed(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK)
    fprintf(stderr, "error: %s\n", status->message);
  return code != TFM_OK;
}

int main(void) {
  tfm_status status;
  tfm_model *model;
  if (failed(tfm_model_load(&model_model, NULL, &model, &status), &status))
    return 1;
  tfm_engine_options options = tfm_engine_default_options();
  options.max_sequences = 2;
  tfm_engine *engine;
  if (failed(tfm_engine_new(model, &options, &engine, &status), &status))
    return 1;
  tfm_sampler_options sampled = tfm_sampler_default_options();
  sampled.temperature = 1.5f;
  sampled.seed = 7;
  static const int32_t first[] = {1, 17, 42},
                       second[] = {5, 6, 7, 8, 9, 10, 11};
  tfm_engine_request requests[2] = {{first, 3, 25, sampled, 1},
                                    {second, 7, 20, sampled, 1}};
  int64_t id;
  for (int r = 0; r < 2; ++r)
    if (failed(tfm_engine_submit(engine, &requests[r], &id, &status), &status))
      return 1;
  tfm_engine_event events[4];
  tfm_engine_stats stats = {0};
  do {
    int32_t count;
    if (failed(tfm_engine_step(engine, events, 4, &count, &status), &status))
      return 1;
    for (int32_t i = 0; i < count; ++i)
      if (events[i].token >= 0)
        printf("%lld:%d ", (long long)events[i].id, events[i].token);
    tfm_engine_get_stats(engine, &stats);
  } while (stats.running || stats.waiting);
  printf("\nrings %lld bytes\n", (long long)stats.kv_ring_bytes);
  tfm_engine_free(engine);
  tfm_model_free(model);
  return 0;
}
