/*===- tokenizer_wordpiece.c - BERT's WordPiece -------------------------===//
 *
 * As transformers' BertTokenizer (BasicTokenizer + WordpieceTokenizer):
 *   1. clean: drop NUL, U+FFFD and control characters, map whitespace to ' ';
 *   2. put spaces around CJK ideographs (TFM_WORDPIECE_SPLIT_CJK);
 *   3. NFC, then split on whitespace;
 *   4. per word: lowercase and/or strip accents (NFD, drop marks Mn);
 *      split punctuation (ASCII symbols and Unicode P*) into its own words;
 *   5. per word: the longest vocabulary prefix first, continuations
 *      prefixed "##"; a word with no split, or longer than
 *      max_chars_per_word characters, is the unknown token.
 * Unicode properties come from utf8proc (Debian's libutf8proc).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct {
  int32_t *data;
  size_t size, capacity;
} codepoints;

static int push(codepoints *c, int32_t cp) {
  if (c->size == c->capacity) {
    size_t capacity = c->capacity ? 2 * c->capacity : 64;
    int32_t *data = realloc(c->data, capacity * sizeof *data);
    if (!data)
      return 0;
    c->data = data;
    c->capacity = capacity;
  }
  c->data[c->size++] = cp;
  return 1;
}

static int is_whitespace(int32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' ||
         utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS;
}

/* Python's str.split() also splits at line and paragraph separators. */
static int splits_words(int32_t cp) {
  utf8proc_category_t category = utf8proc_category(cp);
  return cp == ' ' || category == UTF8PROC_CATEGORY_ZL ||
         category == UTF8PROC_CATEGORY_ZP;
}

static int is_control(int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r')
    return 0;
  utf8proc_category_t category = utf8proc_category(cp);
  return category == UTF8PROC_CATEGORY_CN || category >= UTF8PROC_CATEGORY_CC;
}

static int is_punctuation(int32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) ||
      (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return 1;
  utf8proc_category_t category = utf8proc_category(cp);
  return category >= UTF8PROC_CATEGORY_PC && category <= UTF8PROC_CATEGORY_PO;
}

/* The CJK Unified Ideographs blocks BERT's tokenizer isolates. */
static int is_cjk(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* Steps 1-3: cleaned, CJK-spaced, NFC code points of text[0, length). */
static tfm_status_code normalize(const tfm_tokenizer *t, const char *text,
                                 size_t length, codepoints *out,
                                 tfm_status *status) {
  codepoints cleaned = {0};
  const uint8_t *bytes = (const uint8_t *)text;
  for (size_t at = 0; at < length;) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate(bytes + at, length - at, &cp);
    if (n <= 0) {
      free(cleaned.data);
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "the text is not UTF-8 (byte 0x%02X at offset %zu)",
                      bytes[at], at);
    }
    at += n;
    if (cp == 0 || cp == 0xFFFD || is_control(cp))
      continue;
    int ok;
    if (is_whitespace(cp))
      ok = push(&cleaned, ' ');
    else if ((t->wordpiece_flags & TFM_WORDPIECE_SPLIT_CJK) && is_cjk(cp))
      ok = push(&cleaned, ' ') && push(&cleaned, cp) && push(&cleaned, ' ');
    else
      ok = push(&cleaned, cp);
    if (!ok) {
      free(cleaned.data);
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    }
  }
  /* NFC, through UTF-8 (utf8proc_map decomposes, orders the marks and
   * recomposes). */
  uint8_t *utf8 = malloc(4 * cleaned.size + 1), *nfc = NULL;
  size_t size = 0;
  if (utf8)
    for (size_t i = 0; i < cleaned.size; ++i)
      size += utf8proc_encode_char(cleaned.data[i], utf8 + size);
  free(cleaned.data);
  if (!utf8)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  utf8proc_ssize_t nfc_size =
      utf8proc_map(utf8, (utf8proc_ssize_t)size, &nfc,
                   UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  free(utf8);
  if (nfc_size < 0)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "cannot normalize the text: %s", utf8proc_errmsg(nfc_size));
  for (utf8proc_ssize_t at = 0; at < nfc_size;) {
    utf8proc_int32_t cp;
    at += utf8proc_iterate(nfc + at, nfc_size - at, &cp);
    if (!push(out, cp)) {
      free(nfc);
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    }
  }
  free(nfc);
  return TFM_OK;
}

/* Step 4's case and accent folding of one character, appended to `word`. */
static int fold(const tfm_tokenizer *t, int32_t cp, codepoints *word) {
  int lowercase = t->wordpiece_flags & TFM_WORDPIECE_LOWERCASE;
  int strip = t->wordpiece_flags & TFM_WORDPIECE_STRIP_ACCENTS;
  int32_t folded[2] = {cp, -1};
  if (lowercase) {
    /* Python lowercases U+0130 to "i" + combining dot above. */
    if (cp == 0x130) {
      folded[0] = 'i';
      folded[1] = 0x307;
    } else {
      folded[0] = utf8proc_tolower(cp);
    }
  }
  for (int k = 0; k < 2 && folded[k] >= 0; ++k) {
    if (!strip) {
      if (!push(word, folded[k]))
        return 0;
      continue;
    }
    int32_t parts[32];
    int boundclass = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(
        folded[k], parts, 32, UTF8PROC_DECOMPOSE, &boundclass);
    if (n < 0 || n > 32) {
      parts[0] = folded[k];
      n = 1;
    }
    for (utf8proc_ssize_t i = 0; i < n; ++i)
      if (utf8proc_category(parts[i]) != UTF8PROC_CATEGORY_MN &&
          !push(word, parts[i]))
        return 0;
  }
  return 1;
}

/* Step 5 for one word of `count` characters. */
static tfm_status_code split_word(const tfm_tokenizer *t, const int32_t *word,
                                  size_t count, int32_t *out, int64_t capacity,
                                  int64_t *n, tfm_status *status) {
  if (count == 0)
    return TFM_OK;
  if (*n + (int64_t)count > capacity)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "the text has more pieces than the tokenizer has room for");
  if (count > t->max_chars_per_word) {
    out[(*n)++] = t->unknown;
    return TFM_OK;
  }
  /* The word's UTF-8 bytes, each character's offset, and room for a
   * continuation: the prefix, then the rest of the word from a start. */
  size_t prefix = t->continuation_length;
  char *bytes = malloc(4 * count + 1), *piece = malloc(prefix + 4 * count + 1);
  size_t *offsets = malloc((count + 1) * sizeof *offsets);
  if (!bytes || !piece || !offsets) {
    free(bytes);
    free(piece);
    free(offsets);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  size_t size = 0;
  for (size_t i = 0; i < count; ++i) {
    offsets[i] = size;
    size += utf8proc_encode_char(word[i], (uint8_t *)bytes + size);
  }
  offsets[count] = size;
  memcpy(piece, t->continuation, prefix);
  int64_t start_n = *n;
  for (size_t start = 0; start < count;) {
    /* The longest piece from `start`: shorter lengths of one candidate. */
    const char *candidate = bytes;
    size_t skipped = 0;
    if (start > 0) {
      memcpy(piece + prefix, bytes + offsets[start], size - offsets[start]);
      candidate = piece;
      skipped = offsets[start] - prefix;
    }
    int32_t id = -1;
    size_t end = count;
    for (; end > start; --end)
      if ((id = tfm_tokenizer_lookup(t, candidate,
                                     (uint32_t)(offsets[end] - skipped))) >= 0)
        break;
    if (id < 0) {
      *n = start_n;
      out[(*n)++] = t->unknown;
      break;
    }
    out[(*n)++] = id;
    start = end;
  }
  free(bytes);
  free(piece);
  free(offsets);
  return TFM_OK;
}

tfm_status_code tfm_wordpiece_encode(const tfm_tokenizer *t, const char *text,
                                     size_t length, int32_t *out,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status) {
  codepoints normalized = {0};
  tfm_status_code code = normalize(t, text, length, &normalized, status);
  if (code != TFM_OK) {
    free(normalized.data);
    return code;
  }
  codepoints word = {0};
  int64_t n = 0;
  for (size_t at = 0; at <= normalized.size && code == TFM_OK; ++at) {
    int32_t cp = at < normalized.size ? normalized.data[at] : ' ';
    if (splits_words(cp)) {
      code = split_word(t, word.data, word.size, out, capacity, &n, status);
      word.size = 0;
      continue;
    }
    size_t before = word.size;
    if (!fold(t, cp, &word)) {
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    /* Punctuation is a word of its own (checked after folding, as the
     * reference splits the folded word; a folded character may have
     * decomposed into several). */
    for (size_t i = before; i < word.size && code == TFM_OK;) {
      if (!is_punctuation(word.data[i])) {
        ++i;
        continue;
      }
      code = split_word(t, word.data, i, out, capacity, &n, status);
      if (code == TFM_OK)
        code = split_word(t, word.data + i, 1, out, capacity, &n, status);
      size_t tail = word.size - i - 1;
      memmove(word.data, word.data + i + 1, tail * sizeof *word.data);
      word.size = tail;
      i = 0;
    }
  }
  free(word.data);
  free(normalized.data);
  *count = n;
  return code;
}
