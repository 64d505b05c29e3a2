/*===- word_timestamps.c - Whisper's words placed in the audio ----------===//
 *
 * Word timestamps as transformers 4.40 computes them
 * (_extract_token_timestamps, then the tokenizer's
 * _collate_word_timestamps), which follows OpenAI's find_alignment:
 * the alignment heads' cross-attention weights over a window's frames
 * (@align) are normalized per frame over the tokens, smoothed along the
 * frames by a median filter, averaged over the heads; dynamic time warping
 * over their negation then walks tokens against frames, and each token
 * starts at the frame where the path first reaches it. A word runs from
 * its first token's start to the start of the token after its last; words
 * are split at spaces and punctuation and punctuation joins its
 * neighbour, as the tokenizer groups them.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/transcribe/transcribe_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* _median_filter: each value the median of the `width` around it along a
 * row, the row reflected at its ends (PyTorch's "reflect" padding). */
static void median_filter(float *row, int64_t n, int32_t width, float *padded,
                          float *window) {
  int32_t half = width / 2;
  if (n <= half)
    return;
  for (int64_t i = 0; i < n + 2 * half; ++i) {
    int64_t j = i - half;
    j = j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
    padded[i] = row[j];
  }
  for (int64_t i = 0; i < n; ++i) {
    memcpy(window, padded + i, (size_t)width * sizeof *window);
    /* Insertion sort: the width is small (7). */
    for (int32_t a = 1; a < width; ++a)
      for (int32_t b = a; b > 0 && window[b - 1] > window[b]; --b) {
        float t = window[b];
        window[b] = window[b - 1];
        window[b - 1] = t;
      }
    row[i] = window[half];
  }
}

/* _dynamic_time_warping over -matrix[rows, frames]: float32 costs, ties
 * going right (a frame on) as NumPy's loop breaks them; each row's first
 * frame on the path into first[rows]. */
static int dynamic_time_warping(const float *matrix, int64_t rows,
                                int64_t frames, int64_t *first) {
  int64_t width = frames + 1;
  float *cost = malloc((size_t)((rows + 1) * width) * sizeof *cost);
  signed char *trace = malloc((size_t)((rows + 1) * width));
  if (!cost || !trace) {
    free(cost);
    free(trace);
    return 0;
  }
  for (int64_t k = 0; k < (rows + 1) * width; ++k) {
    cost[k] = INFINITY;
    trace[k] = -1;
  }
  cost[0] = 0;
  for (int64_t j = 1; j <= frames; ++j)
    for (int64_t i = 1; i <= rows; ++i) {
      float c0 = cost[(i - 1) * width + j - 1], c1 = cost[(i - 1) * width + j],
            c2 = cost[i * width + j - 1], c;
      signed char t;
      if (c0 < c1 && c0 < c2)
        c = c0, t = 0;
      else if (c1 < c0 && c1 < c2)
        c = c1, t = 1;
      else
        c = c2, t = 2;
      cost[i * width + j] =
          (float)(-(double)matrix[(i - 1) * frames + j - 1] + (double)c);
      trace[i * width + j] = t;
    }
  for (int64_t j = 0; j < width; ++j)
    trace[j] = 2;
  for (int64_t i = 0; i <= rows; ++i)
    trace[i * width] = 1;
  /* Backwards from the corner; a row's first frame is the last seen. */
  int64_t i = rows, j = frames;
  int ok = 1;
  while (ok && (i > 0 || j > 0)) {
    if (i > 0)
      first[i - 1] = j - 1;
    signed char t = trace[i * width + j];
    if (t == 0)
      --i, --j;
    else if (t == 1)
      --i;
    else if (t == 2)
      --j;
    else
      ok = 0;
  }
  free(cost);
  free(trace);
  return ok;
}

tfm_status_code tfm_whisper_token_times(const float *weights, int64_t rows,
                                        int64_t heads, int64_t frames,
                                        int32_t median_width, double precision,
                                        float *times, tfm_status *status) {
  if (rows < 1 || heads < 1 || frames < 1 || median_width < 1 ||
      median_width % 2 == 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "word timestamps: %lld tokens, %lld heads, %lld frames, "
                    "median filter %d",
                    (long long)rows, (long long)heads, (long long)frames,
                    median_width);
  size_t cells = (size_t)(rows * frames);
  float *head = malloc(cells * sizeof *head);
  float *mean = calloc(cells, sizeof *mean);
  float *padded = malloc((size_t)(frames + median_width) * sizeof *padded);
  float *window = malloc((size_t)median_width * sizeof *window);
  int64_t *first = malloc((size_t)rows * sizeof *first);
  int ok = head && mean && padded && window && first;
  for (int64_t h = 0; ok && h < heads; ++h) {
    for (int64_t i = 0; i < rows; ++i)
      memcpy(head + i * frames, weights + (i * heads + h) * frames,
             (size_t)frames * sizeof *head);
    /* (w - mean) / std per frame over the tokens (std without Bessel's
     * correction). */
    for (int64_t f = 0; f < frames; ++f) {
      double sum = 0, squares = 0;
      for (int64_t i = 0; i < rows; ++i)
        sum += head[i * frames + f];
      float mu = (float)(sum / (double)rows);
      for (int64_t i = 0; i < rows; ++i) {
        double d = (double)head[i * frames + f] - mu;
        squares += d * d;
      }
      float sigma = (float)sqrt(squares / (double)rows);
      for (int64_t i = 0; i < rows; ++i)
        head[i * frames + f] = (head[i * frames + f] - mu) / sigma;
    }
    for (int64_t i = 0; i < rows; ++i)
      median_filter(head + i * frames, frames, median_width, padded, window);
    for (size_t k = 0; k < cells; ++k)
      mean[k] += head[k];
  }
  for (size_t k = 0; ok && k < cells; ++k)
    mean[k] /= (float)heads;
  ok = ok && dynamic_time_warping(mean, rows, frames, first);
  if (ok) {
    times[0] = 0;
    for (int64_t i = 0; i < rows; ++i)
      times[i + 1] = (float)((double)first[i] * precision);
  }
  free(head);
  free(mean);
  free(padded);
  free(window);
  free(first);
  return ok ? TFM_OK
            : tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* A word being grouped: its bytes and its tokens [first, last] (-1 once
 * joined to another). */
typedef struct {
  char *text;
  size_t length;
  int64_t first, last;
} word_piece;

/* Whether bytes[0..n) end where a UTF-8 character ends (a token that ends
 * inside one leaves the character to the next token). */
static int ends_a_character(const unsigned char *bytes, size_t n) {
  size_t back = 0;
  while (back < n && back < 4 && (bytes[n - 1 - back] & 0xC0) == 0x80)
    ++back;
  if (back == n)
    return back == 0;
  unsigned char lead = bytes[n - 1 - back];
  size_t expected = lead < 0x80             ? 0
                    : (lead & 0xE0) == 0xC0 ? 1
                    : (lead & 0xF0) == 0xE0 ? 2
                    : (lead & 0xF8) == 0xF0 ? 3
                                            : back;
  return back >= expected;
}

/* Python's `text in set` for strings: a substring (the empty text
 * included). */
static int within(const char *text, size_t length, const char *set) {
  size_t n = strlen(set);
  for (size_t at = 0; at + length <= n; ++at)
    if (!memcmp(set + at, text, length))
      return 1;
  return 0;
}

/* `text.strip() in set`: the same, less surrounding whitespace. */
static int stripped_within(const char *text, size_t length, const char *set) {
  while (length && text[0] && strchr(" \t\n\r\f\v", text[0]))
    ++text, --length;
  while (length && text[length - 1] && strchr(" \t\n\r\f\v", text[length - 1]))
    --length;
  return within(text, length, set);
}

/* Appends `more` to `into` (text and tokens) and empties `more`. */
static int join(word_piece *into, word_piece *more, int before) {
  char *text = malloc(into->length + more->length + 1);
  if (!text)
    return 0;
  const word_piece *a = before ? more : into, *b = before ? into : more;
  memcpy(text, a->text, a->length);
  memcpy(text + a->length, b->text, b->length);
  text[a->length + b->length] = '\0';
  free(into->text);
  into->text = text;
  into->length += more->length;
  if (into->first < 0) { /* emptied before: it takes more's tokens */
    into->first = more->first;
    into->last = more->last;
  } else if (more->first >= 0) {
    into->first = before ? more->first : into->first;
    into->last = before ? into->last : more->last;
  }
  free(more->text);
  more->text = NULL;
  more->length = 0;
  more->first = more->last = -1;
  return 1;
}

/* _combine_tokens_into_words: pieces that end whole characters, joined at
 * spaces and punctuation (unless `no_spaces`: Chinese, Japanese, ...),
 * then punctuation merged into its neighbours. */
static int64_t group_words(const tfm_tokenizer *tokenizer,
                           const int32_t *tokens, int64_t count, int32_t eos,
                           int no_spaces, word_piece *words) {
  static const char kPunctuation[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  static const char kPrepended[] = "\"'\xE2\x80\x9C\xC2\xA1\xC2\xBF([{-";
  static const char kAppended[] =
      "\"'.\xE3\x80\x82,\xEF\xBC\x8C!\xEF\xBC\x81?\xEF\xBC\x9F:\xEF\xBC\x9A"
      "\xE2\x80\x9D)]}\xE3\x80\x81";
  int64_t n = 0;
  word_piece piece = {NULL, 0, 0, -1};
  for (int64_t k = 0; k < count; ++k) {
    size_t size = 0;
    const char *bytes =
        tfm_tokenizer_decode(tokenizer, -1, tokens[k], -1, &size);
    word_piece token = {malloc(size + 1), size, k, k};
    if (!token.text)
      return -1;
    memcpy(token.text, bytes ? bytes : "", size);
    token.text[size] = '\0';
    if (piece.last < 0) {
      piece = token;
    } else if (!join(&piece, &token, 0)) {
      free(token.text);
      return -1;
    }
    if (!ends_a_character((const unsigned char *)piece.text, piece.length) &&
        k + 1 < count)
      continue;
    /* _split_tokens_on_spaces: a new word at a space, punctuation or a
     * special token; otherwise the piece continues the last word. */
    int starts = no_spaces || n == 0 || tokens[piece.first] >= eos ||
                 (piece.length && piece.text[0] == ' ') ||
                 stripped_within(piece.text, piece.length, kPunctuation);
    if (starts) {
      words[n++] = piece;
    } else if (!join(&words[n - 1], &piece, 0)) {
      free(piece.text);
      return -1;
    }
    piece = (word_piece){NULL, 0, 0, -1};
  }
  /* _merge_punctuations: " (" and the like join the word after them... */
  for (int64_t i = n - 2, j = n - 1; i >= 0; --i) {
    if (words[i].length && words[i].text[0] == ' ' &&
        stripped_within(words[i].text, words[i].length, kPrepended)) {
      if (!join(&words[j], &words[i], 1))
        return -1;
    } else {
      j = i;
    }
  }
  /* ...and "." and the like the word before them. */
  for (int64_t i = 0, j = 1; j < n; ++j) {
    if ((!words[i].length || words[i].text[words[i].length - 1] != ' ') &&
        within(words[j].text, words[j].length, kAppended)) {
      if (!join(&words[i], &words[j], 0))
        return -1;
    } else {
      i = j;
    }
  }
  return n;
}

tfm_status_code
tfm_whisper_add_words(tfm_transcript *transcript, int64_t *capacity,
                      const tfm_tokenizer *tokenizer, const int32_t *tokens,
                      const double *starts, const double *ends, int64_t count,
                      int32_t eos, int no_spaces, tfm_status *status) {
  if (count == 0)
    return TFM_OK;
  word_piece *words = calloc((size_t)count, sizeof *words);
  int64_t n =
      words ? group_words(tokenizer, tokens, count, eos, no_spaces, words) : -1;
  tfm_status_code code = TFM_OK;
  for (int64_t i = 0; code == TFM_OK && i < n; ++i) {
    if (!words[i].length)
      continue;
    if (transcript->word_count == *capacity) {
      int64_t grown = *capacity ? 2 * *capacity : 64;
      tfm_transcript_word *more =
          realloc(transcript->words, (size_t)grown * sizeof *more);
      if (!more) {
        code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
        break;
      }
      transcript->words = more;
      *capacity = grown;
    }
    tfm_transcript_word *w = &transcript->words[transcript->word_count++];
    w->word = words[i].text;
    w->start = starts[words[i].first];
    w->end = ends[words[i].last];
    words[i].text = NULL;
  }
  if (n < 0)
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int64_t i = 0; words && i < count; ++i)
    free(words[i].text);
  free(words);
  return code;
}
