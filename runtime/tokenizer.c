/*===- tokenizer.c - score-based BPE (llama2.c / SentencePiece) ---------===//
 *
 * The encoder of llama2.c, which reproduces SentencePiece BPE: a dummy
 * leading space, one token per UTF-8 character (bytes as "<0xAB>" tokens
 * when the character is not in the vocabulary), then repeatedly the adjacent
 * pair whose merge has the highest score is merged.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/status.h"
#include "runtime/tfm_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *piece;
  uint32_t length;
  int32_t id;
} sorted_piece;

struct tfm_tokenizer {
  uint32_t vocab_size;
  char **pieces; /* NUL-terminated copies */
  uint32_t *lengths;
  float *scores;
  sorted_piece *sorted; /* by bytes, for lookups */
  uint32_t max_length;
  int32_t byte_tokens[256]; /* id of "<0xAB>", or -1 */
};

static int compare_pieces(const void *a, const void *b) {
  const sorted_piece *x = a, *y = b;
  uint32_t n = x->length < y->length ? x->length : y->length;
  int c = memcmp(x->piece, y->piece, n);
  if (c)
    return c;
  return (x->length > y->length) - (x->length < y->length);
}

static int32_t lookup(const tfm_tokenizer *t, const char *bytes,
                      uint32_t length) {
  sorted_piece key = {bytes, length, -1};
  const sorted_piece *found = bsearch(&key, t->sorted, t->vocab_size,
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
  free(t);
}

tfm_status_code tfm_tokenizer_new(const uint8_t *blob, uint64_t size,
                                  tfm_tokenizer **out, tfm_status *status) {
  if (!blob || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_new: NULL argument");
  *out = NULL;
  if (size < TFM_TOKENIZER_MAGIC_SIZE + 4 ||
      memcmp(blob, TFM_TOKENIZER_MAGIC, TFM_TOKENIZER_MAGIC_SIZE) != 0)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "tokenizer blob: bad magic (not a tfmc tokenizer)");
  tfm_tokenizer *t = calloc(1, sizeof *t);
  if (!t)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  uint64_t at = TFM_TOKENIZER_MAGIC_SIZE;
  memcpy(&t->vocab_size, blob + at, 4);
  at += 4;
  uint32_t n = t->vocab_size;
  t->pieces = calloc(n, sizeof *t->pieces);
  t->lengths = calloc(n, sizeof *t->lengths);
  t->scores = calloc(n, sizeof *t->scores);
  t->sorted = calloc(n, sizeof *t->sorted);
  if (!t->pieces || !t->lengths || !t->scores || !t->sorted) {
    tfm_tokenizer_free(t);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < 256; ++i)
    t->byte_tokens[i] = -1;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t length = 0;
    if (size - at >= 8) {
      memcpy(&t->scores[i], blob + at, 4);
      memcpy(&length, blob + at + 4, 4);
    }
    if (size - at < 8 || size - at - 8 < length) {
      tfm_tokenizer_free(t);
      return tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "tokenizer blob: truncated at token %u of %u", i, n);
    }
    at += 8;
    t->pieces[i] = malloc(length + 1);
    if (!t->pieces[i]) {
      tfm_tokenizer_free(t);
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(t->pieces[i], blob + at, length);
    t->pieces[i][length] = '\0';
    t->lengths[i] = length;
    at += length;
    if (length > t->max_length)
      t->max_length = length;
    unsigned byte;
    if (length == 6 && sscanf(t->pieces[i], "<0x%02X>", &byte) == 1)
      t->byte_tokens[byte] = (int32_t)i;
    t->sorted[i] = (sorted_piece){t->pieces[i], length, (int32_t)i};
  }
  qsort(t->sorted, n, sizeof *t->sorted, compare_pieces);
  *out = t;
  return tfm_ok(status);
}

/* Appends `id`, or counts it when past capacity. */
static void emit(int32_t *ids, int64_t capacity, int64_t *count, int32_t id) {
  if (*count < capacity)
    ids[*count] = id;
  ++*count;
}

tfm_status_code tfm_tokenizer_encode(const tfm_tokenizer *t, const char *text,
                                     int32_t bos, int32_t *ids,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status) {
  if (!t || !text || !count || (!ids && capacity > 0))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_tokenizer_encode: NULL argument");
  /* Work in a private buffer big enough for every byte as a token. */
  size_t text_length = strlen(text);
  int32_t *work = malloc((text_length + 2) * sizeof *work);
  if (!work)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  int64_t n = 0;
  if (text_length > 0) {
    int32_t space = lookup(t, " ", 1);
    if (space >= 0)
      work[n++] = space;
  }
  for (size_t i = 0; i < text_length;) {
    /* One UTF-8 character: a lead byte and its continuation bytes. */
    size_t length = 1;
    while (i + length < text_length && length < 4 &&
           ((unsigned char)text[i + length] & 0xC0) == 0x80)
      ++length;
    int32_t id = lookup(t, text + i, (uint32_t)length);
    if (id >= 0) {
      work[n++] = id;
    } else {
      for (size_t b = 0; b < length; ++b) {
        int32_t byte_id = t->byte_tokens[(unsigned char)text[i + b]];
        if (byte_id < 0) {
          free(work);
          return tfm_fail(status, TFM_ERROR_TOKENIZER,
                          "byte 0x%02X at offset %zu of the text has no "
                          "token (the vocabulary lacks byte fallback)",
                          (unsigned char)text[i + b], i + b);
        }
        work[n++] = byte_id;
      }
    }
    i += length;
  }
  /* Merge the best-scoring adjacent pair until no pair is in the vocab. */
  char *pair = malloc(2 * (size_t)t->max_length + 1);
  if (!pair) {
    free(work);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  for (;;) {
    float best_score = -1e10f;
    int32_t best_id = -1;
    int64_t best_at = -1;
    for (int64_t i = 0; i + 1 < n; ++i) {
      uint32_t a = t->lengths[work[i]], b = t->lengths[work[i + 1]];
      memcpy(pair, t->pieces[work[i]], a);
      memcpy(pair + a, t->pieces[work[i + 1]], b);
      int32_t id = lookup(t, pair, a + b);
      if (id >= 0 && t->scores[id] > best_score) {
        best_score = t->scores[id];
        best_id = id;
        best_at = i;
      }
    }
    if (best_at < 0)
      break;
    work[best_at] = best_id;
    memmove(work + best_at + 1, work + best_at + 2,
            (size_t)(n - best_at - 2) * sizeof *work);
    --n;
  }
  free(pair);
  *count = 0;
  if (bos >= 0)
    emit(ids, capacity, count, bos);
  for (int64_t i = 0; i < n; ++i)
    emit(ids, capacity, count, work[i]);
  free(work);
  return tfm_ok(status);
}

const char *tfm_tokenizer_decode(const tfm_tokenizer *t, int32_t previous,
                                 int32_t id, int32_t bos, size_t *size) {
  if (!t || id < 0 || (uint32_t)id >= t->vocab_size)
    return NULL;
  const char *piece = t->pieces[id];
  size_t length = t->lengths[id];
  /* SentencePiece drops the dummy space after BOS. */
  if (previous == bos && bos >= 0 && length > 0 && piece[0] == ' ') {
    ++piece;
    --length;
  }
  /* Byte tokens stand for one raw byte: find it in the byte table. */
  for (int b = 0; b < 256 && length == 6; ++b)
    if (t->byte_tokens[b] == id) {
      static _Thread_local char byte;
      byte = (char)b;
      *size = 1;
      return &byte;
    }
  *size = length;
  return piece;
}
