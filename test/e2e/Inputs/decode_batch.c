/* @decode_batch against @decode: three sequences with prompts of different
 * lengths, each prefilled alone, then stepped twice one at a time
 * (@decode, each with its own cache) and twice all together (@decode_batch,
 * row b at its own position in its own sequence of one batched cache, the
 * sequences out of order and one unused). The logits must agree within
 * 1e-5. Then the rows' checks: positions past the cache, a sequence out of
 * range, two rows on one sequence, counts that disagree. Linked with a
 * decoder library built with --prefix model. `decode-batch P` puts P
 * filler tokens before each prompt, so that the rows run at later
 * positions (past a dynamic-NTK model's trained context). */
#include "model.h"

#include "cache_calls.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSequences = 3, kSteps = 2, kSlots = 4 };

static const int32_t prompts[kSequences][5] = {
    {1, 7, 9}, {1, 30, 2, 18, 40}, {1, 5}};
static const int64_t lengths[kSequences] = {3, 5, 2};
/* Which sequence of the batched cache each row uses. */
static const int32_t slot_of[kSequences] = {2, 0, 3};

/* @prefill or @decode of `n` tokens at `start` into `cache`; the logits of
 * the last one into `logits`. */
static int run_cached(tfm_model *model, const char *name,
                      const int32_t *tokens, int64_t n, int64_t start,
                      tfm_tensor *cache, float *logits) {
  tfm_status status;
  int64_t position = start, slot = start;
  tfm_tensor inputs[3] = {ids(tokens, n), scalar(&position), scalar(&slot)};
  tfm_tensor output;
  if (failed(tfm_model_call(model, name, inputs, 3, &cache, &output, 1,
                            &status),
             &status))
    return 0;
  memcpy(logits, output.data, MODEL_VOCAB_SIZE * sizeof *logits);
  tfm_tensor_release(&output);
  return 1;
}

/* One @decode_batch call; returns its status code, the logits in `logits`
 * ([rows, vocab]) when it succeeds, its message in `status`. */
static tfm_status_code run_batch(tfm_model *model, const int32_t *tokens,
                                 const int32_t *positions,
                                 const int32_t *sequences, int64_t rows,
                                 int64_t position_count, tfm_tensor *batched,
                                 float *logits, tfm_status *status) {
  tfm_tensor inputs[3] = {ids(tokens, rows), ids(positions, position_count),
                          ids(sequences, rows)};
  tfm_tensor output;
  tfm_status_code code = tfm_model_call(model, "decode_batch", inputs, 3,
                                        &batched, &output, 1, status);
  if (code == TFM_OK) {
    memcpy(logits, output.data,
           (size_t)(rows * MODEL_VOCAB_SIZE) * sizeof *logits);
    tfm_tensor_release(&output);
  }
  return code;
}

enum { kMaxFiller = 64 };

int main(int argc, char **argv) {
  int filler = argc > 1 ? atoi(argv[1]) : 0;
  if (filler < 0 || filler > kMaxFiller) {
    fprintf(stderr, "error: 0 to %d filler tokens\n", kMaxFiller);
    return 1;
  }
  int32_t sequences[kSequences][kMaxFiller + 5];
  int64_t sequence_lengths[kSequences];
  for (int b = 0; b < kSequences; ++b) {
    for (int i = 0; i < filler; ++i)
      sequences[b][i] = (int32_t)((5 * i + 3) % MODEL_VOCAB_SIZE);
    memcpy(sequences[b] + filler, prompts[b], sizeof prompts[b]);
    sequence_lengths[b] = filler + lengths[b];
  }
  tfm_status status;
  tfm_model *model;
  if (failed(tfm_model_load(&model_model, NULL, &model, &status), &status))
    return 1;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_cache_desc *cache = sequence_cache(desc);
  if (!cache || !tfm_model_entry_point(model, "decode_batch")) {
    fprintf(stderr, "error: no one-sequence cache or @decode_batch\n");
    return 1;
  }
  size_t floats = 1;
  for (int d = 0; d < 5; ++d)
    floats *= (size_t)cache->shape[d];
  float *alone = calloc(kSequences * floats, sizeof(float));
  float *slots = calloc(kSlots * floats, sizeof(float));
  static float expected[kSteps][kSequences][MODEL_VOCAB_SIZE];
  static float got[kSequences][MODEL_VOCAB_SIZE];
  static float scratch[MODEL_VOCAB_SIZE];
  int32_t next[kSteps][kSequences];

  /* Each sequence alone: prefill, then kSteps decodes of its argmax. */
  for (int b = 0; b < kSequences; ++b) {
    tfm_tensor own = cache_view(cache, alone + b * floats);
    tfm_tensor slot = cache_view(cache, slots + slot_of[b] * floats);
    if (!run_cached(model, "prefill", sequences[b], sequence_lengths[b], 0,
                    &own, scratch) ||
        !run_cached(model, "prefill", sequences[b], sequence_lengths[b], 0,
                    &slot, scratch))
      return 1;
    int32_t token = tfm_argmax(scratch, MODEL_VOCAB_SIZE);
    for (int s = 0; s < kSteps; ++s) {
      next[s][b] = token;
      if (!run_cached(model, "decode", &token, 1, sequence_lengths[b] + s,
                      &own, expected[s][b]))
        return 1;
      token = tfm_argmax(expected[s][b], MODEL_VOCAB_SIZE);
    }
  }

  /* All together, the same tokens. */
  tfm_tensor batched = {slots, TFM_DTYPE_F32, 6, {kSlots}, NULL};
  memcpy(batched.shape + 1, cache->shape, 5 * sizeof *batched.shape);
  double worst = 0;
  for (int s = 0; s < kSteps; ++s) {
    int32_t positions[kSequences];
    for (int b = 0; b < kSequences; ++b)
      positions[b] = (int32_t)(sequence_lengths[b] + s);
    if (failed(run_batch(model, next[s], positions, slot_of, kSequences,
                         kSequences, &batched, &got[0][0], &status),
               &status))
      return 1;
    for (int b = 0; b < kSequences; ++b)
      for (int v = 0; v < MODEL_VOCAB_SIZE; ++v)
        worst = fmax(worst, fabs(got[b][v] - expected[s][b][v]));
  }
  printf("%s: max abs difference %.3g over %d steps of %d sequences\n",
         worst <= 1e-5 ? "OK" : "MISMATCH", worst, kSteps, kSequences);

  /* What the rows are checked for before the call. */
  int32_t tokens[2] = {3, 4}, positions[2] = {1, 2};
  int32_t past[2] = {1, (int32_t)cache->shape[2]}, negative[2] = {-1, 1};
  int32_t beyond[2] = {0, kSlots}, same[2] = {1, 1}, apart[2] = {0, 1};
  struct {
    const int32_t *positions, *sequences;
    int64_t position_count;
  } bad[] = {{past, apart, 2},
             {negative, apart, 2},
             {positions, beyond, 2},
             {positions, same, 2},
             {positions, apart, 1}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    tfm_status_code code =
        run_batch(model, tokens, bad[i].positions, bad[i].sequences, 2,
                  bad[i].position_count, &batched, &got[0][0], &status);
    printf("%s: %s\n", code == TFM_OK ? "accepted" : "refused",
           status.message);
  }
  free(alone);
  free(slots);
  tfm_model_free(model);
  return 0;
}
