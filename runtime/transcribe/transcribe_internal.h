/*===- transcribe_internal.h - Whisper's long-form decoding, shared -----===//
 *
 * What the window loop (whisper_transcribe.c), its logit rules
 * (timestamp_rules.c), the transcript's formats (transcript_formats.c) and
 * the language table (whisper_languages.c) share.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TRANSCRIBE_TRANSCRIBE_INTERNAL_H
#define TFM_RUNTIME_TRANSCRIBE_TRANSCRIBE_INTERNAL_H

#include "tfm/tfm_runtime.h"

#include <stddef.h>

/* A Whisper model's special tokens, from its generation defaults. */
typedef struct {
  int64_t vocab;
  int32_t eos;
  int32_t timestamp_begin; /* <|0.00|>: no_timestamps + 1 */
  int32_t no_timestamps;
  int32_t no_speech;   /* right before <|notimestamps|> */
  int32_t max_initial; /* max_initial_timestamp_index; -1: none */
} tfm_whisper_tokens;

/* WhisperTimeStampLogitsProcessor, as transformers 4.40 applies it to a
 * step's `scores` after `generated[0..count)` (the tokens after the
 * window's prompt): <|notimestamps|> never; timestamps in pairs (after a
 * pair text, after a lone timestamp another or the end); timestamps never
 * decrease; the first token a timestamp no later than max_initial; and
 * only a timestamp where their probabilities together beat every text
 * token's. */
void tfm_whisper_timestamp_rules(const tfm_whisper_tokens *tokens,
                                 const int32_t *generated, int64_t count,
                                 float *scores);

/* transformers' _retrieve_compression_ratio: the tokens as little-endian
 * integers of int(log2(vocab) / 8) + 1 bytes, their length over zlib's
 * compression of them. 0 where zlib fails. */
double tfm_whisper_compression_ratio(const int32_t *tokens, int64_t count,
                                     int64_t vocab);

/* log(sum(exp(scores))) less the largest, in double: a step's
 * log-softmax of token v is scores[v] - max - this. */
double tfm_log_sum_exp_shifted(const float *scores, int64_t n, float *max);

/* The English name of Whisper's language `code` ("en" -> "english"), or
 * NULL for a code Whisper does not know. */
const char *tfm_whisper_language_name(const char *code);

/* The code of a language given by code ("de"), English name ("german",
 * any case) or alias ("castilian"), or NULL. */
const char *tfm_whisper_language_code(const char *name);

/* Word timestamps (word_timestamps.c): each of rows + 1 tokens' start in
 * seconds from the window's (times[0] = 0; token k + 1 where the alignment
 * first reaches row k), from @align's weights [rows, heads, frames] of the
 * teacher-forced tokens, `precision` seconds a frame. */
tfm_status_code tfm_whisper_token_times(const float *weights, int64_t rows,
                                        int64_t heads, int64_t frames,
                                        int32_t median_width, double precision,
                                        float *times, tfm_status *status);

/* Appends to transcript->words (*capacity of them allocated) the words of
 * text tokens[0..count), token k from starts[k] to ends[k] s: split at
 * spaces and punctuation (at every character where `no_spaces`), with
 * punctuation joined to its neighbour, as transformers' Whisper tokenizer
 * groups them (_combine_tokens_into_words). */
tfm_status_code
tfm_whisper_add_words(tfm_transcript *transcript, int64_t *capacity,
                      const tfm_tokenizer *tokenizer, const int32_t *tokens,
                      const double *starts, const double *ends, int64_t count,
                      int32_t eos, int no_spaces, tfm_status *status);

#endif /* TFM_RUNTIME_TRANSCRIBE_TRANSCRIBE_INTERNAL_H */
