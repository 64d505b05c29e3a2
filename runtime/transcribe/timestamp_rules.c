/*===- timestamp_rules.c - Whisper's timestamp tokens and window scores -===//
 *
 * The logit rules that make Whisper write timestamps (transformers 4.40's
 * WhisperTimeStampLogitsProcessor, from OpenAI's ApplyTimestampRules) and
 * the numbers a window's decoding is judged by: the compression ratio of
 * its tokens (zlib, as _retrieve_compression_ratio measures it) for the
 * temperature fallback.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/transcribe/transcribe_internal.h"

#include <math.h>
#include <stdlib.h>
#include <zlib.h>

double tfm_log_sum_exp_shifted(const float *scores, int64_t n, float *max) {
  float top = -INFINITY;
  for (int64_t v = 0; v < n; ++v)
    top = scores[v] > top ? scores[v] : top;
  *max = top;
  if (top == -INFINITY)
    return 0;
  double sum = 0;
  for (int64_t v = 0; v < n; ++v)
    sum += exp((double)scores[v] - top);
  return log(sum);
}

static void ban(float *scores, int64_t from, int64_t to) {
  for (int64_t v = from; v < to; ++v)
    scores[v] = -INFINITY;
}

void tfm_whisper_timestamp_rules(const tfm_whisper_tokens *t,
                                 const int32_t *generated, int64_t count,
                                 float *scores) {
  int64_t vocab = t->vocab, begin = t->timestamp_begin;
  scores[t->no_timestamps] = -INFINITY;
  int last_was_timestamp = count >= 1 && generated[count - 1] >= begin;
  int penultimate_was_timestamp = count < 2 || generated[count - 2] >= begin;
  if (last_was_timestamp) {
    if (penultimate_was_timestamp)
      ban(scores, begin, vocab); /* a pair ended: text next */
    else
      ban(scores, 0, t->eos); /* a lone timestamp: another, or the end */
  }
  int32_t last_timestamp = -1;
  for (int64_t i = count - 1; i >= 0 && last_timestamp < 0; --i)
    if (generated[i] >= begin)
      last_timestamp = generated[i];
  if (last_timestamp >= 0)
    /* Never backwards; after a pair's end, not the same time again. */
    ban(scores, begin,
        last_was_timestamp && !penultimate_was_timestamp ? last_timestamp
                                                         : last_timestamp + 1);
  if (count == 0) {
    ban(scores, 0, begin);
    if (t->max_initial >= 0 && begin + t->max_initial + 1 < vocab)
      ban(scores, begin + t->max_initial + 1, vocab);
  }
  /* A timestamp where all of them are likelier than any text token. */
  float max;
  double shift = tfm_log_sum_exp_shifted(scores, vocab, &max);
  if (max == -INFINITY)
    return;
  float text_max = -INFINITY, timestamp_max;
  for (int64_t v = 0; v < begin; ++v)
    text_max = scores[v] > text_max ? scores[v] : text_max;
  double timestamp_sum =
      tfm_log_sum_exp_shifted(scores + begin, vocab - begin, &timestamp_max);
  if (timestamp_max == -INFINITY)
    return;
  double timestamp_logprob = timestamp_max + timestamp_sum - max - shift;
  double text_logprob = (double)text_max - max - shift;
  if (timestamp_logprob > text_logprob)
    ban(scores, 0, begin);
}

double tfm_whisper_compression_ratio(const int32_t *tokens, int64_t count,
                                     int64_t vocab) {
  int width = (int)(log2((double)vocab) / 8) + 1;
  size_t size = (size_t)count * (size_t)width;
  unsigned char *bytes = malloc(size ? size : 1);
  uLongf packed_size = compressBound((uLong)size);
  unsigned char *packed = malloc(packed_size);
  double ratio = 0;
  if (bytes && packed) {
    for (int64_t i = 0; i < count; ++i)
      for (int b = 0; b < width; ++b)
        bytes[i * width + b] = (unsigned char)((uint32_t)tokens[i] >> (8 * b));
    /* Python's zlib.compress: level 6 (Z_DEFAULT_COMPRESSION). */
    if (compress2(packed, &packed_size, bytes, (uLong)size,
                  Z_DEFAULT_COMPRESSION) == Z_OK &&
        packed_size > 0)
      ratio = (double)size / (double)packed_size;
  }
  free(bytes);
  free(packed);
  return ratio;
}
