/* @prefill_batch against @prefill and @decode: three sequences with prompts
 * of different lengths, advanced in steps that mix prompt chunks of
 * different lengths at different positions with generated tokens (chunks
 * of one), each step one @prefill_batch call over one batched cache (the
 * sequences out of order, one of its sequences unused). The same chunks run
 * alone, each sequence with its own cache, through @prefill (prompt chunks)
 * and @decode (generated tokens): every chunk's last logits must agree
 * within 1e-5, and the greedy tokens be equal. Then the chunks' checks.
 * Linked with a decoder library built with --prefix model. */
#include "model.h"

#include "cache_calls.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSequences = 3, kSlots = 4, kMaxChunks = 3, kGenerated = 4 };

static const int32_t prompts[kSequences][9] = {
    {1, 7, 9, 12, 3, 44}, {1, 30, 2, 18, 40, 6, 61, 5, 20}, {1, 5, 8, 13}};
static const int64_t prompt_lengths[kSequences] = {6, 9, 4};
static const int32_t slot_of[kSequences] = {2, 0, 3};

/* The steps: how many prompt tokens each sequence takes (0: none; once its
 * prompt is done, a sequence takes its generated token, a chunk of 1). */
static const int64_t plan[][kSequences] = {
    {4, 5, 0}, {2, 4, 3}, {-1, -1, 1}, {-1, -1, -1}, {-1, -1, -1}};
enum { kSteps = sizeof plan / sizeof *plan };

/* @prefill or @decode of `n` tokens at `start` into `cache` (`data`); the
 * logits of the last one into `logits`. */
static int run_alone(tfm_model *model, const tfm_cache_desc *desc,
                     float *data, const int32_t *tokens, int64_t n,
                     int64_t start, float *logits) {
  tfm_status status;
  tfm_tensor cache = cache_view(desc, data), *caches = &cache;
  int64_t position = start, slot = start;
  tfm_tensor inputs[3] = {ids(tokens, n), scalar(&position), scalar(&slot)};
  tfm_tensor output;
  if (failed(tfm_model_call(model, n == 1 ? "decode" : "prefill", inputs, 3,
                            &caches, &output, 1, &status),
             &status))
    return 0;
  memcpy(logits, output.data, MODEL_VOCAB_SIZE * sizeof *logits);
  tfm_tensor_release(&output);
  return 1;
}

/* One @prefill_batch call of `chunks` chunks over `tokens` tokens; the
 * chunks' last logits in `logits` when it succeeds. */
static tfm_status_code run_batch(tfm_model *model, tfm_tensor *batched,
                                 const int32_t *tokens,
                                 const int32_t *positions, int64_t tokens_n,
                                 int64_t positions_n,
                                 const int32_t *sequences,
                                 const int32_t *lengths, int64_t chunks,
                                 float *logits, tfm_status *status) {
  tfm_tensor inputs[4] = {ids(tokens, tokens_n), ids(positions, positions_n),
                          ids(sequences, chunks), ids(lengths, chunks)};
  tfm_tensor output;
  tfm_status_code code = tfm_model_call(model, "prefill_batch", inputs, 4,
                                        &batched, &output, 1, status);
  if (code == TFM_OK) {
    memcpy(logits, output.data,
           (size_t)(chunks * MODEL_VOCAB_SIZE) * sizeof *logits);
    tfm_tensor_release(&output);
  }
  return code;
}

int main(void) {
  tfm_status status;
  tfm_model *model;
  if (failed(tfm_model_load(&model_model, NULL, &model, &status), &status))
    return 1;
  const tfm_cache_desc *cache = sequence_cache(tfm_model_get_desc(model));
  if (!cache || !tfm_model_entry_point(model, "prefill_batch")) {
    fprintf(stderr, "error: no one-sequence cache or @prefill_batch\n");
    return 1;
  }
  size_t floats = 1;
  for (int d = 0; d < 5; ++d)
    floats *= (size_t)cache->shape[d];
  float *alone = calloc(kSequences * floats, sizeof(float));
  float *slots = calloc(kSlots * floats, sizeof(float));
  tfm_tensor batched = {slots, TFM_DTYPE_F32, 6, {kSlots}, NULL};
  memcpy(batched.shape + 1, cache->shape, 5 * sizeof *batched.shape);

  /* Tokens of each sequence: the prompt, then what both sides generate
   * (taken from the sequence alone; compared with the batch's). */
  int32_t sequence[kSequences][32];
  int64_t known[kSequences], done[kSequences] = {0};
  for (int b = 0; b < kSequences; ++b) {
    memcpy(sequence[b], prompts[b], sizeof prompts[b]);
    known[b] = prompt_lengths[b];
  }
  static float expected[kMaxChunks][MODEL_VOCAB_SIZE];
  static float got[kMaxChunks][MODEL_VOCAB_SIZE];
  double worst = 0;
  int chunks_run = 0, tokens_equal = 1, longest = 0;
  for (int s = 0; s < kSteps; ++s) {
    int32_t tokens[32], positions[32], sequences[kMaxChunks],
        lengths[kMaxChunks];
    int owner[kMaxChunks];
    int64_t n_tokens = 0, n_chunks = 0;
    for (int b = 0; b < kSequences; ++b) {
      int64_t n = plan[s][b] < 0 ? 1 : plan[s][b];
      if (n == 0)
        continue;
      for (int64_t i = 0; i < n; ++i) {
        tokens[n_tokens] = sequence[b][done[b] + i];
        positions[n_tokens++] = (int32_t)(done[b] + i);
      }
      if (!run_alone(model, cache, alone + b * floats, sequence[b] + done[b],
                     n, done[b], expected[n_chunks]))
        return 1;
      sequences[n_chunks] = slot_of[b];
      lengths[n_chunks] = (int32_t)n;
      owner[n_chunks++] = b;
      longest = n > longest ? (int)n : longest;
    }
    if (failed(run_batch(model, &batched, tokens, positions, n_tokens,
                         n_tokens, sequences, lengths, n_chunks, &got[0][0],
                         &status),
               &status))
      return 1;
    for (int64_t c = 0; c < n_chunks; ++c) {
      int b = owner[c];
      for (int v = 0; v < MODEL_VOCAB_SIZE; ++v)
        worst = fmax(worst, fabs(got[c][v] - expected[c][v]));
      done[b] += lengths[c];
      if (done[b] == known[b]) { /* the chunk ends what is known: generate */
        int32_t alone_token = tfm_argmax(expected[c], MODEL_VOCAB_SIZE);
        tokens_equal &= alone_token == tfm_argmax(got[c], MODEL_VOCAB_SIZE);
        sequence[b][known[b]++] = alone_token;
      }
      ++chunks_run;
    }
  }
  printf("%s: max abs difference %.3g over %d chunks (1 to %d tokens) in %d "
         "steps; greedy tokens %s\n",
         worst <= 1e-5 && tokens_equal ? "OK" : "MISMATCH", worst,
         chunks_run, longest, (int)kSteps, tokens_equal ? "equal" : "differ");

  /* What the chunks are checked for before the call. */
  int32_t tokens[4] = {3, 4, 5, 6}, consecutive[4] = {0, 1, 2, 7};
  int32_t gap[4] = {0, 2, 3, 4}, past[4] = {0, 1, 2, (int32_t)cache->shape[2]};
  int32_t apart[2] = {0, 1}, same[2] = {1, 1}, beyond[2] = {0, kSlots};
  int32_t split[2] = {3, 1}, short_sum[2] = {1, 1}, empty[2] = {0, 4},
          long_chunk[2] = {3, 5};
  struct {
    const int32_t *positions, *sequences, *lengths;
    int64_t positions_n, chunks;
  } bad[] = {{gap, apart, split, 4, 2},        {past, apart, split, 4, 2},
             {consecutive, same, split, 4, 2}, {consecutive, beyond, split, 4, 2},
             {consecutive, apart, short_sum, 4, 2},
             {consecutive, apart, empty, 4, 2},
             {consecutive, apart, long_chunk, 4, 2},
             {consecutive, apart, split, 3, 2}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    tfm_status_code code = run_batch(
        model, &batched, tokens, bad[i].positions, 4, bad[i].positions_n,
        bad[i].sequences, bad[i].lengths, bad[i].chunks, &got[0][0], &status);
    printf("%s: %s\n", code == TFM_OK ? "accepted" : "refused",
           status.message);
  }
  free(alone);
  free(slots);
  tfm_model_free(model);
  return 0;
}
