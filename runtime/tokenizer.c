/*===- tokenizer.c - tokenizer blobs: parsing, encoding, decoding -------===//
 *
 * Parses the blob tfmc embeds (tfm_format.h) and dispatches to the encoder of
 * its kind: tokenizer_score_bpe.c (llama2.c, SentencePiece) or
 * tokenizer_byte_level_bpe.c (GPT-2).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void tfm_tokenizer_free(tfm_tokenizer *t) {
  if (!t)
    return;
  if (t->pieces)
    for (uint32_t i = 0; i < t->vocab_size; ++i)
      free(t->pieces[i]);
  free(t->pieces);
  free(t->lengths);
  free(t->scores);
  free(t->sorted);
  free(t->merges);
  free(t);
}

/* A bounds-checked reader of the blob. */
typedef struct {
  const uint8_t *data;
  uint64_t size, at;
} blob_reader;

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
    t->pieces[i] = malloc(length + 1);
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

static tfm_status_code parse_merges(tfm_tokenizer *t, blob_reader *r,
                                    tfm_status *status) {
  if (!read_u32(r, &t->merge_count))
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: truncated before the merges");
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
  return TFM_OK;
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
  if (kind != TFM_TOKENIZER_SCORE_BPE && kind != TFM_TOKENIZER_BYTE_LEVEL_BPE)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: unknown kind %u", kind);
  tfm_tokenizer *t = calloc(1, sizeof *t);
  if (!t)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  t->kind = (tfm_tokenizer_kind)kind;
  t->vocab_size = vocab_size;
  tfm_status_code code = parse_pieces(t, &r, status);
  if (code == TFM_OK && t->kind == TFM_TOKENIZER_BYTE_LEVEL_BPE)
    code = parse_merges(t, &r, status);
  if (code != TFM_OK) {
    tfm_tokenizer_free(t);
    return code;
  }
  for (int b = 0; b < 256; ++b) {
    if (t->kind == TFM_TOKENIZER_BYTE_LEVEL_BPE) {
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

tfm_status_code tfm_tokenizer_encode(const tfm_tokenizer *t, const char *text,
                                     int32_t bos, int32_t *ids,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status) {
  if (!t || !text || !count || (!ids && capacity > 0))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_encode: NULL argument");
  /* Every encoder needs at most one id per byte, plus a dummy prefix. */
  size_t length = strlen(text);
  int32_t *work = malloc((length + 2) * sizeof *work);
  if (!work)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  int64_t n = 0;
  tfm_status_code code =
      t->kind == TFM_TOKENIZER_BYTE_LEVEL_BPE
          ? tfm_byte_level_bpe_encode(t, text, length, work, &n, status)
          : tfm_score_bpe_encode(t, text, length, work, &n, status);
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
  return code;
}

const char *tfm_tokenizer_decode(const tfm_tokenizer *t, int32_t previous,
                                 int32_t id, int32_t bos, size_t *size) {
  if (!t || !size || id < 0 || (uint32_t)id >= t->vocab_size)
    return NULL;
  const char *piece = t->pieces[id];
  size_t length = t->lengths[id];
  if (t->kind == TFM_TOKENIZER_SCORE_BPE) {
    /* SentencePiece drops the dummy space after BOS. */
    if (previous == bos && bos >= 0 && length > 0 && piece[0] == ' ') {
      ++piece;
      --length;
    }
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
  *size = length;
  return piece;
}
