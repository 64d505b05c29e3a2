/*===- whisper_window.h - one window of Whisper's long-form decoding -----===//
 *
 * What the window loop (whisper_transcribe.c) asks of a window
 * (whisper_window.c): its tokens after a prompt, decoded with temperature
 * fallback, and the numbers they were judged by.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TRANSCRIBE_WHISPER_WINDOW_H
#define TFM_RUNTIME_TRANSCRIBE_WHISPER_WINDOW_H

#include "runtime/support/torch_generator.h"
#include "runtime/transcribe/transcribe_internal.h"

/* A model's windows: their shape, the tokens every one starts with, and
 * the buffers each reuses. */
typedef struct {
  tfm_model *model;
  const tfm_generation_defaults *generation;
  tfm_whisper_tokens tokens;
  int64_t mels, window; /* a window's features: [mels, window frames] */
  int64_t positions;    /* the decoder's */
  /* <|startoftranscript|>, then the language and task tokens. */
  int32_t init[8];
  int64_t init_count;
  tfm_torch_generator *generator;
  float *features;      /* [mels, window] */
  float *first_logits;  /* after the prompt */
  float *scores;        /* a step's */
  float *probabilities; /* a sampled step's */
  int32_t *generated;   /* [positions] */
  int64_t count;
  /* Word timestamps: whether to align the kept tokens (@align), the
   * teacher-forced tokens ([positions]), and each kept token's start in
   * seconds from the window's (times[t] for generated[t]; [positions + 1]
   * of which the first are the prompt's). */
  int align;
  int32_t *aligned;
  float *times;
  int64_t times_offset;
} tfm_whisper_window;

/* When a window is decoded again, and when it is skipped (thresholds NAN:
 * off). */
typedef struct {
  const float *temperatures;
  int32_t temperature_count;
  double compression_ratio_threshold, logprob_threshold, no_speech_threshold;
} tfm_whisper_decision;

/* The kept decoding: w->generated[0..count) (its end-of-text token
 * dropped), what it was decoded and judged with, and whether the window is
 * silence to skip. */
typedef struct {
  int64_t count;
  double temperature, avg_logprob, compression_ratio, no_speech_prob;
  int needs_fallback, skip;
} tfm_whisper_window_result;

/* Decodes frames [seek, seek + frames) of `features` ([mels, total])
 * after previous[0..previous_count) (<|startofprev|> and the text so far;
 * none when 0) and w->init; with w->align, the kept tokens' starts into
 * w->times + w->times_offset. */
tfm_status_code tfm_whisper_decode_window(
    tfm_whisper_window *w, const float *features, int64_t total, int64_t seek,
    int64_t frames, const int32_t *previous, int64_t previous_count,
    const tfm_whisper_decision *decision, tfm_whisper_window_result *result,
    tfm_status *status);

/* The likeliest of `languages` after <|startoftranscript|> (w->init[0])
 * on the first window, as transformers' detect_language picks it. */
tfm_status_code tfm_whisper_detect_language(tfm_whisper_window *w,
                                            const float *features,
                                            int64_t total,
                                            const int32_t *languages,
                                            int32_t count, int32_t *language,
                                            tfm_status *status);

#endif /* TFM_RUNTIME_TRANSCRIBE_WHISPER_WINDOW_H */
