/*===- main_whisper.c - Whisper's transcripts of audio of any length ----===//
 *
 * `./transcribe long.flac [--format srt] [--language de] ...`: a Whisper
 * model with timestamp tokens reads each audio file whole
 * (tfm_audio_read_all: mono at 16 kHz, at most --max-audio-seconds), makes
 * its log-mel features (tfm_log_mel_all) and transcribes them window by
 * window (tfm_whisper_transcribe), then prints the transcript as text,
 * verbose_json, SRT or WebVTT (tfm_transcript_write). A progress bar over
 * the audio goes to stderr when stderr is a terminal. The short-form
 * flags (--print-ids, --beams, -n, ...) keep the single-window mode of
 * main_seq2seq.c.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kMaxTemperatures = 100 };

int tfm_main_is_whisper_long_form(const tfm_model *model,
                                  const tfm_main_options *o) {
  const tfm_generation_defaults *g = tfm_model_get_desc(model)->generation;
  return g && g->no_timestamps >= 1 && o->call.image_count > 0 &&
         !o->print_ids && !o->beams && !o->forced_tokens &&
         !o->step_logits_path && !o->call.preprocess && !o->previous_text &&
         !o->new_tokens_given;
}

/* on_progress: a bar over the audio's seconds, redrawn in place. */
static void draw_progress(void *user, double done, double total) {
  (void)user;
  int width = 40, filled = total > 0 ? (int)(width * done / total) : width;
  fprintf(stderr, "\r[");
  for (int i = 0; i < width; ++i)
    fputc(i < filled ? '=' : i == filled ? '>' : ' ', stderr);
  fprintf(stderr, "] %.1f / %.1f s", done, total);
  fflush(stderr);
}

int tfm_main_transcript_format(const char *argv0, const char *name,
                               tfm_transcript_format *format) {
  static const struct {
    const char *name;
    tfm_transcript_format format;
  } formats[] = {
      {"txt", TFM_TRANSCRIPT_TEXT},  {"text", TFM_TRANSCRIPT_TEXT},
      {"json", TFM_TRANSCRIPT_JSON}, {"verbose_json", TFM_TRANSCRIPT_JSON},
      {"srt", TFM_TRANSCRIPT_SRT},   {"vtt", TFM_TRANSCRIPT_VTT}};
  for (size_t i = 0; i < sizeof formats / sizeof *formats; ++i)
    if (!strcmp(name, formats[i].name)) {
      *format = formats[i].format;
      return 1;
    }
  fprintf(stderr, "%s: error: --format %s: expected txt, json, srt or vtt\n",
          argv0, name);
  return 0;
}

/* One file's transcript, printed; 0 after reporting why not. */
static int transcribe_file(const char *argv0, tfm_model *model,
                           const char *path, const tfm_whisper_options *options,
                           double max_seconds, tfm_transcript_format format) {
  float *samples = NULL, *features = NULL;
  int64_t n = 0, frames = 0;
  tfm_transcript *transcript = NULL;
  char *text = NULL;
  tfm_status status;
  int ok = tfm_audio_read_all(model, path, max_seconds, &samples, &n,
                              &status) == TFM_OK &&
           tfm_log_mel_all(model, samples, n, &features, &frames, &status) ==
               TFM_OK &&
           tfm_whisper_transcribe(model, features, frames, options, &transcript,
                                  &status) == TFM_OK &&
           tfm_transcript_write(transcript, format, &text, &status) == TFM_OK;
  if (options->on_progress)
    fputc('\n', stderr);
  if (ok)
    fputs(text, stdout);
  else
    fprintf(stderr, "%s: error: %s: %s\n", argv0, path, status.message);
  fflush(stdout);
  free(text);
  tfm_transcript_free(transcript);
  free(features);
  free(samples);
  return ok;
}

int tfm_main_whisper(const char *argv0, tfm_model *model,
                     const tfm_main_options *o) {
  if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_WHISPER))
    return 1;
  if (!tfm_audio_read_all || !tfm_log_mel_all)
    return tfm_main_fail(argv0, "this executable was linked without audio "
                                "decoding");
  tfm_transcript_format format = TFM_TRANSCRIPT_TEXT;
  if (o->call.format &&
      !tfm_main_transcript_format(argv0, o->call.format, &format))
    return 1;
  /* OpenAI's temperatures: from --temperature (0) by the increment up to
   * 1 (np.arange(t, 1 + 1e-6, increment)); --temperature-increment off:
   * the first alone. */
  float temperatures[kMaxTemperatures];
  int32_t count = 0;
  double first =
      tfm_main_flag_given(o, "--temperature") ? o->sampler.temperature : 0.0;
  for (double t = first;
       count == 0 || (o->temperature_increment > 0 && t <= 1.0 + 1e-6);
       t = first + count * (double)o->temperature_increment) {
    if (count == kMaxTemperatures) {
      fprintf(stderr,
              "%s: error: --temperature-increment %g makes more than %d "
              "temperatures\n",
              argv0, (double)o->temperature_increment, kMaxTemperatures);
      return 1;
    }
    temperatures[count++] = (float)t;
  }
  tfm_whisper_options options;
  tfm_whisper_options_default(&options);
  options.language = o->language;
  options.task = o->task;
  options.prompt = o->initial_prompt;
  options.condition_on_previous = !o->no_condition_on_previous;
  options.word_timestamps = o->word_timestamps;
  options.temperatures = temperatures;
  options.temperature_count = count;
  options.compression_ratio_threshold = o->compression_ratio_threshold;
  options.logprob_threshold = o->logprob_threshold;
  options.no_speech_threshold = o->no_speech_threshold;
  options.seed = o->sampler.seed;
  options.on_progress = isatty(STDERR_FILENO) ? draw_progress : NULL;
  for (int i = 0; i < o->call.image_count; ++i) {
    if (o->call.image_count > 1)
      printf("%s==> %s <==\n", i ? "\n" : "", o->call.images[i]);
    if (!transcribe_file(argv0, model, o->call.images[i], &options,
                         o->max_audio_seconds, format))
      return 1;
  }
  return 0;
}
