/*===- tokenizer_merges.c - BPE's merge loop, O(n log n) ----------------===//
 *
 * Both BPE encoders merge the best adjacent pair of tokens until no pair
 * merges: SentencePiece's by the merged piece's score, GPT-2's by the
 * merge's rank. Rescanning every pair after each merge (as llama2.c and
 * GPT-2's encoder.py do) is O(n^2) lookups: minutes for a long prompt or
 * a long run of letters. Here the candidate pairs wait in a heap and the
 * tokens form a linked list; a popped pair whose tokens changed since it
 * was found is stale and skipped. Ties go to the leftmost pair, which is
 * what both rescans pick (GPT-2's merges every occurrence of the best pair
 * left to right, the same tokens in the same order).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdlib.h>

/* A candidate merge: the pair of tokens starting at `left` and `right`
 * (indices into the token arrays), as they were when it was found. */
typedef struct tfm_merge_candidate {
  double priority;
  int32_t left_id, right_id, id;
  int64_t left, right;
} candidate;

/* Heap order: the highest priority first, then the leftmost pair. Tokens
 * keep their first symbol's index, so index order is text order. */
static int before(const candidate *a, const candidate *b) {
  return a->priority > b->priority ||
         (a->priority == b->priority && a->left < b->left);
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

/* Pushes the merge of tokens `left` and `right` when there is one. */
static void offer_pair(const tfm_tokenizer *t, const int32_t *ids,
                       int64_t left, int64_t right, tfm_pair_merge find,
                       char *scratch, candidate *heap, int64_t *size) {
  double priority;
  int32_t merged;
  if (find(t, ids[left], ids[right], scratch, &priority, &merged))
    heap_push(heap, size,
              (candidate){priority, ids[left], ids[right], merged, left,
                          right});
}

int tfm_merge_workspace_reserve(tfm_merge_workspace *w,
                                const tfm_tokenizer *t, int64_t n) {
  if (!w->scratch && !(w->scratch = malloc(2 * (size_t)t->max_length + 1)))
    return 0;
  if (n <= w->capacity)
    return 1;
  int64_t capacity = n > 2 * w->capacity ? n : 2 * w->capacity;
  int64_t *next = realloc(w->next, (size_t)capacity * sizeof *next);
  if (next)
    w->next = next;
  int64_t *prev = realloc(w->prev, (size_t)capacity * sizeof *prev);
  if (prev)
    w->prev = prev;
  /* n - 1 pairs at first, at most two new ones per merge (n - 1 merges). */
  candidate *heap = realloc(w->heap, (size_t)(3 * capacity) * sizeof *heap);
  if (heap)
    w->heap = heap;
  if (!next || !prev || !heap)
    return 0;
  w->capacity = capacity;
  return 1;
}

void tfm_merge_workspace_free(tfm_merge_workspace *w) {
  free(w->next);
  free(w->prev);
  free(w->heap);
  free(w->scratch);
  *w = (tfm_merge_workspace){0};
}

int64_t tfm_merge_best_pairs(const tfm_tokenizer *t, tfm_merge_workspace *w,
                             int32_t *work, int64_t n, tfm_pair_merge find) {
  if (n < 2)
    return n;
  int64_t *next = w->next, *prev = w->prev;
  candidate *heap = w->heap;
  int64_t size = 0;
  for (int64_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  for (int64_t i = 0; i + 1 < n; ++i)
    offer_pair(t, work, i, i + 1, find, w->scratch, heap, &size);
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
      offer_pair(t, work, prev[c.left], c.left, find, w->scratch, heap,
                 &size);
    if (next[c.left] >= 0)
      offer_pair(t, work, c.left, next[c.left], find, w->scratch, heap,
                 &size);
  }
  int64_t count = 0;
  for (int64_t i = 0; i >= 0; i = next[i])
    work[count++] = work[i];
  return count;
}
