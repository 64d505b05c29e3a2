/*===- vocabulary_trie.c - every token's bytes, and a trie of them -------===//
 *
 * Built once per model and shared by its grammars (vocabulary_trie.h): the
 * stop tokens, the tokens that are never text (special, BOS, empty), and
 * the text ones' bytes in a trie whose children are sorted by byte.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/grammar/vocabulary_trie.h"

#include "runtime/core/status.h"

#include <stdlib.h>
#include <string.h>

static uint32_t add_node(tfm_grammar_vocabulary *v, uint8_t byte) {
  if (v->node_count == v->node_capacity) {
    size_t next = v->node_capacity ? v->node_capacity * 2 : 1024;
    tfm_trie_node *grown = realloc(v->nodes, next * sizeof *grown);
    if (!grown)
      return 0;
    v->nodes = grown;
    v->node_capacity = next;
  }
  tfm_trie_node node = {0, 0, -1, byte};
  v->nodes[v->node_count] = node;
  return (uint32_t)v->node_count++;
}

/* Puts token `id` (its bytes) in the trie; 0 on allocation failure. */
static int insert_token(tfm_grammar_vocabulary *v, int32_t id) {
  uint32_t node = 0;
  for (uint32_t i = v->piece_offsets[id]; i < v->piece_offsets[id + 1]; ++i) {
    uint8_t byte = v->piece_bytes[i];
    uint32_t child = v->nodes[node].first_child, previous = 0;
    while (child && v->nodes[child].byte < byte) {
      previous = child;
      child = v->nodes[child].next_sibling;
    }
    if (!child || v->nodes[child].byte != byte) {
      uint32_t made = add_node(v, byte);
      if (!made)
        return 0;
      v->nodes[made].next_sibling = child;
      if (previous)
        v->nodes[previous].next_sibling = made;
      else
        v->nodes[node].first_child = made;
      child = made;
    }
    node = child;
  }
  v->token_next[id] = v->nodes[node].first_token;
  v->nodes[node].first_token = id;
  return 1;
}

static void destroy(tfm_grammar_vocabulary *v) {
  free(v->kind);
  free(v->piece_offsets);
  free(v->piece_bytes);
  free(v->token_next);
  free(v->nodes);
  free(v);
}

void tfm_grammar_vocabulary_release(tfm_grammar_vocabulary *v) {
  if (v && __atomic_sub_fetch(&v->references, 1, __ATOMIC_ACQ_REL) == 0)
    destroy(v);
}

/* The tokenizer's release: its reference. */
static void release_attached(tfm_tokenizer_derived *derived) {
  tfm_grammar_vocabulary_release((tfm_grammar_vocabulary *)derived);
}

/* Each token's bytes and kind, and the trie of the text ones. */
static tfm_status_code read_vocabulary(tfm_grammar_vocabulary *v,
                                       const tfm_tokenizer *tokenizer,
                                       const tfm_model_desc *desc,
                                       tfm_status *status) {
  int64_t vocab = v->vocab;
  size_t total = 0, capacity = 1 << 16;
  v->kind = calloc((size_t)vocab, 1);
  v->piece_offsets = malloc((size_t)(vocab + 1) * sizeof *v->piece_offsets);
  v->token_next = malloc((size_t)vocab * sizeof *v->token_next);
  v->piece_bytes = malloc(capacity);
  if (!v->kind || !v->piece_offsets || !v->token_next || !v->piece_bytes)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int64_t id = 0; id < vocab; ++id) {
    v->piece_offsets[id] = (uint32_t)total;
    v->token_next[id] = -1;
    int32_t token = (int32_t)id;
    if (tfm_ends_generation(desc, token)) {
      v->kind[id] = TFM_TOKEN_STOP;
      continue;
    }
    size_t size = 0;
    const char *piece =
        token == desc->bos_token || tfm_tokenizer_is_special(tokenizer, token)
            ? NULL
            : tfm_tokenizer_decode(tokenizer, -1, token, -1, &size);
    if (!piece || size == 0 || size > UINT32_MAX - total) {
      v->kind[id] = TFM_TOKEN_NEVER;
      continue;
    }
    if (total + size > capacity) {
      while (total + size > capacity)
        capacity *= 2;
      unsigned char *grown = realloc(v->piece_bytes, capacity);
      if (!grown)
        return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
      v->piece_bytes = grown;
    }
    memcpy(v->piece_bytes + total, piece, size);
    total += size;
    if (size > v->longest_piece)
      v->longest_piece = size;
  }
  v->piece_offsets[vocab] = (uint32_t)total;
  (void)add_node(v, 0); /* the root, node 0 */
  if (v->node_count != 1)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int64_t id = 0; id < vocab; ++id)
    if (v->kind[id] == TFM_TOKEN_TEXT && !insert_token(v, (int32_t)id))
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  return TFM_OK;
}

tfm_status_code tfm_grammar_vocabulary_get(const tfm_tokenizer *tokenizer,
                                           const tfm_model_desc *desc,
                                           tfm_grammar_vocabulary **out,
                                           tfm_status *status) {
  tfm_grammar_vocabulary *kept =
      (tfm_grammar_vocabulary *)tfm_tokenizer_derived_get(tokenizer);
  if (kept && kept->desc == desc && kept->vocab == desc->vocab_size) {
    __atomic_add_fetch(&kept->references, 1, __ATOMIC_ACQ_REL);
    *out = kept;
    return tfm_ok(status);
  }
  tfm_grammar_vocabulary *v = calloc(1, sizeof *v);
  if (!v)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  v->base.release = release_attached;
  v->references = 1;
  v->desc = desc;
  v->vocab = desc->vocab_size;
  tfm_status_code code = read_vocabulary(v, tokenizer, desc, status);
  if (code != TFM_OK) {
    destroy(v);
    return code;
  }
  if (!kept) {
    /* The tokenizer's reference, and the caller's: attached unless
     * another thread attached one first (then this one stays the
     * caller's own). */
    v->references = 2;
    if (tfm_tokenizer_derived_attach(tokenizer, &v->base) != &v->base)
      v->references = 1;
  }
  *out = v;
  return tfm_ok(status);
}
