/* vocabulary_trie.h - a model's vocabulary as the token mask reads it:
 * every token's bytes and kind, and a byte trie of the text tokens.
 *
 * It depends on the tokenizer and on the model's description (which tokens
 * end generation, which is BOS) only, so one serves every grammar of a
 * model: the first grammar builds it and attaches it to the tokenizer
 * (tokenizer_derived.h), later ones take a reference. */
#ifndef TFM_RUNTIME_GRAMMAR_VOCABULARY_TRIE_H
#define TFM_RUNTIME_GRAMMAR_VOCABULARY_TRIE_H

#include "runtime/tokenizer/tokenizer_derived.h"
#include "tfm/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

enum { TFM_TOKEN_TEXT = 0, TFM_TOKEN_STOP = 1, TFM_TOKEN_NEVER = 2 };

typedef struct {
  uint32_t first_child, next_sibling; /* 0: none (0 is the root) */
  int32_t first_token;                /* tokens spelled by the path; -1 */
  uint8_t byte;
} tfm_trie_node;

typedef struct {
  tfm_tokenizer_derived base; /* first: the tokenizer releases it */
  int references;             /* atomic: the tokenizer's and grammars' */
  const tfm_model_desc *desc; /* the description it was read with */
  int64_t vocab;
  unsigned char *kind;     /* [vocab]: TFM_TOKEN_* */
  uint32_t *piece_offsets; /* [vocab + 1] into piece_bytes */
  unsigned char *piece_bytes;
  int32_t *token_next; /* [vocab]: the next token of the same bytes */
  tfm_trie_node *nodes;
  size_t node_count, node_capacity, longest_piece;
} tfm_grammar_vocabulary;

/* A reference to the vocabulary of (`tokenizer`, `desc`): the one the
 * tokenizer keeps, built on first use; or, for a description other than
 * the one it was built with, one of the caller's own. Release it with
 * tfm_grammar_vocabulary_release. */
tfm_status_code tfm_grammar_vocabulary_get(const tfm_tokenizer *tokenizer,
                                           const tfm_model_desc *desc,
                                           tfm_grammar_vocabulary **out,
                                           tfm_status *status);
void tfm_grammar_vocabulary_release(tfm_grammar_vocabulary *vocabulary);

#endif
