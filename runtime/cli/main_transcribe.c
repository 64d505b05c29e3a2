/*===- main_transcribe.c - a speech recognizer's transcripts -------------===//
 *
 * `./transcribe audio.wav [more.flac ...]`: a model with CTC decoding
 * (Wav2Vec2ForCTC, HubertForCTC) reads each audio file whole at its rate
 * (tfm_audio_read_all: mixed down to mono, resampled where the file's rate
 * differs) and prints its transcript (tfm_ctc_transcribe), under a
 * "==> FILE <==" heading when there are several files. A file longer than
 * the model's longest clip is heard in overlapping chunks (30 s, or the
 * longest clip, with a sixth of that as stride on each side, as
 * transformers' ASR pipeline defaults the stride), or as --chunk-seconds
 * and --stride-seconds say; --format json adds each word's times.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tfm_main_is_transcription(const tfm_model *model) {
  const tfm_waveform_input *waveform = tfm_model_get_desc(model)->waveform;
  return waveform && waveform->blank >= 0;
}

/* The chunking of `n` samples: as given, else none where the model takes
 * them at once, else 30 s (at most its longest clip). */
static tfm_ctc_chunking chunking_for(const tfm_model *model,
                                     const tfm_main_options *o, int64_t n) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  tfm_ctc_chunking chunking = {o->chunk_seconds, o->stride_seconds};
  if (o->chunk_seconds > 0 || desc->max_context <= 0 || n <= desc->max_context)
    return chunking;
  double longest =
      (double)desc->max_context / (double)desc->waveform->sampling_rate;
  chunking.chunk_seconds = longest < 30 ? longest : 30;
  return chunking;
}

int tfm_main_transcribe(const char *argv0, tfm_model *model,
                        const tfm_main_options *o) {
  if (!tfm_audio_read_all)
    /* tfmc links audio decoding into every speech recognizer
     * (main_internal.h); this one has none, as tfm_audio_read would say. */
    return tfm_main_fail(argv0, "this executable was linked without audio "
                                "decoding");
  tfm_transcript_format format = TFM_TRANSCRIPT_TEXT;
  if (o->call.format &&
      !tfm_main_transcript_format(argv0, o->call.format, &format))
    return 1;
  if (format != TFM_TRANSCRIPT_TEXT && format != TFM_TRANSCRIPT_JSON)
    return tfm_main_fail(argv0, "a CTC recognizer's transcript has words, "
                                "not segments: --format txt or json");
  int count = o->call.image_count;
  for (int i = 0; i < count; ++i) {
    const char *path = o->call.images[i];
    float *samples = NULL;
    int64_t n = 0;
    tfm_transcript *transcript = NULL;
    char *text = NULL;
    tfm_status status;
    int ok = tfm_audio_read_all(model, path, o->max_audio_seconds, &samples, &n,
                                &status) == TFM_OK;
    tfm_ctc_chunking chunking = chunking_for(model, o, n);
    ok = ok &&
         tfm_ctc_transcribe(model, samples, n, &chunking, &transcript,
                            &status) == TFM_OK &&
         tfm_transcript_write(transcript, format, &text, &status) == TFM_OK;
    free(samples);
    tfm_transcript_free(transcript);
    if (!ok) {
      fprintf(stderr, "%s: error: %s: %s\n", argv0, path, status.message);
      return 1;
    }
    if (count > 1)
      printf("%s==> %s <==\n", i ? "\n" : "", path);
    fputs(text, stdout);
    fflush(stdout);
    free(text);
  }
  return 0;
}
