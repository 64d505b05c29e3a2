/*===- whisper_window.c - one 30 s window of Whisper's long-form decoding ===//
 *
 * A window of log-mel frames encoded once, its prompt decoded (the text so
 * far after <|startofprev|>, then <|startoftranscript|>, language and
 * task), then its tokens generated as transformers 4.40's
 * generate_with_fallback does: at each temperature in turn until the
 * tokens neither compress too well nor average too low a log-probability.
 * Each step's logits pass begin_suppress_tokens, suppress_tokens and the
 * timestamp rules (timestamp_rules.c); a temperature of 0 takes the
 * largest, another samples as torch.multinomial does on the softmax of
 * the scores over the temperature (an exponential draw for every token
 * from the torch generator, the largest probability over its draw), so
 * that a seed gives transformers' tokens. A fallback decodes again from
 * the prompt's end: the encoder and the prompt are not run twice.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/transcribe/whisper_window.h"
#include "runtime/core/status.h"
#include "runtime/generate/seq2seq_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* torch.multinomial(softmax(scores / temperature), 1) from `generator`:
 * float32 scores over the temperature, their softmax, then the largest
 * probability over an Exp(1) draw of each token (drawn in token order). */
static int32_t sample(tfm_whisper_window *w, const float *scores,
                      float temperature) {
  int64_t vocab = w->tokens.vocab;
  float *p = w->probabilities;
  float max = -INFINITY;
  for (int64_t v = 0; v < vocab; ++v) {
    p[v] = scores[v] / temperature;
    max = p[v] > max ? p[v] : max;
  }
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += (p[v] = expf(p[v] - max));
  int64_t best = 0;
  float best_ratio = -1;
  for (int64_t v = 0; v < vocab; ++v) {
    float ratio = (float)(p[v] / sum) / tfm_torch_exponential(w->generator);
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = v;
    }
  }
  return (int32_t)best;
}

/* The rules every step's scores pass before a token is picked:
 * begin_suppress_tokens first, suppress_tokens, the timestamp rules. */
static void apply_rules(const tfm_whisper_window *w, const int32_t *generated,
                        int64_t count, float *scores) {
  const tfm_generation_defaults *g = w->generation;
  int64_t vocab = w->tokens.vocab;
  if (count == 0)
    for (int32_t i = 0; i < g->num_begin_suppressed; ++i)
      if (g->begin_suppressed[i] >= 0 && g->begin_suppressed[i] < vocab)
        scores[g->begin_suppressed[i]] = -INFINITY;
  for (int32_t i = 0; i < g->num_suppressed; ++i)
    if (g->suppressed[i] >= 0 && g->suppressed[i] < vocab)
      scores[g->suppressed[i]] = -INFINITY;
  tfm_whisper_timestamp_rules(&w->tokens, generated, count, scores);
}

/* Tokens from the prompt's end at `temperature` into w->generated, at
 * most `most`; the sum of their log-probabilities (the end-of-text token's
 * not counted) into *logprob_sum. */
static tfm_status_code generate(tfm_whisper_window *w, tfm_seq2seq_state *state,
                                int64_t start, int64_t most, float temperature,
                                double *logprob_sum, tfm_status *status) {
  int64_t vocab = w->tokens.vocab;
  float *scores = w->scores;
  memcpy(scores, w->first_logits, (size_t)vocab * sizeof *scores);
  *logprob_sum = 0;
  w->count = 0;
  while (w->count < most) {
    apply_rules(w, w->generated, w->count, scores);
    int32_t token = temperature > 0 ? sample(w, scores, temperature)
                                    : tfm_argmax(scores, vocab);
    float max;
    double shift = tfm_log_sum_exp_shifted(scores, vocab, &max);
    if (token != w->tokens.eos)
      *logprob_sum += (double)scores[token] - max - shift;
    w->generated[w->count++] = token;
    if (token == w->tokens.eos || w->count == most)
      break;
    float *logits;
    tfm_status_code code = tfm_seq2seq_step(
        state, 1, &token, start + w->count - 1, &logits, status);
    if (code != TFM_OK)
      return code;
    memcpy(scores, logits, (size_t)vocab * sizeof *scores);
  }
  return TFM_OK;
}

/* softmax(logits)[token] in double. */
static double probability(const float *logits, int64_t vocab, int32_t token) {
  float max;
  double shift = tfm_log_sum_exp_shifted(logits, vocab, &max);
  return exp((double)logits[token] - max - shift);
}

/* Frames [seek, seek + frames) of the features, zero-padded to a window. */
static void cut_window(tfm_whisper_window *w, const float *features,
                       int64_t total, int64_t seek, int64_t frames) {
  for (int64_t m = 0; m < w->mels; ++m) {
    float *row = w->features + m * w->window;
    memcpy(row, features + m * total + seek, (size_t)frames * sizeof *row);
    memset(row + frames, 0, (size_t)(w->window - frames) * sizeof *row);
  }
}

/* transformers 4.40's _extract_token_timestamps for the kept decoding:
 * @align over the prompt and the tokens but the last generated (the
 * cross-attentions generate() collected), the alignment (word_timestamps.c)
 * giving every token's start. */
static tfm_status_code align_tokens(tfm_whisper_window *w,
                                    tfm_seq2seq_state *state,
                                    const int32_t *previous,
                                    int64_t previous_count,
                                    tfm_status *status) {
  int64_t rows = 0;
  memcpy(w->aligned, previous, (size_t)previous_count * sizeof *previous);
  rows += previous_count;
  memcpy(w->aligned + rows, w->init, (size_t)w->init_count * sizeof *w->init);
  rows += w->init_count;
  memcpy(w->aligned + rows, w->generated,
         (size_t)(w->count - 1) * sizeof *w->generated);
  rows += w->count - 1;
  tfm_tensor weights;
  tfm_status_code code =
      tfm_seq2seq_align(state, w->aligned, rows, &weights, status);
  if (code != TFM_OK)
    return code;
  const tfm_audio_preprocessing *p =
      tfm_model_get_desc(w->model)->audio_preprocessing;
  int64_t frames = weights.shape[2];
  if (weights.rank != 3 || weights.shape[0] != rows || frames < 1) {
    tfm_tensor_release(&weights);
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@align returned no [%lld, heads, frames] weights",
                    (long long)rows);
  }
  /* An encoder position's seconds: the window's over its positions. */
  double precision = (double)w->window * (double)p->hop_length /
                     (double)p->sampling_rate / (double)frames;
  code = tfm_whisper_token_times(weights.data, rows, weights.shape[1], frames,
                                 w->generation->median_filter_width, precision,
                                 w->times, status);
  tfm_tensor_release(&weights);
  w->times_offset = previous_count + w->init_count;
  return code;
}

tfm_status_code tfm_whisper_decode_window(
    tfm_whisper_window *w, const float *features, int64_t total, int64_t seek,
    int64_t frames, const int32_t *previous, int64_t previous_count,
    const tfm_whisper_decision *decision, tfm_whisper_window_result *result,
    tfm_status *status) {
  memset(result, 0, sizeof *result);
  int64_t most = w->positions - previous_count - w->init_count;
  if (most < 1)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "a prompt of %lld tokens leaves no room in the decoder's "
                    "%lld positions",
                    (long long)(previous_count + w->init_count),
                    (long long)w->positions);
  cut_window(w, features, total, seek, frames);
  tfm_tensor source = {
      w->features, TFM_DTYPE_F32, 2, {w->mels, w->window}, NULL};
  tfm_generation_rules rules;
  memset(&rules, 0, sizeof rules);
  rules.previous = previous;
  rules.previous_count = (int32_t)previous_count;
  tfm_seq2seq_state *state = NULL;
  tfm_status_code code = tfm_seq2seq_begin(
      w->model, &source, 1, &rules, w->init_count + most - 1, &state, status);
  if (code != TFM_OK)
    return code;
  /* The prompt: the no-speech probability is <|nospeech|>'s after
   * <|startoftranscript|>, from the logits as they come. */
  int64_t vocab = w->tokens.vocab;
  float *logits = NULL;
  for (int64_t i = 0; code == TFM_OK && i < w->init_count; ++i) {
    code = tfm_seq2seq_step(state, 1, &w->init[i], i, &logits, status);
    if (code == TFM_OK && i == 0)
      result->no_speech_prob = probability(logits, vocab, w->tokens.no_speech);
  }
  if (code == TFM_OK)
    memcpy(w->first_logits, logits, (size_t)vocab * sizeof *logits);
  for (int32_t t = 0; code == TFM_OK && t < decision->temperature_count; ++t) {
    float temperature = decision->temperatures[t];
    double logprob_sum;
    code = generate(w, state, w->init_count, most, temperature, &logprob_sum,
                    status);
    if (code != TFM_OK)
      break;
    /* generate_with_fallback drops a window's end-of-text token: before the
     * last window as not final, in it as padding (Whisper's pad token is
     * its end-of-text token). */
    int64_t count = w->count;
    if (count > 0 && w->generated[count - 1] == w->tokens.eos)
      --count;
    result->count = count;
    result->temperature = temperature;
    result->compression_ratio =
        tfm_whisper_compression_ratio(w->generated, count, vocab);
    result->avg_logprob = logprob_sum / (double)(count + 1);
    result->needs_fallback =
        (!isnan(decision->compression_ratio_threshold) &&
         result->compression_ratio > decision->compression_ratio_threshold) ||
        (!isnan(decision->logprob_threshold) &&
         result->avg_logprob < decision->logprob_threshold);
    result->skip = !isnan(decision->no_speech_threshold) &&
                   !isnan(decision->logprob_threshold) &&
                   result->avg_logprob < decision->logprob_threshold &&
                   result->no_speech_prob > decision->no_speech_threshold;
    if (result->skip)
      result->needs_fallback = 0;
    if (!result->needs_fallback)
      break;
  }
  if (code == TFM_OK && w->align && !result->skip && w->count > 0)
    code = align_tokens(w, state, previous, previous_count, status);
  tfm_seq2seq_end(state);
  return code;
}

tfm_status_code tfm_whisper_detect_language(tfm_whisper_window *w,
                                            const float *features,
                                            int64_t total,
                                            const int32_t *languages,
                                            int32_t count, int32_t *language,
                                            tfm_status *status) {
  cut_window(w, features, total, 0, total < w->window ? total : w->window);
  tfm_tensor source = {
      w->features, TFM_DTYPE_F32, 2, {w->mels, w->window}, NULL};
  tfm_seq2seq_state *state = NULL;
  tfm_status_code code =
      tfm_seq2seq_begin(w->model, &source, 1, NULL, 1, &state, status);
  if (code != TFM_OK)
    return code;
  float *logits;
  code = tfm_seq2seq_step(state, 1, &w->init[0], 0, &logits, status);
  if (code == TFM_OK) {
    /* detect_language: the likeliest language token, the first on ties. */
    int32_t best = languages[0];
    for (int32_t i = 1; i < count; ++i)
      if (logits[languages[i]] > logits[best])
        best = languages[i];
    *language = best;
  }
  tfm_seq2seq_end(state);
  return code;
}
