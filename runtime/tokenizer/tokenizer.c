/*===- tokenizer.c - tokenizer blobs: parsing, encoding, decoding -------===//
 *
 * Parses the blob tfmc embeds (tfm_format.h) and dispatches to the encoder of
 * its kind: tokenizer_score_bpe.c (llama2.c, SentencePiece BPE),
 * tokenizer_byte_level_bpe.c (GPT-2, RoBERTa), tokenizer_wordpiece.c (BERT)
 * or tokenizer_unigram.c (SentencePiece Unigram: XLM-R). Encoders' text is
 * framed here ([CLS] A [SEP] B [SEP]), with special tokens kept whole.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/tokenizer_derived.h"
#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static int compare_pieces(const void *a, const void *b) {
  const tfm_sorted_piece *x = a, *y = b;
  uint32_t n = x->length < y->length ? x->length : y->length;
  int c = memcmp(x->piece, y->piece, n);
  if (c)
    return c;
  return (x->length > y->length) - (x->length < y->length);
}

static int compare_merges(const void *a, const void *b) {
  uint64_t x = ((const tfm_merge *)a)->pair, y = ((const tfm_merge *)b)->pair;
  return (x > y) - (x < y);
}

int32_t tfm_tokenizer_lookup(const tfm_tokenizer *t, const char *bytes,
                             uint32_t length) {
  tfm_sorted_piece key = {bytes, length, -1};
  const tfm_sorted_piece *found = bsearch(&key, t->sorted, t->vocab_size,
                                          sizeof *t->sorted, compare_pieces);
  return found ? found->id : -1;
}

/* The byte of `piece` at `depth`, which it must have. */
static unsigned char byte_at(const tfm_sorted_piece *piece, uint32_t depth) {
  return (unsigned char)piece->piece[depth];
}

int64_t tfm_sorted_narrow(const tfm_sorted_piece *sorted, size_t *lo,
                          size_t *hi, uint32_t depth, unsigned char byte) {
  /* Entries exactly `depth` long sort first; they end before this byte.
   * Searched, not stepped over: a vocabulary can hold thousands of equal
   * pieces (the empty ones made up past a SentencePiece model's end, when
   * a config claims more tokens), and a text asks this at every byte. */
  size_t a = *lo, b = *hi, last = *hi;
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (sorted[mid].length == depth)
      a = mid + 1;
    else
      b = mid;
  }
  /* Lower and upper bounds of `byte` at `depth`. */
  b = last;
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (byte_at(&sorted[mid], depth) < byte)
      a = mid + 1;
    else
      b = mid;
  }
  size_t begin = a;
  b = last;
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (byte_at(&sorted[mid], depth) <= byte)
      a = mid + 1;
    else
      b = mid;
  }
  *lo = begin;
  *hi = a;
  return begin < a && sorted[begin].length == depth + 1 ? (int64_t)begin : -1;
}

tfm_tokenizer_derived *tfm_tokenizer_derived_get(const tfm_tokenizer *t) {
  return __atomic_load_n(&t->derived, __ATOMIC_ACQUIRE);
}

tfm_tokenizer_derived *tfm_tokenizer_derived_attach(const tfm_tokenizer *t,
                                                    tfm_tokenizer_derived *d) {
  /* Logically const: a cache of what the vocabulary implies. */
  tfm_tokenizer *mutable_t = (tfm_tokenizer *)(uintptr_t)t;
  tfm_tokenizer_derived *expected = NULL;
  if (__atomic_compare_exchange_n(&mutable_t->derived, &expected, d, 0,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return d;
  return expected;
}

void tfm_tokenizer_free(tfm_tokenizer *t) {
  if (!t)
    return;
  if (t->derived)
    t->derived->release(t->derived);
  if (t->pieces)
    for (uint32_t i = 0; i < t->vocab_size; ++i)
      free(t->pieces[i]);
  free(t->pieces);
  if (t->shown)
    for (uint32_t i = 0; i < t->vocab_size; ++i)
      free(t->shown[i]);
  free(t->shown);
  free(t->shown_lengths);
  free(t->lengths);
  free(t->scores);
  free(t->sorted);
  free(t->merges);
  free(t->special_ids);
  free(t->special_ids_sorted);
  free(t->special_strips);
  tfm_special_trie_free(&t->special_trie);
  free(t->continuation);
  free(t->piece_types);
  free(t->chars_map_blob);
  for (uint32_t i = 0; i < t->replacement_count; ++i) {
    free(t->replaced[i]);
    free(t->replacements[i]);
  }
  free(t->replaced);
  free(t->replacements);
  free(t);
}

/* A bounds-checked reader of the blob. */
typedef struct {
  const uint8_t *data;
  uint64_t size, at;
} blob_reader;

/* Whether `count` records of at least `bytes` each can follow: checked
 * before allocating per record, so that a count the blob cannot hold is
 * refused rather than allocated. */
static int records_fit(const blob_reader *r, uint64_t count, uint64_t bytes) {
  return count <= (r->size - r->at) / bytes;
}

static int read_u32(blob_reader *r, uint32_t *value) {
  if (r->size - r->at < 4)
    return 0;
  memcpy(value, r->data + r->at, 4);
  r->at += 4;
  return 1;
}

static tfm_status_code parse_pieces(tfm_tokenizer *t, blob_reader *r,
                                    tfm_status *status) {
  uint32_t n = t->vocab_size;
  if (!records_fit(r, n, 8))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: %u tokens do not fit in its %llu bytes",
                    n, (unsigned long long)r->size);
  t->pieces = calloc(n, sizeof *t->pieces);
  t->lengths = calloc(n, sizeof *t->lengths);
  t->scores = calloc(n, sizeof *t->scores);
  t->sorted = calloc(n, sizeof *t->sorted);
  if (n && (!t->pieces || !t->lengths || !t->scores || !t->sorted))
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t score_bits, length;
    if (!read_u32(r, &score_bits) || !read_u32(r, &length) ||
        r->size - r->at < length)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: truncated at token %u of %u", i, n);
    memcpy(&t->scores[i], &score_bits, 4);
    t->pieces[i] = malloc((size_t)length + 1);
    if (!t->pieces[i])
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(t->pieces[i], r->data + r->at, length);
    t->pieces[i][length] = '\0';
    t->lengths[i] = length;
    r->at += length;
    if (length > t->max_length)
      t->max_length = length;
    t->sorted[i] = (tfm_sorted_piece){t->pieces[i], length, (int32_t)i};
  }
  qsort(t->sorted, n, sizeof *t->sorted, compare_pieces);
  return TFM_OK;
}

static int compare_ids(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static tfm_status_code parse_framing(tfm_tokenizer *t, blob_reader *r,
                                     tfm_status *status) {
  uint32_t begin, separator;
  if (!read_u32(r, &begin) || !read_u32(r, &separator) ||
      !read_u32(r, &t->pair_separators) || !read_u32(r, &t->second_type) ||
      !read_u32(r, &t->special_count))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated framing");
  t->frame_begin = (int32_t)begin;
  t->frame_separator = (int32_t)separator;
  /* RoBERTa's pairs have two separators between the texts; encoding sizes
   * its work by this count. */
  if (t->pair_separators > 16)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: %u separators between a pair's texts",
                    t->pair_separators);
  if (!records_fit(r, t->special_count, 8))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: %u special tokens do not fit",
                    t->special_count);
  t->special_ids = calloc(t->special_count + 1, sizeof *t->special_ids);
  t->special_ids_sorted =
      calloc(t->special_count + 1, sizeof *t->special_ids_sorted);
  t->special_strips = calloc(t->special_count + 1, sizeof *t->special_strips);
  if (!t->special_ids || !t->special_ids_sorted || !t->special_strips)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; i < t->special_count; ++i) {
    uint32_t id;
    if (!read_u32(r, &id) || !read_u32(r, &t->special_strips[i]))
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: truncated special tokens");
    t->special_ids[i] = (int32_t)id;
  }
  /* Added text decodes as text: not special. */
  t->special_sorted_count = 0;
  for (uint32_t i = 0; i < t->special_count; ++i)
    if (!(t->special_strips[i] & TFM_TOKENIZER_ADDED_TEXT))
      t->special_ids_sorted[t->special_sorted_count++] = t->special_ids[i];
  qsort(t->special_ids_sorted, t->special_sorted_count,
        sizeof *t->special_ids_sorted, compare_ids);
  return TFM_OK;
}

/* The trie of the special tokens' spellings (their ids checked); 0 when
 * out of memory. */
static int build_special_trie(tfm_tokenizer *t) {
  const char **spellings =
      malloc((t->special_count + 1) * sizeof *spellings);
  uint32_t *lengths = malloc((t->special_count + 1) * sizeof *lengths);
  int built = spellings && lengths;
  for (uint32_t k = 0; built && k < t->special_count; ++k) {
    spellings[k] = t->pieces[t->special_ids[k]];
    lengths[k] = t->lengths[t->special_ids[k]];
  }
  built = built && tfm_special_trie_build(&t->special_trie, t->special_count,
                                          spellings, lengths);
  free(spellings);
  free(lengths);
  return built;
}

/* Ids the blob names must be tokens (or -1 where optional). */
static tfm_status_code check_named_ids(const tfm_tokenizer *t,
                                       tfm_status *status) {
  int64_t n = t->vocab_size;
  /* A begin token needs a separator; a separator alone ends the text
   * (Marian's and T5's </s>). */
  if (t->frame_begin >= n || t->frame_separator >= n ||
      (t->frame_begin >= 0 && t->frame_separator < 0))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: framing tokens %d, %d are not tokens",
                    t->frame_begin, t->frame_separator);
  for (uint32_t i = 0; i < t->special_count; ++i)
    if (t->special_ids[i] < 0 || t->special_ids[i] >= n)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: special token %d is not a token",
                      t->special_ids[i]);
  if ((t->kind == TFM_TOKENIZER_WORDPIECE ||
       t->kind == TFM_TOKENIZER_UNIGRAM) &&
      (t->unknown < 0 || t->unknown >= n))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: the unknown token %d is not a token",
                    t->unknown);
  return TFM_OK;
}

static tfm_status_code parse_wordpiece(tfm_tokenizer *t, blob_reader *r,
                                       tfm_status *status) {
  uint32_t unknown;
  if (!read_u32(r, &t->wordpiece_flags) || !read_u32(r, &unknown) ||
      !read_u32(r, &t->max_chars_per_word) ||
      !read_u32(r, &t->continuation_length) ||
      r->size - r->at < t->continuation_length)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated WordPiece options");
  t->unknown = (int32_t)unknown;
  t->continuation = malloc((size_t)t->continuation_length + 1);
  if (!t->continuation)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  memcpy(t->continuation, r->data + r->at, t->continuation_length);
  t->continuation[t->continuation_length] = '\0';
  r->at += t->continuation_length;
  return TFM_OK;
}

/* A length-prefixed byte string, copied NUL-terminated. */
static int read_bytes(blob_reader *r, char **bytes, uint32_t *length) {
  if (!read_u32(r, length) || r->size - r->at < *length)
    return 0;
  *bytes = malloc((size_t)*length + 1);
  if (!*bytes)
    return 0;
  memcpy(*bytes, r->data + r->at, *length);
  (*bytes)[*length] = '\0';
  r->at += *length;
  return 1;
}

static tfm_status_code parse_unigram(tfm_tokenizer *t, blob_reader *r,
                                     tfm_status *status) {
  uint32_t unknown;
  if (!read_u32(r, &t->unigram_flags) || !read_u32(r, &unknown) ||
      r->size - r->at < t->vocab_size)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated Unigram options");
  t->unknown = (int32_t)unknown;
  t->piece_types = malloc(t->vocab_size ? t->vocab_size : 1);
  if (!t->piece_types)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  memcpy(t->piece_types, r->data + r->at, t->vocab_size);
  r->at += t->vocab_size;
  /* The normal pieces' score range prices unknown and user-defined pieces;
   * SentencePiece starts the maximum at FLT_MIN, not at -FLT_MAX. */
  t->min_score = 3.402823466e+38f;
  t->max_score = 1.175494351e-38f;
  for (uint32_t i = 0; i < t->vocab_size; ++i) {
    if (t->piece_types[i] == TFM_UNIGRAM_PIECE_USER_DEFINED)
      t->has_user_defined = 1;
    if (t->piece_types[i] != TFM_UNIGRAM_PIECE_NORMAL)
      continue;
    if (t->scores[i] < t->min_score)
      t->min_score = t->scores[i];
    if (t->scores[i] > t->max_score)
      t->max_score = t->scores[i];
  }
  uint32_t map_size = 0;
  if (!read_bytes(r, &t->chars_map_blob, &map_size))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated character map");
  char why[160];
  int opened = tfm_chars_map_open(&t->chars_map, t->chars_map_blob, map_size,
                                  why, sizeof why);
  if (opened == -2)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (opened != 0)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: malformed character map: %s", why);
  t->max_expansion = t->chars_map.max_expansion;
  return TFM_OK;
}

/* The prompt's text replacements, where the blob has them (blobs written
 * before they existed end before). */
static tfm_status_code parse_replacements(tfm_tokenizer *t, blob_reader *r,
                                          tfm_status *status) {
  uint32_t count;
  if (r->at == r->size)
    return TFM_OK;
  if (!read_u32(r, &count) || !records_fit(r, count, 8))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated prompt replacements");
  t->replaced = calloc(count ? count : 1, sizeof *t->replaced);
  t->replacements = calloc(count ? count : 1, sizeof *t->replacements);
  if (!t->replaced || !t->replacements)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t length, replaced_length;
    /* Counted as read, so that a failure frees what was. */
    t->replacement_count = i + 1;
    if (!read_bytes(r, &t->replaced[i], &replaced_length) ||
        !read_bytes(r, &t->replacements[i], &length))
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: truncated prompt replacement %u", i);
    if (replaced_length == 0 || strlen(t->replaced[i]) != replaced_length ||
        strlen(t->replacements[i]) != length)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: prompt replacement %u is empty or "
                      "holds a NUL",
                      i);
  }
  return TFM_OK;
}

static tfm_status_code parse_merges(tfm_tokenizer *t, blob_reader *r,
                                    tfm_status *status) {
  if (!read_u32(r, &t->merge_count))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated before the merges");
  if (!records_fit(r, t->merge_count, 12))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: %u merges do not fit", t->merge_count);
  t->merges = calloc(t->merge_count ? t->merge_count : 1, sizeof *t->merges);
  if (!t->merges)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (uint32_t i = 0; i < t->merge_count; ++i) {
    uint32_t ids[3];
    if (!read_u32(r, &ids[0]) || !read_u32(r, &ids[1]) || !read_u32(r, &ids[2]))
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: truncated at merge %u of %u", i,
                      t->merge_count);
    if (ids[0] >= t->vocab_size || ids[1] >= t->vocab_size ||
        ids[2] >= t->vocab_size)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: merge %u refers to an id past the "
                      "vocabulary",
                      i);
    t->merges[i] = (tfm_merge){(uint64_t)ids[0] << 32 | ids[1], i,
                               (int32_t)ids[2]};
  }
  qsort(t->merges, t->merge_count, sizeof *t->merges, compare_merges);
  /* The split rule follows (older blobs end here: GPT-2's). */
  if (r->at < r->size) {
    if (!read_u32(r, &t->bpe_split))
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: truncated split rule");
    uint32_t flags = t->bpe_split & (TFM_BPE_IGNORE_MERGES | TFM_BPE_NFC);
    t->bpe_split &= ~flags;
    t->bpe_ignore_merges = (flags & TFM_BPE_IGNORE_MERGES) != 0;
    /* Qwen2's split always came with its NFC normalizer (Qwen3.5's does
     * not). */
    t->bpe_nfc = (flags & TFM_BPE_NFC) != 0 ||
                 t->bpe_split == TFM_BPE_SPLIT_QWEN2;
    if (t->bpe_split > TFM_BPE_SPLIT_LAST)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: unknown split rule %u", t->bpe_split);
  }
  return TFM_OK;
}

/* Whether the tokenizer's byte tokens are "<0xAB>" pieces (SentencePiece's
 * byte fallback) rather than one-byte pieces: score BPE, Unigram, and
 * Gemma 4's BPE over characters. */
static int byte_fallback(const tfm_tokenizer *t) {
  return t->kind == TFM_TOKENIZER_SCORE_BPE ||
         t->kind == TFM_TOKENIZER_UNIGRAM ||
         (t->kind == TFM_TOKENIZER_BYTE_LEVEL_BPE &&
          t->bpe_split == TFM_BPE_SPLIT_GEMMA4);
}

static int clip_split(const tfm_tokenizer *t) {
  return t->kind == TFM_TOKENIZER_BYTE_LEVEL_BPE &&
         t->bpe_split == TFM_BPE_SPLIT_CLIP;
}

/* CLIP's end-of-word tokens ("a</w>") for each byte, and every piece as
 * decoding shows it: "</w>" a space, as CLIPTokenizer decodes. */
static int read_word_ends(tfm_tokenizer *t) {
  static const char suffix[] = "</w>";
  const size_t suffix_length = sizeof suffix - 1;
  for (int b = 0; b < 256; ++b) {
    char spelling[8] = {(char)b};
    memcpy(spelling + 1, suffix, suffix_length);
    t->word_end_tokens[b] =
        tfm_tokenizer_lookup(t, spelling, (uint32_t)(1 + suffix_length));
  }
  t->shown = calloc(t->vocab_size, sizeof *t->shown);
  t->shown_lengths = calloc(t->vocab_size, sizeof *t->shown_lengths);
  if (!t->shown || !t->shown_lengths)
    return 0;
  for (uint32_t i = 0; i < t->vocab_size; ++i) {
    size_t length = t->lengths[i];
    int word_end =
        length >= suffix_length && memcmp(t->pieces[i] + length - suffix_length,
                                          suffix, suffix_length) == 0;
    size_t shown = word_end ? length - suffix_length + 1 : length;
    t->shown[i] = malloc(shown + 1);
    if (!t->shown[i])
      return 0;
    memcpy(t->shown[i], t->pieces[i], word_end ? shown - 1 : shown);
    if (word_end)
      t->shown[i][shown - 1] = ' ';
    t->shown[i][shown] = '\0';
    t->shown_lengths[i] = (uint32_t)shown;
  }
  return 1;
}

tfm_status_code tfm_tokenizer_new(const uint8_t *blob, uint64_t size,
                                  tfm_tokenizer **out, tfm_status *status) {
  if (!blob || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_new: NULL argument");
  *out = NULL;
  if (size < TFM_TOKENIZER_MAGIC_SIZE ||
      memcmp(blob, TFM_TOKENIZER_MAGIC, TFM_TOKENIZER_MAGIC_SIZE) != 0)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: bad magic (not a tfmc tokenizer)");
  blob_reader r = {blob, size, TFM_TOKENIZER_MAGIC_SIZE};
  uint32_t kind, vocab_size;
  if (!read_u32(&r, &kind) || !read_u32(&r, &vocab_size))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated header");
  if (kind != TFM_TOKENIZER_SCORE_BPE && kind != TFM_TOKENIZER_BYTE_LEVEL_BPE &&
      kind != TFM_TOKENIZER_WORDPIECE && kind != TFM_TOKENIZER_UNIGRAM)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: unknown kind %u", kind);
  tfm_tokenizer *t = calloc(1, sizeof *t);
  if (!t)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  t->kind = (tfm_tokenizer_kind)kind;
  t->vocab_size = vocab_size;
  tfm_status_code code = parse_framing(t, &r, status);
  if (code == TFM_OK)
    code = parse_pieces(t, &r, status);
  if (code == TFM_OK && t->kind == TFM_TOKENIZER_BYTE_LEVEL_BPE)
    code = parse_merges(t, &r, status);
  if (code == TFM_OK && t->kind == TFM_TOKENIZER_WORDPIECE)
    code = parse_wordpiece(t, &r, status);
  if (code == TFM_OK && t->kind == TFM_TOKENIZER_UNIGRAM)
    code = parse_unigram(t, &r, status);
  if (code == TFM_OK && t->kind == TFM_TOKENIZER_SCORE_BPE && r.at < r.size &&
      !read_u32(&r, &t->score_bpe_flags))
    code = tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated score BPE flags");
  if (code == TFM_OK)
    code = parse_replacements(t, &r, status);
  if (code == TFM_OK)
    code = check_named_ids(t, status);
  if (code == TFM_OK && !build_special_trie(t))
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (code != TFM_OK) {
    tfm_tokenizer_free(t);
    return code;
  }
  if (clip_split(t) && !read_word_ends(t)) {
    tfm_tokenizer_free(t);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  for (int b = 0; b < 256; ++b) {
    if (t->kind == TFM_TOKENIZER_BYTE_LEVEL_BPE && !byte_fallback(t)) {
      /* GPT-2's byte-level pieces: the byte itself. */
      char byte = (char)b;
      t->byte_tokens[b] = tfm_tokenizer_lookup(t, &byte, 1);
    } else {
      char spelling[8];
      snprintf(spelling, sizeof spelling, "<0x%02X>", b);
      t->byte_tokens[b] = tfm_tokenizer_lookup(t, spelling, 6);
    }
  }
  *out = t;
  return tfm_ok(status);
}

/* Encodes a piece of text holding no special tokens, by the tokenizer's
 * kind. `out` has room for `capacity` >= length + 1 ids. */
static tfm_status_code encode_plain(const tfm_tokenizer *t, const char *text,
                                    size_t length, int32_t *out,
                                    int64_t capacity, int64_t *count,
                                    tfm_status *status) {
  switch (t->kind) {
  case TFM_TOKENIZER_BYTE_LEVEL_BPE:
    return tfm_byte_level_bpe_encode(t, text, length, out, count, status);
  case TFM_TOKENIZER_WORDPIECE:
    return tfm_wordpiece_encode(t, text, length, out, capacity, count, status);
  case TFM_TOKENIZER_UNIGRAM:
    return tfm_unigram_encode(t, text, length, out, capacity, count, status);
  default:
    return tfm_score_bpe_encode(t, text, length, out, count, status);
  }
}

int tfm_is_python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

/* Whether the UTF-8 character at text[0..length) is whitespace; *size is
 * its byte length (1 for a malformed one, which is not whitespace). */
static int space_at(const char *text, size_t length, size_t *size) {
  utf8proc_int32_t c;
  utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)text,
                                        (utf8proc_ssize_t)length, &c);
  *size = n > 0 ? (size_t)n : 1;
  return n > 0 && tfm_is_python_space((uint32_t)c);
}

/* The length of the whitespace that ends text[begin..end). */
static size_t space_before(const char *text, size_t begin, size_t end) {
  size_t at = end;
  while (at > begin) {
    size_t start = at - 1;
    while (start > begin && ((unsigned char)text[start] & 0xC0) == 0x80)
      --start;
    size_t size;
    if (!space_at(text + start, at - start, &size))
      break;
    at = start;
  }
  return end - at;
}

/* The length of the whitespace that starts text[at..length). */
static size_t space_after(const char *text, size_t at, size_t length) {
  size_t from = at, size;
  while (at < length && space_at(text + at, length - at, &size))
    at += size;
  return at - from;
}

/* The longest special token spelled at text[at], or -1. */
static int64_t special_at(const tfm_tokenizer *t, const char *text,
                          size_t length, size_t at) {
  return tfm_special_trie_longest(&t->special_trie, text + at, length - at);
}

/* Encodes text with its special tokens kept whole (their lstrip/rstrip
 * drop the spaces beside them), the rest by encode_plain. */
static tfm_status_code encode_prepared(const tfm_tokenizer *t, const char *text,
                                       size_t length, int32_t *out,
                                       int64_t capacity, int64_t *count,
                                       tfm_status *status) {
  int64_t n = 0;
  size_t chunk = 0;
  for (size_t at = 0; at <= length; ++at) {
    int64_t special = at < length ? special_at(t, text, length, at) : -1;
    if (special < 0 && at < length)
      continue;
    size_t end = at;
    if (special >= 0 && (t->special_strips[special] & TFM_TOKENIZER_STRIP_LEFT))
      end -= space_before(text, chunk, end);
    if (end > chunk) {
      int64_t written = 0;
      tfm_status_code code = encode_plain(t, text + chunk, end - chunk, out + n,
                                          capacity - n, &written, status);
      if (code != TFM_OK)
        return code;
      n += written;
    }
    if (special < 0)
      break;
    out[n++] = t->special_ids[special];
    at += t->lengths[t->special_ids[special]];
    if (t->special_strips[special] & TFM_TOKENIZER_STRIP_RIGHT)
      at += space_after(text, at, length);
    chunk = at;
    --at; /* the loop's increment */
  }
  *count = n;
  return TFM_OK;
}

/* encode_prepared on the text as the tokenizer prepares it. */
static tfm_status_code encode_segment(const tfm_tokenizer *t, const char *text,
                                      size_t length, int32_t *out,
                                      int64_t capacity, int64_t *count,
                                      tfm_status *status) {
  if (tfm_unigram_prepares(t)) {
    char *prepared = tfm_unigram_prepare(t, text, length, &length);
    if (!prepared)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    tfm_status_code code =
        encode_prepared(t, prepared, length, out, capacity, count, status);
    free(prepared);
    return code;
  }
  return encode_prepared(t, text, length, out, capacity, count, status);
}

/* Room for every encoder: BPE writes at most one id per byte plus a dummy
 * prefix, WordPiece one per normalized character (lowercasing and accent
 * decomposition can make more characters than bytes, rarely three), Unigram
 * one per normalized byte (three for a space symbol's byte fallback), where
 * normalization can make max_expansion bytes of one. */
static int64_t work_capacity(const tfm_tokenizer *t, size_t length) {
  int64_t expansion = t->max_expansion ? t->max_expansion : 1;
  if (tfm_unigram_prepares(t))
    length = 4 * length + 3; /* tfm_unigram_prepare's bound */
  return 3 * expansion * (int64_t)length + 4;
}

/* The prompt replacement that matches at `text` (the first listed where
 * several do), or -1. */
static int64_t replacement_at(const tfm_tokenizer *t, const char *text) {
  for (uint32_t i = 0; i < t->replacement_count; ++i)
    if (!strncmp(text, t->replaced[i], strlen(t->replaced[i])))
      return i;
  return -1;
}

/* What replacements may add to a prompt: a processor's image expansion
 * adds a few KB an image (Gemma 3's 256 tokens: 4.6 KB), so this bounds
 * only a hostile tokenizer's (a long replacement of a one-byte text). */
#define MAX_REPLACED_GROWTH ((size_t)16 << 20)

/* `text` with the tokenizer's prompt replacements made at each place one
 * matches, scanning on past what was replaced, as Python's str.replace
 * does; a new string (measured first, then written), or NULL out of
 * memory or where it would grow by more than MAX_REPLACED_GROWTH
 * (*too_long set). */
static char *replace_prompt_text(const tfm_tokenizer *t, const char *text,
                                 int *too_long) {
  size_t length = strlen(text);
  char *out = NULL;
  *too_long = 0;
  for (int pass = 0; pass < 2; ++pass) {
    size_t n = 0;
    for (size_t at = 0; at < length;) {
      int64_t i = replacement_at(t, text + at);
      if (i < 0) {
        if (out)
          out[n] = text[at];
        ++n, ++at;
        continue;
      }
      size_t added = strlen(t->replacements[i]);
      if (out)
        memcpy(out + n, t->replacements[i], added);
      n += added;
      at += strlen(t->replaced[i]);
    }
    if (out) {
      out[n] = '\0';
      return out;
    }
    if (n > length + MAX_REPLACED_GROWTH) {
      *too_long = 1;
      return NULL;
    }
    out = malloc(n + 1);
    if (!out)
      return NULL;
  }
  return out;
}

tfm_status_code tfm_tokenizer_encode(const tfm_tokenizer *t, const char *text,
                                     int32_t bos, int32_t *ids,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status) {
  if (!t || !text || !count || (!ids && capacity > 0))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_encode: NULL argument");
  if (capacity < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_encode: negative capacity %lld",
                    (long long)capacity);
  if (bos >= (int64_t)t->vocab_size)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_encode: BOS %d is not a token (vocabulary "
                    "of %u)",
                    bos, t->vocab_size);
  char *replaced = NULL;
  if (t->replacement_count) {
    int too_long = 0;
    replaced = replace_prompt_text(t, text, &too_long);
    if (!replaced && too_long)
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "the tokenizer's prompt replacements would make the "
                      "text more than %zu MB longer",
                      MAX_REPLACED_GROWTH >> 20);
    if (!replaced)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    text = replaced;
  }
  size_t length = strlen(text);
  int64_t room = work_capacity(t, length);
  int32_t *work = malloc(room * sizeof *work);
  if (!work) {
    free(replaced);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  int64_t n = 0;
  tfm_status_code code = encode_segment(t, text, length, work, room, &n, status);
  if (code == TFM_OK) {
    /* Count everything; write what fits. */
    *count = 0;
    if (bos >= 0) {
      if (capacity > 0)
        ids[0] = bos;
      *count = 1;
    }
    for (int64_t i = 0; i < n; ++i, ++*count)
      if (*count < capacity)
        ids[*count] = work[i];
  }
  free(work);
  free(replaced);
  return code;
}

tfm_status_code tfm_tokenizer_encode_text(const tfm_tokenizer *t,
                                          const char *first,
                                          const char *second, int32_t *ids,
                                          int32_t *token_types,
                                          int64_t capacity, int64_t *count,
                                          tfm_status *status) {
  if (!t || !first || !count || (!ids && capacity > 0))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_encode_text: NULL argument");
  if (capacity < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_encode_text: negative capacity %lld",
                    (long long)capacity);
  if (t->frame_separator < 0)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "the tokenizer has no [CLS]/[SEP] framing (a decoder's: "
                    "use tfm_tokenizer_encode)");
  size_t first_length = strlen(first);
  size_t second_length = second ? strlen(second) : 0;
  int64_t room = work_capacity(t, first_length) +
                 work_capacity(t, second_length) +
                 t->pair_separators + 2;
  int32_t *work = malloc(room * sizeof *work);
  int32_t *types = malloc(room * sizeof *types);
  if (!work || !types) {
    free(work);
    free(types);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  /* [CLS] first [SEP], then [SEP]... second [SEP] as the second type. */
  int64_t n = 0, written = 0;
  if (t->frame_begin >= 0)
    work[n++] = t->frame_begin;
  tfm_status_code code =
      encode_segment(t, first, first_length, work + n, room - n, &written,
                     status);
  n += written;
  work[n++] = t->frame_separator;
  int64_t first_end = n;
  if (code == TFM_OK && second) {
    for (uint32_t i = 1; i < t->pair_separators; ++i)
      work[n++] = t->frame_separator;
    code = encode_segment(t, second, second_length, work + n, room - n,
                          &written, status);
    n += written;
    work[n++] = t->frame_separator;
  }
  if (code == TFM_OK) {
    for (int64_t i = 0; i < n; ++i)
      types[i] = i < first_end ? 0 : (int32_t)t->second_type;
    *count = n;
    for (int64_t i = 0; i < n && i < capacity; ++i) {
      ids[i] = work[i];
      if (token_types)
        token_types[i] = types[i];
    }
  }
  free(work);
  free(types);
  return code;
}

void tfm_tokenizer_prompt_replacement(const tfm_tokenizer *t, int32_t index,
                                      const char **text,
                                      const char **replacement) {
  int known = t && index >= 0 && (uint32_t)index < t->replacement_count;
  if (text)
    *text = known ? t->replaced[index] : NULL;
  if (replacement)
    *replacement = known ? t->replacements[index] : NULL;
}

int tfm_tokenizer_is_special(const tfm_tokenizer *t, int32_t id) {
  if (!t || id < 0)
    return 0;
  if (id == t->frame_begin || id == t->frame_separator)
    return 1;
  /* A binary search: a tokenizer.json may list thousands of added tokens,
   * and decoding asks once per token (a linear scan took 2.3 s, under
   * ASan, over the ids of one 100 KB text). */
  return t->special_count &&
         bsearch(&id, t->special_ids_sorted, t->special_sorted_count,
                 sizeof *t->special_ids_sorted, compare_ids) != NULL;
}

const char *tfm_tokenizer_decode(const tfm_tokenizer *t, int32_t previous,
                                 int32_t id, int32_t bos, size_t *size) {
  if (!t || !size || id < 0 || (uint32_t)id >= t->vocab_size)
    return NULL;
  const char *piece = t->pieces[id];
  size_t length = t->lengths[id];
  if (t->kind == TFM_TOKENIZER_SCORE_BPE || t->kind == TFM_TOKENIZER_UNIGRAM) {
    /* SentencePiece drops the dummy space after BOS. */
    if (previous == bos && bos >= 0 && length > 0 && piece[0] == ' ') {
      ++piece;
      --length;
    }
  }
  if (byte_fallback(t)) {
    /* "<0xAB>" stands for one raw byte: the one whose token it is. */
    if (length == 6 && piece[0] == '<')
      for (int b = 0; b < 256; ++b)
        if (t->byte_tokens[b] == id) {
          static const char bytes[256] = {
#define B(x) (char)(x), (char)(x + 1), (char)(x + 2), (char)(x + 3)
#define B16(x) B(x), B(x + 4), B(x + 8), B(x + 12)
              B16(0),   B16(16),  B16(32),  B16(48),  B16(64),  B16(80),
              B16(96),  B16(112), B16(128), B16(144), B16(160), B16(176),
              B16(192), B16(208), B16(224), B16(240)
#undef B16
#undef B
          };
          *size = 1;
          return &bytes[b];
        }
  }
  if (t->shown) {
    *size = t->shown_lengths[id];
    return t->shown[id];
  }
  *size = length;
  return piece;
}
