/*===- tokenizer_byte_level_bpe.c - GPT-2's byte-level BPE --------------===//
 *
 * Byte-level BPE first splits text with its pre-tokenizer's pattern, GPT-2's
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * or Llama 3's (tiktoken's cl100k; Qwen2's takes one digit at a time, \p{N})
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (each matched here by hand, alternatives in order), and then, inside each
 * piece, merges adjacent tokens in merge-rank order, starting from single
 * bytes (tokenizer_merges.c). Character classes come from utf8proc
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

static int is_newline(char c) { return c == '\r' || c == '\n'; }

/* Length of the contraction ('s 't 're 've 'm 'll 'd) at text[at], in
 * either case when `any_case` (ASCII letters, as llama.cpp reads Llama
 * 3's "(?i:...)"); 0 when none starts there. */
static size_t contraction_length(const char *text, size_t length, size_t at,
                                 int any_case) {
  static const char *const contractions[] = {"s", "t", "re", "ve",
                                             "m", "ll", "d"};
  if (text[at] != '\'')
    return 0;
  for (size_t i = 0; i < sizeof contractions / sizeof *contractions; ++i) {
    size_t n = 0;
    while (contractions[i][n] && at + 1 + n < length) {
      char c = text[at + 1 + n];
      if (any_case && c >= 'A' && c <= 'Z')
        c = (char)(c - 'A' + 'a');
      if (c != contractions[i][n])
        break;
      ++n;
    }
    if (!contractions[i][n])
      return 1 + n;
  }
  return 0;
}

/* Where the run of `cls` characters starting at text[at] ends. */
static size_t run_end(const char *text, size_t length, size_t at,
                      char_class cls) {
  size_t size;
  while (at < length && classify(text, length, at, &size) == cls)
    at += size;
  return at;
}

/* A whitespace run from text[at]: "\s+(?!\S)|\s+", so that when a word
 * follows, the run's last character stays for the word, unless the run is
 * that one character. `through_newline`: "\s*[\r\n]+" first, the run up
 * to its last newline (Llama 3's). */
static size_t space_length(const char *text, size_t length, size_t at,
                           int through_newline) {
  size_t end = at, last = at, size;
  size_t after_newline = 0;
  while (end < length && classify(text, length, end, &size) == CLASS_SPACE) {
    if (is_newline(text[end]))
      after_newline = end + 1;
    last = end;
    end += size;
  }
  if (through_newline && after_newline)
    return after_newline - at;
  if (end < length && last > at)
    end = last;
  return end - at;
}

/* Length of GPT-2's pre-token starting at text[at]. */
static size_t gpt2_pretoken_length(const char *text, size_t length,
                                   size_t at) {
  size_t contraction = contraction_length(text, length, at, 0);
  if (contraction)
    return contraction;
  /* " ?X+" for X letters, digits or other: an optional space, one class. */
  size_t start = at, size, next_size;
  if (text[at] == ' ' && at + 1 < length &&
      classify(text, length, at + 1, &next_size) != CLASS_SPACE)
    ++start;
  char_class cls = classify(text, length, start, &size);
  if (cls != CLASS_SPACE)
    return run_end(text, length, start + size, cls) - at;
  return space_length(text, length, at, 0);
}

/* Length of Llama 3's pre-token starting at text[at]; `max_digits`: 3
 * (Llama 3) or 1 (Qwen2). */
static size_t llama3_pretoken_length(const char *text, size_t length,
                                     size_t at, size_t max_digits) {
  size_t contraction = contraction_length(text, length, at, 1);
  if (contraction)
    return contraction;
  size_t size, next_size;
  char_class cls = classify(text, length, at, &size);
  /* [^\r\n\p{L}\p{N}]?\p{L}+: letters, after one character that is
   * neither a letter, a digit nor a newline. */
  if (cls == CLASS_LETTER)
    return run_end(text, length, at + size, CLASS_LETTER) - at;
  if (cls != CLASS_DIGIT && !is_newline(text[at]) && at + size < length &&
      classify(text, length, at + size, &next_size) == CLASS_LETTER)
    return run_end(text, length, at + size + next_size, CLASS_LETTER) - at;
  /* \p{N}{1,max_digits} */
  if (cls == CLASS_DIGIT) {
    size_t end = at;
    for (size_t i = 0; i < max_digits && end < length &&
                       classify(text, length, end, &size) == CLASS_DIGIT;
         ++i)
      end += size;
    return end - at;
  }
  /* " ?[^\s\p{L}\p{N}]+[\r\n]*": other characters, after an optional
   * space, then any newlines. */
  size_t start = at;
  if (text[at] == ' ' && at + 1 < length &&
      classify(text, length, at + 1, &next_size) == CLASS_OTHER)
    start = at + 1;
  if (classify(text, length, start, &size) == CLASS_OTHER) {
    size_t end = run_end(text, length, start + size, CLASS_OTHER);
    while (end < length && is_newline(text[end]))
      ++end;
    return end - at;
  }
  return space_length(text, length, at, 1);
}

static size_t pretoken_length(const tfm_tokenizer *t, const char *text,
                              size_t length, size_t at) {
  switch (t->bpe_split) {
  case TFM_BPE_SPLIT_LLAMA3:
    return llama3_pretoken_length(text, length, at, 3);
  case TFM_BPE_SPLIT_QWEN2:
    return llama3_pretoken_length(text, length, at, 1);
  default:
    return gpt2_pretoken_length(text, length, at);
  }
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

/* GPT-2's merge of `left` and `right`: the lowest rank first. */
static int rank_pair_merge(const tfm_tokenizer *t, int32_t left,
                           int32_t right, char *scratch, double *priority,
                           int32_t *merged) {
  (void)scratch;
  const tfm_merge *m = find_merge(t, left, right);
  if (!m)
    return 0;
  *priority = -(double)m->rank;
  *merged = m->merged;
  return 1;
}

static tfm_status_code encode_pieces(const tfm_tokenizer *t,
                                     const char *text, size_t length,
                                     int32_t *out, int64_t *count,
                                     tfm_status *status) {
  tfm_merge_workspace workspace = {0};
  tfm_status_code code = TFM_OK;
  int64_t n = 0;
  for (size_t at = 0; at < length && code == TFM_OK;) {
    size_t size = pretoken_length(t, text, length, at);
    int32_t *piece = out + n;
    int64_t pieces = 0;
    for (size_t i = 0; i < size; ++i) {
      int32_t id = t->byte_tokens[(unsigned char)text[at + i]];
      if (id < 0) {
        code = tfm_fail(status, TFM_ERROR_TOKENIZER,
                        "byte 0x%02X at offset %zu of the text has no token",
                        (unsigned char)text[at + i], at + i);
        break;
      }
      piece[pieces++] = id;
    }
    if (code == TFM_OK && pieces > 1 &&
        !tfm_merge_workspace_reserve(&workspace, t, pieces))
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    if (code == TFM_OK)
      n += tfm_merge_best_pairs(t, &workspace, piece, pieces, rank_pair_merge);
    at += size;
  }
  tfm_merge_workspace_free(&workspace);
  if (code != TFM_OK)
    return code;
  *count = n;
  return tfm_ok(status);
}

tfm_status_code tfm_byte_level_bpe_encode(const tfm_tokenizer *t,
                                          const char *text, size_t length,
                                          int32_t *out, int64_t *count,
                                          tfm_status *status) {
  if (t->bpe_split != TFM_BPE_SPLIT_QWEN2 || !length)
    return encode_pieces(t, text, length, out, count, status);
  /* Qwen2's tokenizer composes text to NFC first. Text that is not UTF-8
   * has no NFC form (nor a Python string): it is split as it is. */
  utf8proc_uint8_t *nfc = NULL;
  utf8proc_ssize_t n =
      utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)length,
                   &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (n == UTF8PROC_ERROR_NOMEM)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (n < 0)
    return encode_pieces(t, text, length, out, count, status);
  /* A few characters decompose under NFC (U+0958 into two); the caller's
   * room for ids is sized by the text's bytes. */
  if ((size_t)n > length) {
    free(nfc);
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "the text's NFC form (%zd bytes) is longer than the text "
                    "(%zu bytes), which this tokenizer does not encode",
                    n, length);
  }
  tfm_status_code code =
      encode_pieces(t, (const char *)nfc, (size_t)n, out, count, status);
  free(nfc);
  return code;
}
