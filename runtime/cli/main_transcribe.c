/*===- main_transcribe.c - a speech recognizer's transcripts -------------===//
 *
 * `./transcribe audio.wav [more.flac ...]`: a model with CTC decoding
 * (Wav2Vec2ForCTC, HubertForCTC) reads each audio file whole at its rate
 * (tfm_audio_read: mixed down to mono, resampled where the file's rate
 * differs) and prints its transcript (tfm_transcribe), under a
 * "==> FILE <==" heading when there are several files.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"

#include <stdio.h>
#include <stdlib.h>

int tfm_main_is_transcription(const tfm_model *model) {
  const tfm_waveform_input *waveform = tfm_model_get_desc(model)->waveform;
  return waveform && waveform->blank >= 0;
}

int tfm_main_transcribe(const char *argv0, tfm_model *model,
                        const char *const *files, int count) {
  if (!tfm_audio_read)
    /* tfmc links audio decoding into every speech recognizer
     * (main_internal.h); this one has none, as tfm_audio_read would say. */
    return tfm_main_fail(argv0, "this executable was linked without audio "
                                "decoding");
  for (int i = 0; i < count; ++i) {
    float *samples = NULL;
    int64_t n = 0;
    char *text = NULL;
    tfm_status status;
    if (tfm_audio_read(model, files[i], &samples, &n, &status) != TFM_OK ||
        tfm_transcribe(model, samples, n, &text, &status) != TFM_OK) {
      free(samples);
      fprintf(stderr, "%s: error: %s: %s\n", argv0, files[i], status.message);
      return 1;
    }
    if (count > 1)
      printf("%s==> %s <==\n", i ? "\n" : "", files[i]);
    printf("%s\n", text);
    fflush(stdout);
    free(text);
    free(samples);
  }
  return 0;
}
