/*===- special_tokens.h - special tokens found in text by a byte trie --*- C -*-===//
 *
 * A tokenizer keeps its special tokens ("<|im_start|>", "[MASK]") whole in
 * the text it encodes: at every byte it looks for the longest one that
 * starts there. A byte trie of their spellings makes that one walk of at
 * most the longest spelling, where comparing every token at every byte
 * cost O(text x tokens) (a tokenizer.json of 10 000 added tokens took 3 s
 * an input under ASan: fuzz-tokenizer-files).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TOKENIZER_SPECIAL_TOKENS_H
#define TFM_RUNTIME_TOKENIZER_SPECIAL_TOKENS_H

#include <stddef.h>
#include <stdint.h>

/* Node 0 is the root; children are lists through next_sibling. */
typedef struct {
  uint32_t first_child, next_sibling; /* 0: none */
  int32_t token;                      /* the spelling ending here, or -1 */
  uint8_t byte;
} tfm_special_node;

typedef struct {
  tfm_special_node *nodes;
  uint32_t count;
} tfm_special_trie;

/* The trie of `count` spellings (spellings[k], lengths[k] bytes; empty
 * ones are never found); a spelling given twice keeps its first index.
 * Returns 0 when out of memory (the trie is then empty but freeable). */
int tfm_special_trie_build(tfm_special_trie *trie, uint32_t count,
                           const char *const *spellings,
                           const uint32_t *lengths);

/* The index of the longest spelling that `text` (length bytes) starts
 * with, or -1. */
int64_t tfm_special_trie_longest(const tfm_special_trie *trie,
                                 const char *text, size_t length);

void tfm_special_trie_free(tfm_special_trie *trie);

#endif /* TFM_RUNTIME_TOKENIZER_SPECIAL_TOKENS_H */
