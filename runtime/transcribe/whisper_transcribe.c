/*===- whisper_transcribe.c - Whisper on audio of any length ------------===//
 *
 * tfm_whisper_transcribe: transformers 4.40's sequential long-form
 * generate() (and OpenAI's transcribe(), which it follows) over log-mel
 * features of any length. A window of 30 s starts at `seek`; its tokens
 * (whisper_window.c) split into segments at each pair of timestamps; the
 * next window starts at the last complete segment's end, or after the
 * window where its text ended with a lone timestamp (nothing more was
 * said). The language is given or detected once, on the first window;
 * each window is prompted with the text so far while decoding stays cool.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/generate/seq2seq_internal.h"
#include "runtime/transcribe/whisper_window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float kTemperatures[] = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};

void tfm_whisper_options_default(tfm_whisper_options *options) {
  memset(options, 0, sizeof *options);
  options->condition_on_previous = 1;
  options->temperatures = kTemperatures;
  options->temperature_count =
      (int32_t)(sizeof kTemperatures / sizeof *kTemperatures);
  options->compression_ratio_threshold = 2.4;
  options->logprob_threshold = -1.0;
  options->no_speech_threshold = 0.6;
}

/* A growing list of tokens. */
typedef struct {
  int32_t *data;
  int64_t count, capacity;
} token_list;

/* Room for `needed` elements of `size` bytes in *data (*capacity of them
 * now), doubling from 256. */
static int reserve(void **data, int64_t *capacity, int64_t needed,
                   size_t size) {
  if (needed <= *capacity)
    return 1;
  int64_t grown = *capacity ? *capacity : 256;
  while (grown < needed)
    grown *= 2;
  void *more = realloc(*data, (size_t)grown * size);
  if (!more)
    return 0;
  *data = more;
  *capacity = grown;
  return 1;
}

static int append(token_list *list, const int32_t *tokens, int64_t n) {
  if (!reserve((void **)&list->data, &list->capacity, list->count + n,
               sizeof *tokens))
    return 0;
  if (n)
    memcpy(list->data + list->count, tokens, (size_t)n * sizeof *tokens);
  list->count += n;
  return 1;
}

static int contains(const int32_t *list, int64_t n, int32_t token) {
  for (int64_t i = 0; i < n; ++i)
    if (list[i] == token)
      return 1;
  return 0;
}

/* The language `name` names as one of the model's language tokens. */
static tfm_status_code find_language(const tfm_model_desc *desc,
                                     const tfm_tokenizer *tokenizer,
                                     const char *name, int32_t *id,
                                     tfm_status *status) {
  const tfm_generation_defaults *g = desc->generation;
  if (!g->num_languages)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' transcribes one language: it takes no "
                    "language ('%s' given)",
                    desc->name, name);
  char code[16];
  size_t length = strlen(name);
  if (length > 4 && length < sizeof code + 4 && !strncmp(name, "<|", 2) &&
      !strcmp(name + length - 2, "|>")) {
    memcpy(code, name + 2, length - 4);
    code[length - 4] = '\0';
    name = code;
  }
  const char *known = tfm_whisper_language_code(name);
  char spelling[32];
  snprintf(spelling, sizeof spelling, "<|%s|>", known ? known : "");
  *id = known ? tfm_seq2seq_special_token(tokenizer, spelling) : -1;
  if (*id < 0 || !contains(g->languages, g->num_languages, *id))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' has no language '%s'%s", desc->name, name,
                    known ? " among its language tokens"
                          : ": expected a code like 'en', or its English name");
  return TFM_OK;
}

/* The language code of language token `id` ("fr" of <|fr|>), malloc'd. */
static char *language_code(const tfm_tokenizer *tokenizer, int32_t id) {
  size_t size = 0;
  const char *token = tfm_tokenizer_decode(tokenizer, -1, id, -1, &size);
  if (!token || size < 4 || strncmp(token, "<|", 2) ||
      strncmp(token + size - 2, "|>", 2))
    return strdup("");
  return strndup(token + 2, size - 4);
}

/* The tokens every window starts with, as 4.40's _retrieve_init_tokens
 * makes them: <|startoftranscript|>, then generation_config's
 * forced_decoder_ids unless a language or task is given, the language
 * (given, forced, or detected where forced as null or missing), the task
 * (given, forced, or transcribe with a given language), and no
 * <|notimestamps|> (timestamps are how windows advance). */
static tfm_status_code init_tokens(tfm_whisper_window *w,
                                   const tfm_model_desc *desc,
                                   const tfm_tokenizer *tokenizer,
                                   const tfm_whisper_options *o,
                                   const float *features, int64_t frames,
                                   int32_t *language, tfm_status *status) {
  const tfm_generation_defaults *g = desc->generation;
  int32_t *init = w->init;
  int64_t n = 0;
  init[n++] = (int32_t)desc->bos_token;
  if (!o->language && !o->task)
    for (int32_t i = 0; i < g->num_prompt && n < 6; ++i)
      init[n++] = g->prompt[i];
  *language = -1;
  if (o->language) {
    tfm_status_code code =
        find_language(desc, tokenizer, o->language, language, status);
    if (code != TFM_OK)
      return code;
    int replaced = 0;
    for (int64_t i = 1; i < n; ++i)
      if (contains(g->languages, g->num_languages, init[i])) {
        init[i] = *language;
        replaced = 1;
      }
    if (!replaced)
      init[n++] = *language;
  } else if (g->num_languages && (n <= 1 || init[1] == -1)) {
    w->init_count = 1;
    tfm_status_code code = tfm_whisper_detect_language(
        w, features, frames, g->languages, g->num_languages, language, status);
    if (code != TFM_OK)
      return code;
    if (n > 1)
      init[1] = *language;
    else
      init[n++] = *language;
  } else {
    for (int64_t i = 1; i < n && *language < 0; ++i)
      if (contains(g->languages, g->num_languages, init[i]))
        *language = init[i];
  }
  if (o->task) {
    int32_t task = !strcmp(o->task, "transcribe")  ? g->transcribe
                   : !strcmp(o->task, "translate") ? g->translate
                                                   : -2;
    if (task == -2)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "unknown task '%s': expected 'transcribe' or "
                      "'translate'",
                      o->task);
    if (task < 0)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "model '%s' has no %s task (task_to_id)", desc->name,
                      o->task);
    init[n++] = task;
  } else if (o->language && g->transcribe >= 0 &&
             !contains(init, n, g->transcribe) &&
             !contains(init, n, g->translate)) {
    init[n++] = g->transcribe;
  }
  if (n > 1 && init[n - 1] == g->no_timestamps)
    --n;
  /* forced_decoder_ids' nulls left (no languages to detect) go. */
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i)
    if (init[i] >= 0)
      init[kept++] = init[i];
  w->init_count = kept;
  return TFM_OK;
}

/* A transcript being written: its segments and every token so far (the
 * prompt's text first), which later windows are conditioned on. */
typedef struct {
  tfm_transcript *transcript;
  int64_t capacity;
  token_list history;
  /* With word timestamps, each segment token's start in seconds, the
   * segments' tokens end to end. */
  double *times;
  int64_t time_count, time_capacity;
} transcript_builder;

/* Records the starts of a segment's `count` tokens: the window's times
 * (float32, as 4.40's token_timestamps) plus its offset. */
static int add_times(transcript_builder *b, const float *times, int64_t count,
                     float offset) {
  if (!reserve((void **)&b->times, &b->time_capacity, b->time_count + count,
               sizeof *b->times))
    return 0;
  for (int64_t i = 0; i < count; ++i)
    b->times[b->time_count++] = (double)(times[i] + offset);
  return 1;
}

/* Appends the segment tokens[0..count) from `start` to `end` s, decoded
 * with `result`'s numbers (and, where times is not NULL, its tokens'
 * starts, times[i] + time_offset). */
static tfm_status_code
add_segment(transcript_builder *b, tfm_model *model,
            const tfm_tokenizer *tokenizer, const tfm_whisper_tokens *special,
            const int32_t *tokens, int64_t count, double start, double end,
            int64_t seek, const tfm_whisper_window_result *result,
            const float *times, float time_offset, tfm_status *status) {
  tfm_transcript *t = b->transcript;
  if (times && !add_times(b, times, count, time_offset))
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (t->segment_count == b->capacity) {
    int64_t capacity = b->capacity ? 2 * b->capacity : 16;
    tfm_transcript_segment *grown =
        realloc(t->segments, (size_t)capacity * sizeof *grown);
    if (!grown)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    t->segments = grown;
    b->capacity = capacity;
  }
  tfm_transcript_segment *s = &t->segments[t->segment_count];
  memset(s, 0, sizeof *s);
  s->start = start;
  s->end = end;
  s->seek = seek;
  s->temperature = result->temperature;
  s->avg_logprob = result->avg_logprob;
  s->compression_ratio = result->compression_ratio;
  s->no_speech_prob = result->no_speech_prob;
  s->tokens = malloc((size_t)(count ? count : 1) * sizeof *s->tokens);
  /* The text: the tokens but timestamps (which a tokenizer may spell as
   * added tokens) and special tokens. */
  int32_t *text = malloc((size_t)(count ? count : 1) * sizeof *text);
  int64_t text_count = 0;
  if (!s->tokens || !text || !append(&b->history, tokens, count)) {
    free(s->tokens);
    free(text);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  memcpy(s->tokens, tokens, (size_t)count * sizeof *tokens);
  s->token_count = count;
  for (int64_t i = 0; i < count; ++i)
    if (tokens[i] < special->timestamp_begin)
      text[text_count++] = tokens[i];
  ++t->segment_count; /* freed with the transcript from here on */
  tfm_status_code code = tfm_seq2seq_decode_text(
      model, tokenizer, text, text_count, &s->text, NULL, status);
  free(text);
  return code;
}

/* transformers 4.40's _retrieve_segment: the window's tokens split after
 * each pair of timestamps, each piece from its first timestamp to its last
 * (offsets from the window's start, `offset` s), then where the next
 * window starts (*advance frames later): after this one where its tokens
 * end with a lone timestamp or hold no pair, else at the last pair's
 * time. Without a pair, the whole window is one segment, ending at its
 * last timestamp or the window's end. */
static tfm_status_code
add_window_segments(transcript_builder *b, tfm_model *model,
                    const tfm_tokenizer *tokenizer, const tfm_whisper_window *w,
                    const tfm_whisper_window_result *result, int64_t seek,
                    int64_t frames, int64_t stride, double precision,
                    int64_t *advance, tfm_status *status) {
  double offset = (double)seek * precision / (double)stride;
  float time_offset = (float)seek * (float)precision / (float)stride;
  const float *times = w->align ? w->times + w->times_offset : NULL;
  const int32_t *tokens = w->generated;
  int64_t count = result->count, begin = w->tokens.timestamp_begin;
  int single_ending =
      count >= 2 && tokens[count - 2] < begin && tokens[count - 1] >= begin;
  int64_t last = 0, pairs = 0;
  tfm_status_code code = TFM_OK;
  for (int64_t i = 1; i <= count && code == TFM_OK; ++i) {
    int cut = i < count ? tokens[i - 1] >= begin && tokens[i] >= begin
                        : single_ending && pairs > 0;
    if (!cut)
      continue;
    pairs += i < count;
    double start = offset + (tokens[last] - begin) * precision;
    double end = offset + (tokens[i - 1] - begin) * precision;
    code = add_segment(b, model, tokenizer, &w->tokens, tokens + last, i - last,
                       start, end, seek, result, times ? times + last : NULL,
                       time_offset, status);
    last = i;
  }
  if (code != TFM_OK)
    return code;
  if (pairs > 0) {
    *advance = single_ending ? frames : (tokens[last - 1] - begin) * stride;
    return TFM_OK;
  }
  /* No pair: one segment to the last timestamp, or the window's end. */
  double end = offset + (double)frames * precision / (double)stride;
  for (int64_t i = count - 1; i >= 0; --i)
    if (tokens[i] >= begin) {
      if (tokens[i] != begin)
        end = offset + (tokens[i] - begin) * precision;
      break;
    }
  *advance = frames;
  return add_segment(b, model, tokenizer, &w->tokens, tokens, count, offset,
                     end, seek, result, times, time_offset, status);
}

void tfm_transcript_free(tfm_transcript *t) {
  if (!t)
    return;
  for (int64_t i = 0; i < t->segment_count; ++i) {
    free(t->segments[i].text);
    free(t->segments[i].tokens);
  }
  free(t->segments);
  for (int64_t i = 0; i < t->word_count; ++i)
    free(t->words[i].word);
  free(t->words);
  free(t->language);
  free(t->task);
  free(t->text);
  free(t);
}

/* Python's round(x, 2), which 4.40's tokenizer applies to token times. */
static double hundredths(double x) { return nearbyint(x * 100.0) / 100.0; }

/* The transcript's words: each segment's text tokens, a token from its
 * start to the next token's (its segment's closing timestamp after the
 * last), grouped as 4.40's _collate_word_timestamps groups them; at every
 * character in the languages written without spaces. */
static tfm_status_code add_words(transcript_builder *b,
                                 const tfm_tokenizer *tokenizer,
                                 const tfm_whisper_tokens *special,
                                 tfm_status *status) {
  tfm_transcript *t = b->transcript;
  static const char *const kUnspaced[] = {"zh", "ja", "th", "lo", "my", "yue"};
  int no_spaces = 0;
  for (size_t i = 0; i < sizeof kUnspaced / sizeof *kUnspaced; ++i)
    no_spaces |= !strcmp(t->language, kUnspaced[i]);
  int64_t total = b->time_count, at = 0, capacity = 0;
  int32_t *text = malloc((size_t)(total ? total : 1) * sizeof *text);
  double *starts = malloc((size_t)(total ? total : 1) * sizeof *starts);
  double *ends = malloc((size_t)(total ? total : 1) * sizeof *ends);
  tfm_status_code code =
      text && starts && ends
          ? TFM_OK
          : tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int64_t s = 0; code == TFM_OK && s < t->segment_count; ++s) {
    const tfm_transcript_segment *segment = &t->segments[s];
    int64_t n = 0;
    for (int64_t i = 0; i < segment->token_count && at + i < total; ++i) {
      int32_t token = segment->tokens[i];
      int64_t k = at + i;
      if (token >= special->timestamp_begin || token == special->eos ||
          tfm_tokenizer_is_special(tokenizer, token))
        continue;
      text[n] = token;
      starts[n] = hundredths(b->times[k]);
      ends[n] = k + 1 < total ? hundredths(b->times[k + 1]) : starts[n];
      ++n;
    }
    at += segment->token_count;
    code = tfm_whisper_add_words(t, &capacity, tokenizer, text, starts, ends, n,
                                 special->eos, no_spaces, status);
  }
  free(text);
  free(starts);
  free(ends);
  return code;
}

/* The model's Whisper tokens and window shape, or why it has none. */
static tfm_status_code describe_model(tfm_model *model, tfm_whisper_window *w,
                                      tfm_status *status) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_generation_defaults *g = desc->generation;
  const tfm_audio_preprocessing *p = desc->audio_preprocessing;
  const tfm_cache_desc *self, *cross;
  tfm_seq2seq_find_caches(desc, &self, &cross);
  if (!g || g->no_timestamps < 1 || !p || p->kaldi || !self || !cross ||
      desc->bos_token < 0 || desc->eos_token < 0 ||
      g->no_timestamps + 1 >= desc->vocab_size)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' is not a Whisper model with timestamp tokens "
                    "(generation_config.json's no_timestamps_token_id) for "
                    "long-form transcription",
                    desc->name);
  w->model = model;
  w->generation = g;
  w->tokens = (tfm_whisper_tokens){.vocab = desc->vocab_size,
                                   .eos = (int32_t)desc->eos_token,
                                   .timestamp_begin = g->no_timestamps + 1,
                                   .no_timestamps = g->no_timestamps,
                                   .no_speech = g->no_timestamps - 1,
                                   .max_initial = g->max_initial_timestamp};
  w->mels = p->mel_bins;
  w->window = p->samples / p->hop_length;
  w->positions = self->shape[2]; /* [layers, 2, positions, ...] */
  return TFM_OK;
}

/* Checks the options, naming what is wrong. */
static tfm_status_code check_options(const tfm_whisper_options *o,
                                     tfm_status *status) {
  const char *function = "tfm_whisper_transcribe";
  if (o->temperature_count < 1 || !o->temperatures)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "%s: no temperatures",
                    function);
  for (int32_t i = 0; i < o->temperature_count; ++i)
    if (!(o->temperatures[i] >= 0 && o->temperatures[i] <= 100))
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "%s: temperature %g; expected 0 to 100", function,
                      (double)o->temperatures[i]);
  if (o->no_speech_threshold < 0 || o->no_speech_threshold > 1)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: no-speech threshold %g; expected a probability",
                    function, o->no_speech_threshold);
  if (o->compression_ratio_threshold <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: compression ratio threshold %g; expected more "
                    "than 0",
                    function, o->compression_ratio_threshold);
  return TFM_OK;
}

/* Every segment's text, one after another. */
static char *join_text(const tfm_transcript *t) {
  size_t length = 0;
  for (int64_t i = 0; i < t->segment_count; ++i)
    length += strlen(t->segments[i].text);
  char *text = malloc(length + 1);
  if (!text)
    return NULL;
  length = 0;
  for (int64_t i = 0; i < t->segment_count; ++i) {
    size_t n = strlen(t->segments[i].text);
    memcpy(text + length, t->segments[i].text, n);
    length += n;
  }
  text[length] = '\0';
  return text;
}

/* The window loop over every frame of the features. */
static tfm_status_code
transcribe_windows(tfm_whisper_window *w, const tfm_tokenizer *tokenizer,
                   const float *features, int64_t frames,
                   const tfm_whisper_options *o, const int32_t *prompt,
                   int64_t prompt_count, transcript_builder *b,
                   tfm_status *status) {
  const tfm_generation_defaults *g = w->generation;
  const tfm_model_desc *desc = tfm_model_get_desc(w->model);
  const tfm_cache_desc *self, *cross;
  tfm_seq2seq_find_caches(desc, &self, &cross);
  /* A window's frames over the encoder's positions: 2 (two convolutions,
   * the second of stride 2), each position 0.02 s. */
  int64_t stride = w->window / cross->shape[2];
  double precision = (double)stride * desc->audio_preprocessing->hop_length /
                     (double)desc->audio_preprocessing->sampling_rate;
  int64_t cut_off = w->positions / 2 - 1;
  tfm_whisper_decision decision = {
      o->temperatures, o->temperature_count, o->compression_ratio_threshold,
      o->logprob_threshold, o->no_speech_threshold};
  int32_t start_of_previous =
      g->start_of_previous >= 0
          ? g->start_of_previous
          : tfm_seq2seq_special_token(tokenizer, "<|startofprev|>");
  token_list previous = {0};
  int condition = o->condition_on_previous;
  tfm_status_code code = TFM_OK;
  for (int64_t seek = 0; seek < frames && code == TFM_OK;) {
    int64_t here = frames - seek < w->window ? frames - seek : w->window;
    /* The prompt: <|startofprev|> and the text so far (its last half
     * context less one tokens), or the initial prompt alone. */
    previous.count = 0;
    if (condition && start_of_previous >= 0 && b->history.count > 0) {
      int64_t kept = b->history.count < cut_off ? b->history.count : cut_off;
      if (!append(&previous, &start_of_previous, 1) ||
          !append(&previous, b->history.data + b->history.count - kept, kept))
        code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    } else if (prompt_count > 0 && !append(&previous, prompt, prompt_count)) {
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    tfm_whisper_window_result result;
    if (code == TFM_OK)
      code = tfm_whisper_decode_window(w, features, frames, seek, here,
                                       previous.data, previous.count, &decision,
                                       &result, status);
    if (code != TFM_OK)
      break;
    condition = o->condition_on_previous && result.temperature < 0.5;
    int64_t advance = here;
    if (!result.skip)
      code = add_window_segments(b, w->model, tokenizer, w, &result, seek, here,
                                 stride, precision, &advance, status);
    seek += advance > 0 ? advance : here; /* never the same window again */
    if (o->on_progress)
      o->on_progress(o->user,
                     (double)(seek < frames ? seek : frames) * precision /
                         (double)stride,
                     (double)frames * precision / (double)stride);
  }
  free(previous.data);
  return code;
}

tfm_status_code tfm_whisper_transcribe(tfm_model *model, const float *features,
                                       int64_t frames,
                                       const tfm_whisper_options *options,
                                       tfm_transcript **out,
                                       tfm_status *status) {
  if (!model || !features || !options || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_whisper_transcribe: NULL %s",
                    !model      ? "model"
                    : !features ? "features"
                    : !options  ? "options"
                                : "transcript");
  *out = NULL;
  tfm_whisper_window w;
  memset(&w, 0, sizeof w);
  tfm_status_code code = describe_model(model, &w, status);
  if (code == TFM_OK)
    code = check_options(options, status);
  if (code != TFM_OK)
    return code;
  if (frames < 1)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_whisper_transcribe: %lld frames of features",
                    (long long)frames);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, status);
  if (!tokenizer)
    return status ? status->code : TFM_ERROR_TOKENIZER;
  tfm_torch_generator generator;
  tfm_torch_generator_seed(&generator, options->seed, TFM_TORCH_NORMAL_AVX2);
  w.generator = &generator;
  int64_t vocab = desc->vocab_size;
  w.features = malloc((size_t)(w.mels * w.window) * sizeof *w.features);
  w.first_logits = malloc((size_t)vocab * sizeof *w.first_logits);
  w.scores = malloc((size_t)vocab * sizeof *w.scores);
  w.probabilities = malloc((size_t)vocab * sizeof *w.probabilities);
  w.generated = malloc((size_t)w.positions * sizeof *w.generated);
  transcript_builder b = {
      calloc(1, sizeof(tfm_transcript)), 0, {0}, NULL, 0, 0};
  w.align = options->word_timestamps;
  if (w.align && !tfm_model_entry_point(model, "align"))
    code = tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @align for word timestamps: its "
                    "generation_config.json lists no alignment_heads (or it "
                    "is split over ranks)",
                    desc->name);
  if (code == TFM_OK && w.align) {
    w.aligned = malloc((size_t)w.positions * sizeof *w.aligned);
    w.times = malloc((size_t)(w.positions + 1) * sizeof *w.times);
    if (!w.aligned || !w.times)
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  int32_t *prompt = NULL, prompt_count = 0;
  if (code == TFM_OK && (!w.features || !w.first_logits || !w.scores ||
                         !w.probabilities || !w.generated || !b.transcript))
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  int32_t language = -1;
  if (code == TFM_OK)
    code = init_tokens(&w, desc, tokenizer, options, features, frames,
                       &language, status);
  /* The initial prompt: <|startofprev|> and its text, which also starts
   * the text later windows are conditioned on (without the former). */
  if (code == TFM_OK && options->prompt) {
    code = tfm_seq2seq_previous_text(model, options->prompt, &prompt,
                                     &prompt_count, status);
    if (code == TFM_OK && !append(&b.history, prompt + 1, prompt_count - 1))
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  if (code == TFM_OK)
    code = transcribe_windows(&w, tokenizer, features, frames, options, prompt,
                              prompt_count, &b, status);
  tfm_transcript *t = b.transcript;
  if (code == TFM_OK) {
    /* The task is the one the windows were prompted with. */
    int translating =
        desc->generation->translate >= 0 &&
        contains(w.init, w.init_count, desc->generation->translate);
    t->language =
        language >= 0 ? language_code(tokenizer, language) : strdup("");
    t->task = strdup(translating ? "translate" : "transcribe");
    t->text = join_text(t);
    t->duration = (double)frames * desc->audio_preprocessing->hop_length /
                  (double)desc->audio_preprocessing->sampling_rate;
    if (!t->language || !t->task || !t->text)
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    if (code == TFM_OK && w.align)
      code = add_words(&b, tokenizer, &w.tokens, status);
  }
  free(prompt);
  free(b.history.data);
  free(w.features);
  free(w.first_logits);
  free(w.scores);
  free(w.probabilities);
  free(w.generated);
  free(w.aligned);
  free(w.times);
  free(b.times);
  if (code != TFM_OK) {
    tfm_transcript_free(t);
    return code;
  }
  *out = t;
  return tfm_ok(status);
}
