/*===- tokenizer_byte_level_bpe.c - GPT-2's byte-level BPE --------------===//
 *
 * GPT-2 first splits text with the pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * and then, inside each piece, merges adjacent tokens in merge-rank order,
 * starting from single bytes. Character classes come from utf8proc
 * (letters L*, numbers N*, whitespace as Unicode's White_Space); bytes that
 * are not UTF-8 count as "other", one byte each.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer_internal.h"

#include <stdlib.h>
#include <utf8proc.h>

typedef enum { CLASS_LETTER, CLASS_DIGIT, CLASS_SPACE, CLASS_OTHER } char_class;

static int is_white_space(int32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

/* The class of the character at text[at] and its length in bytes. */
static char_class classify(const char *text, size_t length, size_t at,
                           size_t *size) {
  utf8proc_int32_t cp;
  utf8proc_ssize_t n =
      utf8proc_iterate((const uint8_t *)text + at, length - at, &cp);
  if (n <= 0) {
    *size = 1;
    return CLASS_OTHER;
  }
  *size = (size_t)n;
  if (is_white_space(cp))
    return CLASS_SPACE;
  utf8proc_category_t category = utf8proc_category(cp);
  if (category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO)
    return CLASS_LETTER;
  if (category >= UTF8PROC_CATEGORY_ND && category <= UTF8PROC_CATEGORY_NO)
    return CLASS_DIGIT;
  return CLASS_OTHER;
}

/* Length of the pre-token starting at text[at]. */
static size_t pretoken_length(const char *text, size_t length, size_t at) {
  static const char *const contractions[] = {"s", "t", "re", "ve",
                                             "m", "ll", "d"};
  if (text[at] == '\'') {
    for (size_t i = 0; i < sizeof contractions / sizeof *contractions; ++i) {
      size_t n = 0;
      while (contractions[i][n] && at + 1 + n < length &&
             text[at + 1 + n] == contractions[i][n])
        ++n;
      if (!contractions[i][n])
        return 1 + n;
    }
  }
  /* " ?X+" for X letters, digits or other: an optional space, one class. */
  size_t start = at, size, next_size;
  if (text[at] == ' ' && at + 1 < length &&
      classify(text, length, at + 1, &next_size) != CLASS_SPACE)
    ++start;
  char_class cls = classify(text, length, start, &size);
  if (cls != CLASS_SPACE) {
    size_t end = start + size;
    while (end < length && classify(text, length, end, &size) == cls)
      end += size;
    return end - at;
  }
  /* Whitespace: a run; when a word follows, its last character stays for
   * the word ("\s+(?!\S)"), unless the run is that one character. */
  size_t end = at, last = at;
  while (end < length && classify(text, length, end, &size) == CLASS_SPACE) {
    last = end;
    end += size;
  }
  if (end < length && last > at)
    end = last;
  return end - at;
}

static int compare_merge(const void *key, const void *element) {
  uint64_t pair = *(const uint64_t *)key;
  uint64_t other = ((const tfm_merge *)element)->pair;
  return (pair > other) - (pair < other);
}

static const tfm_merge *find_merge(const tfm_tokenizer *t, int32_t left,
                                   int32_t right) {
  uint64_t pair = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
  return bsearch(&pair, t->merges, t->merge_count, sizeof *t->merges,
                 compare_merge);
}

tfm_status_code tfm_byte_level_bpe_encode(const tfm_tokenizer *t,
                                          const char *text, size_t length,
                                          int32_t *out, int64_t *count,
                                          tfm_status *status) {
  int64_t n = 0;
  for (size_t at = 0; at < length;) {
    size_t size = pretoken_length(text, length, at);
    int32_t *piece = out + n;
    int64_t pieces = 0;
    for (size_t i = 0; i < size; ++i) {
      int32_t id = t->byte_tokens[(unsigned char)text[at + i]];
      if (id < 0)
        return tfm_fail(status, TFM_ERROR_TOKENIZER,
                        "byte 0x%02X at offset %zu of the text has no token",
                        (unsigned char)text[at + i], at + i);
      piece[pieces++] = id;
    }
    /* Merge the lowest-ranked adjacent pair until none is a merge. */
    for (;;) {
      const tfm_merge *best = NULL;
      int64_t best_at = -1;
      for (int64_t i = 0; i + 1 < pieces; ++i) {
        const tfm_merge *m = find_merge(t, piece[i], piece[i + 1]);
        if (m && (!best || m->rank < best->rank)) {
          best = m;
          best_at = i;
        }
      }
      if (!best)
        break;
      piece[best_at] = best->merged;
      for (int64_t i = best_at + 1; i + 1 < pieces; ++i)
        piece[i] = piece[i + 1];
      --pieces;
    }
    n += pieces;
    at += size;
  }
  *count = n;
  return tfm_ok(status);
}
