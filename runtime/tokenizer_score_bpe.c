/*===- tokenizer_score_bpe.c - llama2.c / SentencePiece BPE -------------===//
 *
 * The encoder of llama2.c, which reproduces SentencePiece BPE: a dummy
 * leading space, one token per UTF-8 character (bytes as "<0xAB>" tokens
 * when the character is not in the vocabulary), then repeatedly the adjacent
 * pair whose merge has the highest score is merged.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

/* SentencePiece's remove_extra_whitespaces: `text` without leading or
 * trailing spaces and with runs of spaces made one, in `out` (room for
 * `length` bytes); returns its length. */
static size_t remove_extra_spaces(const char *text, size_t length, char *out) {
  size_t n = 0;
  for (size_t i = 0; i < length; ++i)
    if (text[i] != ' ' || (n > 0 && out[n - 1] != ' '))
      out[n++] = text[i];
  while (n > 0 && out[n - 1] == ' ')
    --n;
  return n;
}

/* A candidate merge: the pair of symbols starting at `left` and `right`
 * (indices into the symbol arrays), as they were when it was found. */
typedef struct {
  float score;
  int32_t left_id, right_id, id;
  int64_t left, right;
} candidate;

/* Heap order: the highest score first, then the leftmost pair (the
 * quadratic scan llama2.c does takes the first best pair). Symbols keep
 * their first character's index, so index order is text order. */
static int before(const candidate *a, const candidate *b) {
  return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(candidate *heap, int64_t *size, candidate c) {
  int64_t i = (*size)++;
  while (i > 0 && before(&c, &heap[(i - 1) / 2])) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = c;
}

static candidate heap_pop(candidate *heap, int64_t *size) {
  candidate top = heap[0], last = heap[--*size];
  int64_t i = 0;
  for (;;) {
    int64_t child = 2 * i + 1;
    if (child >= *size)
      break;
    if (child + 1 < *size && before(&heap[child + 1], &heap[child]))
      ++child;
    if (!before(&heap[child], &last))
      break;
    heap[i] = heap[child];
    i = child;
  }
  if (*size > 0)
    heap[i] = last;
  return top;
}

/* Pushes the merge of symbols `left` and `right` when the vocabulary has
 * it. `pair` has room for two pieces. */
static void offer_pair(const tfm_tokenizer *t, const int32_t *ids,
                       int64_t left, int64_t right, char *pair,
                       candidate *heap, int64_t *size) {
  uint32_t a = t->lengths[ids[left]], b = t->lengths[ids[right]];
  memcpy(pair, t->pieces[ids[left]], a);
  memcpy(pair + a, t->pieces[ids[right]], b);
  int32_t id = tfm_tokenizer_lookup(t, pair, a + b);
  /* llama2.c's scan starts from a best score of -1e10: pairs scoring no
   * more never merge. */
  if (id >= 0 && t->scores[id] > -1e10f)
    heap_push(heap, size,
              (candidate){t->scores[id], ids[left], ids[right], id, left,
                          right});
}

/* Merges the best-scoring adjacent pair of `work[0, n)` until no pair is
 * in the vocabulary, as llama2.c does by rescanning every pair after each
 * merge, but with the pairs in a heap and the symbols in a linked list:
 * O(n log n), where the rescan is O(n^2) lookups (half a second for a
 * 10 KB text under ASan; minutes for a long prompt). A popped pair whose
 * symbols changed since it was found is stale and skipped. Returns the
 * token count, or -1 when out of memory (then `status` says so). */
static int64_t merge_best_pairs(const tfm_tokenizer *t, int32_t *work,
                                int64_t n, tfm_status *status) {
  if (n < 2)
    return n;
  int64_t *next = malloc((size_t)n * sizeof *next);
  int64_t *prev = malloc((size_t)n * sizeof *prev);
  /* n - 1 pairs at first, at most two new ones per merge (n - 1 merges). */
  candidate *heap = malloc((size_t)(3 * n) * sizeof *heap);
  char *pair = malloc(2 * (size_t)t->max_length + 1);
  if (!next || !prev || !heap || !pair) {
    free(next);
    free(prev);
    free(heap);
    free(pair);
    tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    return -1;
  }
  int64_t size = 0;
  for (int64_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  for (int64_t i = 0; i + 1 < n; ++i)
    offer_pair(t, work, i, i + 1, pair, heap, &size);
  while (size > 0) {
    candidate c = heap_pop(heap, &size);
    /* Stale: a side was merged away or into something else since. */
    if (work[c.left] != c.left_id || work[c.right] != c.right_id ||
        next[c.left] != c.right)
      continue;
    work[c.left] = c.id;
    work[c.right] = -1;
    next[c.left] = next[c.right];
    if (next[c.left] >= 0)
      prev[next[c.left]] = c.left;
    if (prev[c.left] >= 0)
      offer_pair(t, work, prev[c.left], c.left, pair, heap, &size);
    if (next[c.left] >= 0)
      offer_pair(t, work, c.left, next[c.left], pair, heap, &size);
  }
  int64_t count = 0;
  for (int64_t i = 0; i >= 0; i = next[i])
    work[count++] = work[i];
  free(next);
  free(prev);
  free(heap);
  free(pair);
  return count;
}

/* The dummy space, one token per character, then the merges. */
static tfm_status_code encode_characters_and_merge(const tfm_tokenizer *t,
                                                   const char *text,
                                                   size_t length, int32_t *work,
                                                   int64_t *count,
                                                   tfm_status *status) {
  int64_t n = 0;
  if (length > 0) {
    int32_t space = tfm_tokenizer_lookup(t, " ", 1);
    if (space >= 0)
      work[n++] = space;
  }
  for (size_t i = 0; i < length;) {
    /* One UTF-8 character: a lead byte and its continuation bytes. */
    size_t size = 1;
    while (i + size < length && size < 4 &&
           ((unsigned char)text[i + size] & 0xC0) == 0x80)
      ++size;
    int32_t id = tfm_tokenizer_lookup(t, text + i, (uint32_t)size);
    if (id >= 0) {
      work[n++] = id;
    } else {
      for (size_t b = 0; b < size; ++b) {
        int32_t byte_id = t->byte_tokens[(unsigned char)text[i + b]];
        if (byte_id < 0)
          return tfm_fail(status, TFM_ERROR_TOKENIZER,
                          "byte 0x%02X at offset %zu of the text has no "
                          "token (the vocabulary lacks byte fallback)",
                          (unsigned char)text[i + b], i + b);
        work[n++] = byte_id;
      }
    }
    i += size;
  }
  int64_t merged = merge_best_pairs(t, work, n, status);
  if (merged < 0)
    return status->code;
  *count = merged;
  return tfm_ok(status);
}

tfm_status_code tfm_score_bpe_encode(const tfm_tokenizer *t, const char *text,
                                     size_t length, int32_t *work,
                                     int64_t *count, tfm_status *status) {
  char *normalized = NULL;
  if (t->score_bpe_flags & TFM_SCORE_BPE_REMOVE_EXTRA_WHITESPACES) {
    normalized = malloc(length + 1);
    if (!normalized)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    length = remove_extra_spaces(text, length, normalized);
    text = normalized;
  }
  tfm_status_code code =
      encode_characters_and_merge(t, text, length, work, count, status);
  free(normalized);
  return code;
}
