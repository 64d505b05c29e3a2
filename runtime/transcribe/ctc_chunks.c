/*===- ctc_chunks.c - a CTC recognizer on audio of any length -----------===//
 *
 * tfm_ctc_transcribe: transformers 4.40's automatic-speech-recognition
 * pipeline for a CTC model with chunk_length_s, stride_length_s and
 * return_timestamps="word". The samples are cut into chunks that overlap
 * by a stride on each side (chunk_iter); each chunk runs through the
 * recognizer alone, its frames' labels are its logits' argmax, and the
 * frames of its strides are dropped (rescale_stride: the neighbour heard
 * them with context on both sides); the kept labels, joined, decode as
 * one clip's would (ctc.c), so that a word cut between chunks reads whole.
 * Words and their times come from the joined frames as
 * Wav2Vec2CTCTokenizer's word offsets: runs of one label grouped, blanks
 * dropped, words between delimiters from their first run's first frame to
 * their last run's end, times in frames x samples a frame / rate.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/generate/ctc_internal.h"
#include "runtime/transcribe/transcribe_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Python's int(round(x)): to the nearest, halves to even. */
static int64_t round_even(double x) { return (int64_t)nearbyint(x); }

/* Appends the labels of chunk samples[start, start + count) but its
 * strides (`left`, `right` samples) to *labels. */
static tfm_status_code
chunk_labels(tfm_model *model, const tfm_entry_point *entry,
             const float *samples, int64_t count, int64_t left, int64_t right,
             int32_t **labels, int64_t *used, tfm_status *status) {
  tfm_tensor input = {
      (void *)(uintptr_t)samples, TFM_DTYPE_F32, 1, {count}, NULL};
  tfm_tensor logits;
  memset(&logits, 0, sizeof logits);
  tfm_status_code code =
      tfm_model_call(model, entry->name, &input, 1, NULL, &logits, 1, status);
  if (code != TFM_OK)
    return code;
  /* rescale_stride: the strides in frames, from the chunk's samples over
   * samples a frame; the frames past the kept ones are dropped. */
  int64_t frames = logits.shape[0], classes = logits.shape[1];
  int64_t ratio = tfm_model_get_desc(model)->waveform->frame_samples;
  int64_t total = round_even((double)count / (double)ratio);
  int64_t from = round_even((double)left / (double)count * (double)total);
  int64_t to = total - round_even((double)right / (double)count * total);
  to = to < frames ? to : frames;
  from = from < to ? from : to;
  int32_t *grown =
      realloc(*labels, (size_t)(*used + (to - from) + 1) * sizeof *grown);
  if (!grown) {
    tfm_tensor_release(&logits);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  *labels = grown;
  const float *values = logits.data;
  for (int64_t f = from; f < to; ++f)
    grown[(*used)++] = tfm_argmax(values + f * classes, classes);
  tfm_tensor_release(&logits);
  return TFM_OK;
}

/* Every chunk's kept labels, in order (chunk_iter). */
static tfm_status_code
chunked_labels(tfm_model *model, const tfm_entry_point *entry,
               const float *samples, int64_t n, int64_t chunk, int64_t stride,
               int32_t **labels, int64_t *used, tfm_status *status) {
  const tfm_waveform_input *w = tfm_model_get_desc(model)->waveform;
  int64_t step = chunk - 2 * stride;
  tfm_status_code code = TFM_OK;
  for (int64_t start = 0; start < n && code == TFM_OK; start += step) {
    int64_t end = start + chunk;
    int64_t count = (end < n ? end : n) - start;
    int64_t left = start == 0 ? 0 : stride;
    int last = stride > 0 ? end > n : end >= n;
    int64_t right = last ? 0 : stride;
    /* The pipeline skips a last chunk inside its left stride; one too
     * short for a frame would not run (the pipeline would fail). */
    if (count > left && count >= w->min_samples)
      code = chunk_labels(model, entry, samples + start, count, left, right,
                          labels, used, status);
    if (last)
      break;
  }
  return code;
}

/* Wav2Vec2CTCTokenizer's word offsets over the joined labels: runs of one
 * label, blanks dropped, words split at the delimiter; times in seconds. */
static tfm_status_code find_words(const tfm_model *model, const int32_t *labels,
                                  int64_t count, tfm_transcript *t,
                                  tfm_status *status) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_waveform_input *w = desc->waveform;
  double seconds = (double)w->frame_samples / (double)w->sampling_rate;
  int64_t capacity = 0;
  size_t length = 0;
  char *word = NULL;
  int64_t start = 0, end = 0;
  for (int64_t f = 0; f <= count;) {
    int64_t run = f;
    while (run < count && labels[run] == labels[f])
      ++run;
    int space = f == count || labels[f] == w->word_delimiter;
    if (f < count && labels[f] == w->blank) {
      f = run;
      continue;
    }
    if (space && word) { /* a word ends */
      if (t->word_count == capacity) {
        capacity = capacity ? 2 * capacity : 64;
        tfm_transcript_word *grown =
            realloc(t->words, (size_t)capacity * sizeof *grown);
        if (!grown) {
          free(word);
          return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
        }
        t->words = grown;
      }
      t->words[t->word_count++] = (tfm_transcript_word){
          word, (double)start * seconds, (double)end * seconds};
      word = NULL;
      length = 0;
    } else if (!space) {
      const char *spelled = desc->labels[labels[f]];
      size_t n = strlen(spelled);
      char *grown = realloc(word, length + n + 1);
      if (!grown) {
        free(word);
        return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
      }
      if (!word)
        start = f;
      word = grown;
      memcpy(word + length, spelled, n + 1);
      length += n;
      end = run;
    }
    if (f == count)
      break;
    f = run;
  }
  return TFM_OK;
}

tfm_status_code tfm_ctc_transcribe(tfm_model *model, const float *samples,
                                   int64_t n, const tfm_ctc_chunking *chunking,
                                   tfm_transcript **out, tfm_status *status) {
  if (!model || !samples || !chunking || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_ctc_transcribe: NULL argument");
  *out = NULL;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_waveform_input *w = desc->waveform;
  const tfm_entry_point *entry = tfm_ctc_recognizer(model);
  if (!w || w->blank < 0 || !entry || w->frame_samples <= 0)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' is not a speech recognizer", desc->name);
  /* The chunk and strides in samples, whole frames each. */
  int64_t align = w->frame_samples;
  double rate = (double)w->sampling_rate;
  double stride_seconds = chunking->stride_seconds < 0
                              ? chunking->chunk_seconds / 6
                              : chunking->stride_seconds;
  int64_t chunk = round_even(chunking->chunk_seconds * rate / align) * align;
  int64_t stride = round_even(stride_seconds * rate / align) * align;
  if (!(chunking->chunk_seconds >= 0) || !(stride_seconds >= 0) ||
      (chunking->chunk_seconds > 0 &&
       (chunk <= 2 * stride || chunk < w->min_samples ||
        (desc->max_context > 0 && chunk > desc->max_context))))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "chunks of %g s with strides of %g s: expected chunks "
                    "longer than both strides, of %.3f to %.1f s for model "
                    "'%s'",
                    chunking->chunk_seconds, stride_seconds,
                    (double)w->min_samples / rate,
                    (double)desc->max_context / rate, desc->name);
  int32_t *labels = NULL;
  int64_t used = 0;
  tfm_status_code code = chunking->chunk_seconds > 0
                             ? chunked_labels(model, entry, samples, n, chunk,
                                              stride, &labels, &used, status)
                             : chunk_labels(model, entry, samples, n, 0, 0,
                                            &labels, &used, status);
  tfm_transcript *t = calloc(1, sizeof *t);
  if (code == TFM_OK && !t)
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (code == TFM_OK)
    code = tfm_ctc_decode_labels(model, labels, used, &t->text, status);
  if (code == TFM_OK)
    code = find_words(model, labels, used, t, status);
  if (code == TFM_OK) {
    t->duration = (double)n / rate;
    t->language = strdup("");
    t->task = strdup("transcribe");
    if (!t->language || !t->task)
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  free(labels);
  if (code != TFM_OK) {
    tfm_transcript_free(t);
    return code;
  }
  *out = t;
  return tfm_ok(status);
}
