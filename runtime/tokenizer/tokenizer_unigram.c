/*===- tokenizer_unigram.c - SentencePiece Unigram ------------------------===//
 *
 * SentencePiece's Unigram encoding (XLM-R, T5, Marian), as its
 * Normalizer::Normalize and Model::EncodeOptimized do it:
 *
 * 1. Normalize: at each position the longest user-defined piece is kept as
 *    is, else the longest key of the precompiled character map (nmt_nfkc)
 *    is replaced, else one character is copied. Extra whitespace is removed
 *    (leading, trailing, runs), a dummy space is prefixed, and spaces become
 *    the space symbol U+2581 — held here as ' ', the spelling tfmc gives
 *    pieces, so a literal U+2581 in the text becomes ' ' too.
 * 2. Viterbi over the normalized bytes: the best path ending at each
 *    character boundary, extended by every piece that starts there. A
 *    character no piece covers is one unknown token scored 10 below the
 *    lowest piece; runs of unknown tokens become one (or, with byte
 *    fallback, each unknown character's bytes become "<0xAB>" tokens).
 *
 * Scores are summed as SentencePiece sums them (in double, kept in float) so
 * that ties break the same way.
 *
 * SiglipTokenizer works around SentencePiece in Python, which
 * TFM_UNIGRAM_LOWERCASE and TFM_UNIGRAM_SIGLIP_TEXT repeat: the whole text
 * lowercased and prefixed with U+2581 (its dummy prefix is disabled), then
 * each text between special tokens canonicalized before step 1.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

enum { UNKNOWN_PENALTY = 10 };

/* The length of the UTF-8 character whose lead byte is `lead`, as
 * SentencePiece's OneCharLen reads it. */
static size_t char_length(unsigned char lead) {
  return lead < 0xC0   ? 1
         : lead < 0xE0 ? 2
         : lead < 0xF0 ? 3
         : lead < 0xF8 ? 4
                       : 1;
}

static int is_space_symbol(const char *text, size_t length) {
  return length >= 3 && (unsigned char)text[0] == 0xE2 &&
         (unsigned char)text[1] == 0x96 && (unsigned char)text[2] == 0x81;
}

/* The longest user-defined piece spelled at text[0..length), or 0. */
static size_t user_defined_prefix(const tfm_tokenizer *t, const char *text,
                                  size_t length) {
  size_t lo = 0, hi = t->vocab_size, longest = 0;
  for (uint32_t depth = 0; depth < length && lo < hi; ++depth) {
    int64_t k = tfm_sorted_narrow(t->sorted, &lo, &hi, depth,
                                  (unsigned char)text[depth]);
    if (k >= 0 &&
        t->piece_types[t->sorted[k].id] == TFM_UNIGRAM_PIECE_USER_DEFINED)
      longest = depth + 1;
  }
  return longest;
}

/* The normalized form of text[0..*consumed) at its start: SentencePiece's
 * NormalizePrefix. Sets *consumed (at least one byte). */
static void normalize_prefix(const tfm_tokenizer *t, const char *text,
                             size_t length, const char **chunk,
                             size_t *chunk_length, size_t *consumed) {
  if (t->has_user_defined) {
    size_t n = user_defined_prefix(t, text, length);
    if (n) {
      *chunk = text;
      *chunk_length = *consumed = n;
      return;
    }
  }
  size_t matched = tfm_chars_map_longest(&t->chars_map, text, length, chunk,
                                         chunk_length);
  if (matched) {
    *consumed = matched;
    return;
  }
  size_t n = char_length((unsigned char)text[0]);
  *chunk = text;
  *chunk_length = *consumed = n < length ? n : length;
}

/* Normalizes text into `out` (room for length * max_expansion + 1 bytes);
 * returns the normalized length. The space symbol is written ' '. */
static size_t normalize(const tfm_tokenizer *t, const char *text, size_t length,
                        char *out) {
  int remove_extra =
      (t->unigram_flags & TFM_UNIGRAM_REMOVE_EXTRA_WHITESPACES) != 0;
  int escape = (t->unigram_flags & TFM_UNIGRAM_ESCAPE_WHITESPACES) != 0;
  /* SiglipTokenizer encodes "<unk>" + text and drops the unknown token's
   * pieces: no whitespace of the text leads. */
  int leading = remove_extra && !(t->unigram_flags & TFM_UNIGRAM_SIGLIP_TEXT);
  const char *chunk;
  size_t chunk_length, consumed, at = 0, n = 0;
  /* Leading whitespace. */
  while (leading && at < length) {
    normalize_prefix(t, text + at, length - at, &chunk, &chunk_length,
                     &consumed);
    if (chunk_length != 1 || chunk[0] != ' ')
      break;
    at += consumed;
  }
  if (at == length)
    return 0;
  if (t->unigram_flags & TFM_UNIGRAM_ADD_DUMMY_PREFIX)
    out[n++] = ' ';
  int previous_space = leading;
  while (at < length) {
    normalize_prefix(t, text + at, length - at, &chunk, &chunk_length,
                     &consumed);
    while (previous_space && chunk_length > 0 && chunk[0] == ' ') {
      ++chunk;
      --chunk_length;
    }
    if (chunk_length > 0) {
      for (size_t i = 0; i < chunk_length;) {
        if (escape && is_space_symbol(chunk + i, chunk_length - i)) {
          out[n++] = ' ';
          i += 3;
        } else {
          out[n++] = chunk[i++];
        }
      }
      previous_space = chunk[chunk_length - 1] == ' ';
    }
    at += consumed;
    if (!remove_extra)
      previous_space = 0;
  }
  /* Trailing whitespace (the space symbol, from spaces or spelled). */
  while (remove_extra && n > 0 && out[n - 1] == ' ')
    --n;
  return n;
}

int tfm_unigram_prepares(const tfm_tokenizer *t) {
  return t->kind == TFM_TOKENIZER_UNIGRAM &&
         (t->unigram_flags &
          (TFM_UNIGRAM_LOWERCASE | TFM_UNIGRAM_SIGLIP_TEXT)) != 0;
}

char *tfm_unigram_prepare(const tfm_tokenizer *t, const char *text,
                          size_t length, size_t *prepared) {
  int lowercase = (t->unigram_flags & TFM_UNIGRAM_LOWERCASE) != 0;
  int siglip = (t->unigram_flags & TFM_UNIGRAM_SIGLIP_TEXT) != 0;
  /* A code point's lowercase form takes at most 4 bytes; the prefix 3. */
  char *out = malloc(4 * length + 4);
  if (!out)
    return NULL;
  size_t n = 0;
  if (siglip) {
    memcpy(out, "\xE2\x96\x81", 3);
    n = 3;
  }
  for (size_t at = 0; at < length;) {
    if (siglip && is_space_symbol(text + at, length - at)) {
      out[n++] = ' ';
      at += 3;
      continue;
    }
    utf8proc_int32_t cp;
    utf8proc_ssize_t size =
        utf8proc_iterate((const uint8_t *)text + at, length - at, &cp);
    if (size <= 0) {
      out[n++] = text[at++]; /* not UTF-8: kept */
    } else if (lowercase) {
      n += (size_t)utf8proc_encode_char(utf8proc_tolower(cp),
                                        (utf8proc_uint8_t *)out + n);
      at += (size_t)size;
    } else {
      memcpy(out + n, text + at, (size_t)size);
      n += (size_t)size;
      at += (size_t)size;
    }
  }
  *prepared = n;
  return out;
}

/* Python's string.punctuation: the ASCII characters that are neither
 * letters, digits, whitespace nor controls. */
static int is_ascii_punctuation(unsigned char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
         (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

/* SiglipTokenizer's canonicalize_text: ASCII punctuation removed, then each
 * whitespace run one space and the ends stripped (Python's \s); into `out`
 * (room for `length` bytes). Returns the bytes written. */
static size_t canonicalize(const char *text, size_t length, char *out) {
  size_t n = 0;
  int space = 0;
  for (size_t at = 0; at < length;) {
    unsigned char c = (unsigned char)text[at];
    if (is_ascii_punctuation(c)) {
      ++at;
      continue;
    }
    utf8proc_int32_t cp;
    utf8proc_ssize_t size =
        utf8proc_iterate((const uint8_t *)text + at, length - at, &cp);
    size_t bytes = size > 0 ? (size_t)size : 1;
    if (size > 0 && tfm_is_python_space((uint32_t)cp)) {
      space = 1;
      at += bytes;
      continue;
    }
    if (space && n > 0)
      out[n++] = ' ';
    space = 0;
    memcpy(out + n, text + at, bytes);
    n += bytes;
    at += bytes;
  }
  return n;
}

/* The best segmentation of text[0..end) ends with the piece `id` that starts
 * at `start` (-1: unreached); its pieces' scores sum to `score`. */
typedef struct {
  float score;
  int32_t start, id;
} best_path;

/* Viterbi over the normalized bytes: fills best[0..size]. */
static void find_best_paths(const tfm_tokenizer *t, const char *text,
                            size_t size, best_path *best) {
  for (size_t i = 0; i <= size; ++i)
    best[i] = (best_path){0.0f, -1, -1};
  const float unknown_score = t->min_score - UNKNOWN_PENALTY;
  for (size_t start = 0; start < size;) {
    size_t char_bytes = char_length((unsigned char)text[start]);
    if (char_bytes > size - start)
      char_bytes = size - start;
    const float base = best[start].score;
    int covered = 0; /* a piece spans exactly this character */
    size_t lo = 0, hi = t->vocab_size;
    for (uint32_t depth = 0; start + depth < size && lo < hi; ++depth) {
      int64_t k = tfm_sorted_narrow(t->sorted, &lo, &hi, depth,
                                    (unsigned char)text[start + depth]);
      if (k < 0)
        continue;
      int32_t id = t->sorted[k].id;
      uint8_t type = t->piece_types[id];
      if (type == TFM_UNIGRAM_PIECE_RESERVED)
        continue;
      size_t piece_bytes = depth + 1;
      /* User-defined pieces get a bonus that makes them win. */
      double score = type == TFM_UNIGRAM_PIECE_USER_DEFINED
                         ? (double)((float)piece_bytes * t->max_score) - 0.1
                         : (double)t->scores[id];
      double candidate = score + (double)base;
      best_path *target = &best[start + piece_bytes];
      if (target->start < 0 || candidate > (double)target->score)
        *target = (best_path){(float)candidate, (int32_t)start, id};
      if (piece_bytes == char_bytes)
        covered = 1;
    }
    if (!covered) {
      float candidate = unknown_score + base;
      best_path *target = &best[start + char_bytes];
      if (target->start < 0 || candidate > target->score)
        *target = (best_path){candidate, (int32_t)start, t->unknown};
    }
    start += char_bytes;
  }
}

/* Writes an unknown piece's bytes as byte tokens (the space symbol as its
 * three UTF-8 bytes). */
static tfm_status_code write_bytes(const tfm_tokenizer *t, const char *piece,
                                   size_t length, int32_t *out, int64_t *n,
                                   int64_t capacity, tfm_status *status) {
  static const unsigned char space_symbol[3] = {0xE2, 0x96, 0x81};
  int escape = (t->unigram_flags & TFM_UNIGRAM_ESCAPE_WHITESPACES) != 0;
  for (size_t i = 0; i < length; ++i) {
    const unsigned char *bytes = (const unsigned char *)piece + i;
    size_t count = 1;
    if (escape && piece[i] == ' ') {
      bytes = space_symbol;
      count = 3;
    }
    for (size_t b = 0; b < count; ++b) {
      int32_t id = t->byte_tokens[bytes[b]];
      if (id < 0)
        return tfm_fail(status, TFM_ERROR_TOKENIZER,
                        "byte 0x%02X has no <0x%02X> token for byte fallback",
                        bytes[b], bytes[b]);
      if (*n >= capacity)
        return tfm_fail(status, TFM_ERROR_TOKENIZER,
                        "the text makes more tokens than the tokenizer "
                        "allowed room for");
      out[(*n)++] = id;
    }
  }
  return TFM_OK;
}

tfm_status_code tfm_unigram_encode(const tfm_tokenizer *t, const char *text,
                                   size_t length, int32_t *out,
                                   int64_t capacity, int64_t *count,
                                   tfm_status *status) {
  *count = 0;
  char *canonical = NULL;
  if (t->unigram_flags & TFM_UNIGRAM_SIGLIP_TEXT) {
    canonical = malloc(length + 1);
    if (!canonical)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    length = canonicalize(text, length, canonical);
    text = canonical;
  }
  char *normalized = malloc(length * t->max_expansion + 2);
  if (!normalized) {
    free(canonical);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  size_t size = normalize(t, text, length, normalized);
  free(canonical);
  best_path *best = malloc((size + 1) * sizeof *best);
  int32_t *starts = malloc((size + 1) * sizeof *starts);
  if (!best || !starts) {
    free(normalized);
    free(best);
    free(starts);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  find_best_paths(t, normalized, size, best);
  /* Backtrack: the piece boundaries, last first. */
  int64_t pieces = 0;
  for (int64_t end = (int64_t)size; end > 0; end = best[end].start)
    starts[pieces++] = (int32_t)end;
  tfm_status_code code = TFM_OK;
  int64_t n = 0;
  int previous_unknown = 0;
  int byte_fallback = (t->unigram_flags & TFM_UNIGRAM_BYTE_FALLBACK) != 0;
  for (int64_t p = pieces - 1; p >= 0 && code == TFM_OK; --p) {
    int32_t end = starts[p];
    const best_path *node = &best[end];
    int unknown = node->id == t->unknown;
    if (unknown && byte_fallback) {
      code =
          write_bytes(t, normalized + node->start, (size_t)(end - node->start),
                      out, &n, capacity, status);
    } else if (!(unknown && previous_unknown)) {
      /* A run of unknown characters is one unknown token. */
      if (n >= capacity)
        code = tfm_fail(status, TFM_ERROR_TOKENIZER,
                        "the text makes more tokens than the tokenizer "
                        "allowed room for");
      else
        out[n++] = node->id;
    }
    previous_unknown = unknown;
  }
  free(normalized);
  free(best);
  free(starts);
  *count = n;
  return code;
}
