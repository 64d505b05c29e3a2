/*===- special_tokens.c - special tokens found in text by a byte trie ----===//
 *
 * See special_tokens.h.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/special_tokens.h"

#include <stdlib.h>

/* The child of `node` for `byte`, or 0. */
static uint32_t child(const tfm_special_trie *trie, uint32_t node,
                      uint8_t byte) {
  for (uint32_t c = trie->nodes[node].first_child; c;
       c = trie->nodes[c].next_sibling)
    if (trie->nodes[c].byte == byte)
      return c;
  return 0;
}

int tfm_special_trie_build(tfm_special_trie *trie, uint32_t count,
                           const char *const *spellings,
                           const uint32_t *lengths) {
  trie->nodes = NULL;
  trie->count = 0;
  /* One node a byte at most, and the root. */
  size_t capacity = 1;
  for (uint32_t k = 0; k < count; ++k)
    capacity += lengths[k];
  trie->nodes = calloc(capacity, sizeof *trie->nodes);
  if (!trie->nodes)
    return 0;
  trie->nodes[0].token = -1;
  trie->count = 1;
  for (uint32_t k = 0; k < count; ++k) {
    if (lengths[k] == 0)
      continue;
    uint32_t node = 0;
    for (uint32_t i = 0; i < lengths[k]; ++i) {
      uint8_t byte = (uint8_t)spellings[k][i];
      uint32_t next = child(trie, node, byte);
      if (!next) {
        next = trie->count++;
        trie->nodes[next] = (tfm_special_node){0, trie->nodes[node].first_child,
                                               -1, byte};
        trie->nodes[node].first_child = next;
      }
      node = next;
    }
    if (trie->nodes[node].token < 0)
      trie->nodes[node].token = (int32_t)k;
  }
  return 1;
}

int64_t tfm_special_trie_longest(const tfm_special_trie *trie,
                                 const char *text, size_t length) {
  int64_t found = -1;
  uint32_t node = 0;
  for (size_t i = 0; i < length && trie->count > 1; ++i) {
    node = child(trie, node, (uint8_t)text[i]);
    if (!node)
      break;
    if (trie->nodes[node].token >= 0)
      found = trie->nodes[node].token;
  }
  return found;
}

void tfm_special_trie_free(tfm_special_trie *trie) {
  free(trie->nodes);
  trie->nodes = NULL;
  trie->count = 0;
}
