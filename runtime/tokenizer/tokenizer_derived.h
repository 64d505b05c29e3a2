/* tokenizer_derived.h - what another part of the runtime derives from a
 * tokenizer's vocabulary once and keeps with it.
 *
 * A grammar's token mask walks a byte trie of the whole vocabulary; built
 * for each grammar, it cost tfm-serve about 50 ms of every constrained
 * request's first token on a 152k vocabulary. The tokenizer keeps one
 * derived object instead, attached on first use (atomically: requests
 * come on several threads) and released with the tokenizer. The tokenizer
 * knows nothing of what it is: the object's `release` frees it. */
#ifndef TFM_RUNTIME_TOKENIZER_TOKENIZER_DERIVED_H
#define TFM_RUNTIME_TOKENIZER_TOKENIZER_DERIVED_H

#include "tfm/tfm_runtime.h"

typedef struct tfm_tokenizer_derived tfm_tokenizer_derived;
struct tfm_tokenizer_derived {
  /* Called once, by tfm_tokenizer_free. */
  void (*release)(tfm_tokenizer_derived *derived);
};

/* The object attached to `tokenizer`, or NULL. */
tfm_tokenizer_derived *tfm_tokenizer_derived_get(const tfm_tokenizer *tokenizer);

/* Attaches `derived` unless an object is attached already; returns the one
 * attached (`derived`, or the earlier one: the caller then keeps and frees
 * its own). */
tfm_tokenizer_derived *
tfm_tokenizer_derived_attach(const tfm_tokenizer *tokenizer,
                             tfm_tokenizer_derived *derived);

#endif
