/*===- tokenizer_byte_level_bpe.c - GPT-2's byte-level BPE --------------===//
 *
 * Byte-level BPE splits text into pieces by its pre-tokenizer
 * (tokenizer_bpe_split.c) and then, inside each piece, merges adjacent
 * tokens in merge-rank order, starting from single bytes
 * (tokenizer_merges.c). With ignore_merges (Llama 3's tokenizer.json, and
 * llama.cpp's Llama 3 pre-tokenizer types), a piece that is a token of its
 * own is that token, merges or not: Llama 3's vocabulary has words (" Việt")
 * its merges never reach. CLIP's split normalizes the text first (NFC,
 * whitespace runs one space, lowercase, as its tokenizer.json's
 * normalizer), drops the whitespace between pieces and starts each piece's
 * last byte as its end-of-word token ("a</w>"). Gemma 4's BPE is
 * SentencePiece-style: its pieces are lines, merged from characters, with
 * byte fallback (character_symbols).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

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

/* A piece's tokens before merging, GPT-2's way: one per byte (CLIP's last
 * byte its end-of-word token); *count is how many. */
static tfm_status_code byte_symbols(const tfm_tokenizer *t, const char *text,
                                    size_t at, size_t size, int32_t *piece,
                                    int64_t *count, tfm_status *status) {
  int clip = t->bpe_split == TFM_BPE_SPLIT_CLIP;
  for (size_t i = 0; i < size; ++i) {
    unsigned char byte = (unsigned char)text[at + i];
    int32_t id = clip && i + 1 == size ? t->word_end_tokens[byte]
                                       : t->byte_tokens[byte];
    if (id < 0)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "byte 0x%02X at offset %zu of the text has no token",
                      byte, at + i);
    piece[i] = id;
  }
  *count = (int64_t)size;
  return TFM_OK;
}

/* Gemma 4's: one token per character (as many bytes as its first byte
 * says, one where that is not UTF-8), or its bytes' "<0xAB>" tokens where
 * the character has none, as llama.cpp's gemma4 tokenizer and Hugging
 * Face's byte_fallback do; *count is how many. */
static tfm_status_code character_symbols(const tfm_tokenizer *t,
                                         const char *text, size_t at,
                                         size_t size, int32_t *piece,
                                         int64_t *count, tfm_status *status) {
  int64_t n = 0;
  for (size_t i = 0; i < size;) {
    unsigned char lead = (unsigned char)text[at + i];
    size_t bytes = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (bytes > size - i)
      bytes = size - i;
    int32_t id = tfm_tokenizer_lookup(t, text + at + i, (uint32_t)bytes);
    if (id >= 0) {
      piece[n++] = id;
      i += bytes;
      continue;
    }
    for (size_t end = i + bytes; i < end; ++i) {
      unsigned char byte = (unsigned char)text[at + i];
      if (t->byte_tokens[byte] < 0)
        return tfm_fail(status, TFM_ERROR_TOKENIZER,
                        "byte 0x%02X at offset %zu of the text has no token "
                        "(no <0x%02X> byte-fallback token)",
                        byte, at + i, byte);
      piece[n++] = t->byte_tokens[byte];
    }
  }
  *count = n;
  return TFM_OK;
}

static tfm_status_code encode_pieces(const tfm_tokenizer *t,
                                     const char *text, size_t length,
                                     int32_t *out, int64_t *count,
                                     tfm_status *status) {
  size_t *ends = malloc((length + 1) * sizeof *ends);
  int64_t pieces_total = ends ? tfm_bpe_split(t, text, length, ends) : -1;
  if (pieces_total < 0) {
    free(ends);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  tfm_merge_workspace workspace = {0};
  tfm_status_code code = TFM_OK;
  int64_t n = 0;
  size_t at = 0;
  int clip = t->bpe_split == TFM_BPE_SPLIT_CLIP;
  int lines = t->bpe_split == TFM_BPE_SPLIT_GEMMA4;
  for (int64_t p = 0; p < pieces_total && code == TFM_OK; at = ends[p++]) {
    size_t size = ends[p] - at;
    /* Gemma 4's runs of newlines are their token where there is one, as
     * llama.cpp has them (its merges do not reach every such token). */
    int whole_only = t->bpe_ignore_merges || (lines && text[at] == '\n');
    int32_t whole =
        whole_only ? tfm_tokenizer_lookup(t, text + at, (uint32_t)size) : -1;
    if (whole >= 0) {
      out[n++] = whole;
      continue;
    }
    if (clip && text[at] == ' ')
      continue; /* the space between CLIP's pieces */
    int32_t *piece = out + n;
    int64_t pieces = 0;
    code = lines ? character_symbols(t, text, at, size, piece, &pieces, status)
                 : byte_symbols(t, text, at, size, piece, &pieces, status);
    if (code == TFM_OK && pieces > 1 &&
        !tfm_merge_workspace_reserve(&workspace, t, pieces))
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    if (code == TFM_OK)
      n += tfm_merge_best_pairs(t, &workspace, piece, pieces, rank_pair_merge);
  }
  tfm_merge_workspace_free(&workspace);
  free(ends);
  if (code != TFM_OK)
    return code;
  *count = n;
  return tfm_ok(status);
}

/* CLIP's normalizer on text already in NFC: each whitespace run one space,
 * each code point lowercased (utf8proc's simple mapping); bytes that are
 * not UTF-8 kept. `out` has room for 4 bytes a byte of text; returns the
 * bytes written. */
static size_t clip_normalize(const char *text, size_t length, char *out) {
  size_t n = 0;
  int space = 0;
  for (size_t at = 0; at < length;) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t size =
        utf8proc_iterate((const uint8_t *)text + at, length - at, &cp);
    if (size <= 0) {
      out[n++] = text[at++];
      space = 0;
      continue;
    }
    at += (size_t)size;
    if (tfm_is_white_space(cp)) {
      if (!space)
        out[n++] = ' ';
      space = 1;
      continue;
    }
    space = 0;
    n += (size_t)utf8proc_encode_char(utf8proc_tolower(cp),
                                      (utf8proc_uint8_t *)out + n);
  }
  return n;
}

/* CLIP's: the text normalized, then split and merged. */
static tfm_status_code encode_clip(const tfm_tokenizer *t, const char *text,
                                   size_t length, int32_t *out, int64_t *count,
                                   tfm_status *status) {
  char *normal = malloc(4 * length + 1);
  if (!normal)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  size_t n = clip_normalize(text, length, normal);
  /* The caller's room for ids is sized by the text's bytes. */
  tfm_status_code code =
      n > length ? tfm_fail(status, TFM_ERROR_TOKENIZER,
                            "the text's lowercase form (%zu bytes) is longer "
                            "than the text (%zu bytes), which this tokenizer "
                            "does not encode",
                            n, length)
                 : encode_pieces(t, normal, n, out, count, status);
  free(normal);
  return code;
}

/* Gemma 4's: its normalizer spells spaces U+2581, so U+2581 in the text
 * is the space the pieces (stored with spaces) hold. */
static tfm_status_code encode_lines(const tfm_tokenizer *t, const char *text,
                                    size_t length, int32_t *out,
                                    int64_t *count, tfm_status *status) {
  char *spaced = malloc(length + 1);
  if (!spaced)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  size_t n = 0;
  for (size_t at = 0; at < length; ++n) {
    if (length - at >= 3 && memcmp(text + at, "\xE2\x96\x81", 3) == 0) {
      spaced[n] = ' ';
      at += 3;
    } else {
      spaced[n] = text[at++];
    }
  }
  tfm_status_code code = encode_pieces(t, spaced, n, out, count, status);
  free(spaced);
  return code;
}

tfm_status_code tfm_byte_level_bpe_encode(const tfm_tokenizer *t,
                                          const char *text, size_t length,
                                          int32_t *out, int64_t *count,
                                          tfm_status *status) {
  /* CLIP's split normalizes further after NFC, Gemma 4's its own way. */
  tfm_status_code (*encode)(const tfm_tokenizer *, const char *, size_t,
                            int32_t *, int64_t *, tfm_status *) =
      t->bpe_split == TFM_BPE_SPLIT_CLIP     ? encode_clip
      : t->bpe_split == TFM_BPE_SPLIT_GEMMA4 ? encode_lines
                                             : encode_pieces;
  if (!t->bpe_nfc || !length)
    return encode(t, text, length, out, count, status);
  /* An NFC normalizer (Qwen2's, GPT-NeoX's) composes text first. Text that is not UTF-8
   * has no NFC form (nor a Python string): it is split as it is. */
  utf8proc_uint8_t *nfc = NULL;
  utf8proc_ssize_t n =
      utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)length,
                   &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (n == UTF8PROC_ERROR_NOMEM)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (n < 0)
    return encode(t, text, length, out, count, status);
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
      encode(t, (const char *)nfc, (size_t)n, out, count, status);
  free(nfc);
  return code;
}
