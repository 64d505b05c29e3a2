/*===- transcript_formats.c - a transcript as text, JSON or subtitles ---===//
 *
 * tfm_transcript_write: what OpenAI's transcribe and its API write: the
 * text; verbose_json (task, language as its English name, duration, text,
 * segments with id, seek, start, end, text, tokens, temperature,
 * avg_logprob, compression_ratio and no_speech_prob, and words with their
 * start and end where the transcript has them); SubRip (numbered
 * cues, hours always, a comma before the milliseconds) and WebVTT (hours
 * where the audio reaches them), each cue's text trimmed and "-->" in it
 * written "->" as OpenAI's writers do, so that no cue's text reads as a
 * timing line. JSON strings are valid UTF-8: bytes that are not (a
 * character split between segments) become U+FFFD, as Python's
 * decode(errors="replace") makes them.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/transcribe/transcribe_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *data;
  size_t length, capacity;
  int failed;
} text;

static void put(text *t, const char *bytes, size_t n) {
  if (t->failed)
    return;
  if (t->length + n + 1 > t->capacity) {
    size_t capacity = t->capacity ? t->capacity : 1024;
    while (capacity < t->length + n + 1)
      capacity *= 2;
    char *grown = realloc(t->data, capacity);
    if (!grown) {
      t->failed = 1;
      return;
    }
    t->data = grown;
    t->capacity = capacity;
  }
  memcpy(t->data + t->length, bytes, n);
  t->length += n;
  t->data[t->length] = '\0';
}

/* A string literal's bytes. */
#define put_literal(t, literal) put((t), (literal), strlen(literal))

static void print(text *t, const char *format, ...) {
  char small[256];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(small, sizeof small, format, args);
  va_end(args);
  if (n >= 0 && (size_t)n < sizeof small)
    put(t, small, (size_t)n);
  else
    t->failed = 1; /* every format here is short */
}

/* The length of the valid UTF-8 character at s (n bytes left), or 0. */
static size_t utf8_length(const unsigned char *s, size_t n) {
  size_t length = s[0] < 0x80             ? 1
                  : (s[0] & 0xe0) == 0xc0 ? 2
                  : (s[0] & 0xf0) == 0xe0 ? 3
                  : (s[0] & 0xf8) == 0xf0 ? 4
                                          : 0;
  if (!length || length > n || (length == 2 && s[0] < 0xc2))
    return 0;
  for (size_t i = 1; i < length; ++i)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  uint32_t c =
      length == 3 ? (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6
      : length == 4
          ? (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12
          : 0x800;
  if ((length == 3 && (c < 0x800 || (c >= 0xd800 && c < 0xe000))) ||
      (length == 4 && (c < 0x10000 || c > 0x10ffff)))
    return 0;
  return length;
}

static void json_string(text *t, const char *s) {
  put_literal(t, "\"");
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t length = utf8_length((const unsigned char *)s + i, n - i);
    if (!length) {
      put_literal(t, "\xef\xbf\xbd"); /* U+FFFD */
      ++i;
    } else if (c == '"' || c == '\\') {
      put_literal(t, "\\");
      put(t, (const char *)&c, 1);
      ++i;
    } else if (c < 0x20) {
      print(t, "\\u%04x", c);
      ++i;
    } else {
      put(t, s + i, length);
      i += length;
    }
  }
  put_literal(t, "\"");
}

/* A JSON number; NAN (not measured) as null. */
static void json_number(text *t, double x) {
  if (isnan(x) || isinf(x))
    put_literal(t, "null");
  else
    print(t, "%.9g", x);
}

static void write_json(text *t, const tfm_transcript *transcript) {
  const char *name = tfm_whisper_language_name(transcript->language);
  put_literal(t, "{\"task\": ");
  json_string(t, transcript->task);
  put_literal(t, ", \"language\": ");
  json_string(t, name ? name : transcript->language);
  put_literal(t, ", \"duration\": ");
  json_number(t, transcript->duration);
  put_literal(t, ", \"text\": ");
  json_string(t, transcript->text);
  put_literal(t, ", \"segments\": [");
  for (int64_t i = 0; i < transcript->segment_count; ++i) {
    const tfm_transcript_segment *s = &transcript->segments[i];
    print(t, "%s\n  {\"id\": %" PRId64 ", \"seek\": %" PRId64 ", \"start\": ",
          i ? "," : "", i, s->seek);
    json_number(t, s->start);
    put_literal(t, ", \"end\": ");
    json_number(t, s->end);
    put_literal(t, ", \"text\": ");
    json_string(t, s->text);
    put_literal(t, ", \"tokens\": [");
    for (int64_t k = 0; k < s->token_count; ++k)
      print(t, k ? ", %d" : "%d", s->tokens[k]);
    put_literal(t, "], \"temperature\": ");
    json_number(t, s->temperature);
    put_literal(t, ", \"avg_logprob\": ");
    json_number(t, s->avg_logprob);
    put_literal(t, ", \"compression_ratio\": ");
    json_number(t, s->compression_ratio);
    put_literal(t, ", \"no_speech_prob\": ");
    json_number(t, s->no_speech_prob);
    put_literal(t, "}");
  }
  put_literal(t, "\n]");
  if (transcript->word_count > 0) {
    put_literal(t, ", \"words\": [");
    for (int64_t i = 0; i < transcript->word_count; ++i) {
      const tfm_transcript_word *w = &transcript->words[i];
      put_literal(t, i ? ",\n  {\"word\": " : "\n  {\"word\": ");
      json_string(t, w->word);
      put_literal(t, ", \"start\": ");
      json_number(t, w->start);
      put_literal(t, ", \"end\": ");
      json_number(t, w->end);
      put_literal(t, "}");
    }
    put_literal(t, "\n]");
  }
  put_literal(t, "}\n");
}

/* OpenAI's format_timestamp: [hh:]mm:ss<marker>mmm, milliseconds rounded. */
static void timestamp(text *t, double seconds, int hours, char marker) {
  int64_t ms = (int64_t)llround((seconds > 0 ? seconds : 0) * 1000.0);
  int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
  if (hours || h > 0)
    print(t, "%02" PRId64 ":", h);
  print(t, "%02" PRId64 ":%02" PRId64 "%c%03" PRId64, m, s, marker, ms % 1000);
}

/* Text trimmed; in a cue (`cue`), "-->" written "->". */
static void trimmed(text *t, const char *s, int cue) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
    ++s;
  size_t n = strlen(s);
  while (n && strchr(" \t\n\r", s[n - 1]))
    --n;
  for (size_t i = 0; i < n; ++i) {
    if (cue && i + 3 <= n && !strncmp(s + i, "-->", 3)) {
      put_literal(t, "->");
      i += 2;
    } else {
      put(t, s + i, 1);
    }
  }
}

static void write_subtitles(text *t, const tfm_transcript *transcript,
                            int srt) {
  if (!srt)
    put_literal(t, "WEBVTT\n\n");
  for (int64_t i = 0; i < transcript->segment_count; ++i) {
    const tfm_transcript_segment *s = &transcript->segments[i];
    if (srt)
      print(t, "%" PRId64 "\n", i + 1);
    timestamp(t, s->start, srt, srt ? ',' : '.');
    put_literal(t, " --> ");
    timestamp(t, s->end, srt, srt ? ',' : '.');
    put_literal(t, "\n");
    trimmed(t, s->text, 1);
    put_literal(t, "\n\n");
  }
}

tfm_status_code tfm_transcript_write(const tfm_transcript *transcript,
                                     tfm_transcript_format format, char **out,
                                     tfm_status *status) {
  if (!transcript || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_transcript_write: NULL %s",
                    transcript ? "output" : "transcript");
  text t = {0};
  put_literal(&t, "");
  switch (format) {
  case TFM_TRANSCRIPT_TEXT:
    trimmed(&t, transcript->text, 0);
    put_literal(&t, "\n");
    break;
  case TFM_TRANSCRIPT_JSON:
    write_json(&t, transcript);
    break;
  case TFM_TRANSCRIPT_SRT:
  case TFM_TRANSCRIPT_VTT:
    if (transcript->word_count > 0 && transcript->segment_count == 0) {
      free(t.data);
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "a transcript of words without segments (a CTC "
                      "recognizer's) has no subtitles: write text or "
                      "json");
    }
    write_subtitles(&t, transcript, format == TFM_TRANSCRIPT_SRT);
    break;
  default:
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_transcript_write: unknown format %d", (int)format);
  }
  if (t.failed) {
    free(t.data);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  *out = t.data;
  return tfm_ok(status);
}
