/*===- tokenizer_score_bpe.c - llama2.c / SentencePiece BPE -------------===//
 *
 * The encoder of llama2.c, which reproduces SentencePiece BPE: a dummy
 * leading space, one token per UTF-8 character (bytes as "<0xAB>" tokens
 * when the character is not in the vocabulary), then repeatedly the adjacent
 * pair whose merge has the highest score is merged (tokenizer_merges.c).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/tokenizer_internal.h"

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

/* Score BPE's merge of `left` and `right`: the piece they spell together,
 * by its score (llama2.c's scan starts from a best score of -1e10: pairs
 * scoring no more never merge). */
static int score_pair_merge(const tfm_tokenizer *t, int32_t left,
                            int32_t right, char *scratch, double *priority,
                            int32_t *merged) {
  uint32_t a = t->lengths[left], b = t->lengths[right];
  memcpy(scratch, t->pieces[left], a);
  memcpy(scratch + a, t->pieces[right], b);
  int32_t id = tfm_tokenizer_lookup(t, scratch, a + b);
  if (id < 0 || !(t->scores[id] > -1e10f))
    return 0;
  *priority = t->scores[id];
  *merged = id;
  return 1;
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
  tfm_merge_workspace workspace = {0};
  if (!tfm_merge_workspace_reserve(&workspace, t, n)) {
    tfm_merge_workspace_free(&workspace);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  *count = tfm_merge_best_pairs(t, &workspace, work, n, score_pair_merge);
  tfm_merge_workspace_free(&workspace);
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
