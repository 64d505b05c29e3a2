/*===- token_mask.c - which tokens a grammar allows next ----------------===//
 *
 * tfm_grammar: the parsed rules, every token's bytes and a byte trie of
 * them. The tokens a grammar allows next are found by walking the trie
 * with the stacks (grammar_stacks.c), a byte at a time: a subtree whose
 * prefix no stack admits is skipped whole, so the walk costs what the
 * grammar lets through, not the vocabulary times a parse. Tokens may split
 * a UTF-8 character; the part of one a prefix holds is kept and checked
 * against the code points it could still become. Each mask is cached by
 * the state it was computed from (the stacks, sorted, and that part of a
 * character): a JSON string's body, a number's digits or the white space
 * between values recur step after step.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/grammar/grammar_internal.h"
#include "runtime/grammar/vocabulary_trie.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kCacheEntries = 64 };

/* A character begun and not yet ended: `value` holds its bits so far,
 * `remaining` its bytes to come, `length` all of its bytes. */
typedef struct {
  uint32_t value;
  uint8_t remaining, length;
} utf8_part;


typedef struct {
  uint64_t hash;
  uint32_t *key; /* utf8_part's three fields, then the stacks' data */
  size_t key_size;
  uint64_t *bits; /* the allowed text tokens */
} cache_entry;

struct tfm_grammar {
  tfm_grammar_rules rules;
  tfm_grammar_stacks start;
  /* The vocabulary's bytes and trie: the tokenizer's, shared by every
   * grammar of the model (vocabulary_trie.c). */
  tfm_grammar_vocabulary *v;
  size_t mask_words;
  cache_entry cache[kCacheEntries];
  size_t cache_next;
  /* The walk's scratch: stacks for each depth, and expansion room. */
  tfm_grammar_stacks *levels;
  uint32_t *scratch;
  /* Why the last step that failed did (tfm_grammar_matcher_failure). */
  tfm_grammar_step failure;
  /* Stacks a mask's walk may still step (each trie node steps every stack
   * it reached), and how many each walk starts with. */
  uint64_t walk_left, walk_budget;
};

struct tfm_grammar_matcher {
  tfm_grammar *grammar;
  tfm_grammar_stacks stacks;
  utf8_part part;
  int ended; /* a stop token was accepted */
};

void tfm_grammar_free(tfm_grammar *g) {
  if (!g)
    return;
  tfm_grammar_rules_free(&g->rules);
  tfm_grammar_stacks_free(&g->start);
  for (size_t i = 0; i < kCacheEntries; ++i) {
    free(g->cache[i].key);
    free(g->cache[i].bits);
  }
  if (g->levels)
    for (size_t i = 0; i <= g->v->longest_piece; ++i)
      tfm_grammar_stacks_free(&g->levels[i]);
  free(g->levels);
  free(g->scratch);
  tfm_grammar_vocabulary_release(g->v);
  free(g);
}

tfm_status_code tfm_grammar_new(const char *gbnf,
                                const tfm_tokenizer *tokenizer,
                                const tfm_model_desc *desc,
                                tfm_grammar **out, tfm_status *status) {
  if (!gbnf || !tokenizer || !desc || !out || desc->vocab_size <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_grammar_new: NULL argument or empty vocabulary");
  tfm_grammar *g = calloc(1, sizeof *g);
  if (!g)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  char error[400];
  if (!tfm_grammar_parse(gbnf, &g->rules, error, sizeof error)) {
    tfm_grammar_free(g);
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "grammar: %s", error);
  }
  g->mask_words = (size_t)(desc->vocab_size + 63) / 64;
  g->walk_budget = TFM_GRAMMAR_MASK_STEPS;
  tfm_status_code code =
      tfm_grammar_vocabulary_get(tokenizer, desc, &g->v, status);
  if (code == TFM_OK) {
    g->levels = calloc(g->v->longest_piece + 1, sizeof *g->levels);
    g->scratch = malloc(TFM_GRAMMAR_SCRATCH * sizeof *g->scratch);
    tfm_grammar_step step =
        g->levels && g->scratch
            ? tfm_grammar_start(&g->rules, &g->start, g->scratch)
            : TFM_GRAMMAR_NO_MEMORY;
    code = tfm_grammar_step_status(
        step, "grammar: at the start of the text: ", status);
  }
  if (code != TFM_OK) {
    tfm_grammar_free(g);
    return code;
  }
  *out = g;
  return tfm_ok(status);
}

/* One byte more of the text: the stacks after it in `out` (or the same
 * stacks with the character's part grown, `*moved` 0). Returns 0 where the
 * grammar cannot take the byte, -1 on allocation failure. */
static int step_byte(tfm_grammar *g, const tfm_grammar_stacks *in,
                     utf8_part *part, uint8_t byte, tfm_grammar_stacks *out,
                     int *moved) {
  *moved = 0;
  uint32_t code_point;
  if (part->remaining == 0) {
    if (byte < 0x80) {
      code_point = byte;
    } else {
      int length = byte >= 0xC2 && byte <= 0xDF   ? 2
                   : byte >= 0xE0 && byte <= 0xEF ? 3
                   : byte >= 0xF0 && byte <= 0xF4 ? 4
                                                  : 0;
      if (!length)
        return 0; /* a continuation byte, or one no UTF-8 has */
      part->length = (uint8_t)length;
      part->remaining = (uint8_t)(length - 1);
      part->value = byte & (0x7Fu >> length);
      goto partial;
    }
  } else {
    if ((byte & 0xC0) != 0x80)
      return 0;
    part->value = part->value << 6 | (byte & 0x3Fu);
    if (--part->remaining > 0)
      goto partial;
    code_point = part->value;
    uint32_t least = part->length == 3 ? 0x800 : part->length == 4 ? 0x10000
                                                                   : 0x80;
    if (code_point < least || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF))
      return 0; /* overlong, a surrogate, or past Unicode */
  }
  tfm_grammar_step step =
      tfm_grammar_accept_char(&g->rules, in, code_point, out, g->scratch);
  if (step != TFM_GRAMMAR_DONE) {
    g->failure = step;
    return -1;
  }
  *moved = 1;
  return out->count > 0;
partial : {
  /* Some code point the bytes so far can still become must be admitted:
   * one the character's length may encode (not overlong, not past
   * U+10FFFF, not a surrogate: after ED, A0 to BF lead only to those, and
   * would leave a sampler no byte to go on with). */
  unsigned shift = 6u * part->remaining;
  uint32_t low = part->value << shift, high = low | ((1u << shift) - 1);
  uint32_t least = part->length == 4 ? 0x10000 : part->length == 3 ? 0x800
                                                                   : 0x80;
  if (low < least)
    low = least;
  if (high > 0x10FFFF)
    high = 0x10FFFF;
  if (low > high)
    return 0;
  if (low < 0xD800 &&
      tfm_grammar_admits_range(&g->rules, in, low, high < 0xD7FF ? high : 0xD7FF))
    return 1;
  return high > 0xDFFF &&
         tfm_grammar_admits_range(&g->rules, in, low > 0xE000 ? low : 0xE000,
                                  high);
}
}

/* Marks in `bits` the tokens below `node` the state (`stacks`, `part`)
 * admits; `depth` is the bytes read. 0 on failure (g->failure says
 * which). */
static int walk(tfm_grammar *g, uint32_t node, const tfm_grammar_stacks *stacks,
                utf8_part part, size_t depth, uint64_t *bits) {
  for (uint32_t child = g->v->nodes[node].first_child; child;
       child = g->v->nodes[child].next_sibling) {
    /* A hostile grammar (thousands of stacks that every byte keeps) would
     * step them at each of the trie's nodes, for minutes a token. */
    if (g->walk_left < stacks->count + 1) {
      g->failure = TFM_GRAMMAR_MASK_TOO_COSTLY;
      return 0;
    }
    g->walk_left -= stacks->count + 1;
    utf8_part next = part;
    int moved;
    tfm_grammar_stacks *after = &g->levels[depth];
    int admitted =
        step_byte(g, stacks, &next, g->v->nodes[child].byte, after, &moved);
    if (admitted < 0)
      return 0;
    if (!admitted)
      continue;
    for (int32_t t = g->v->nodes[child].first_token; t >= 0; t = g->v->token_next[t])
      bits[t / 64] |= 1ull << (t % 64);
    if (g->v->nodes[child].first_child &&
        !walk(g, child, moved ? after : stacks, next, depth + 1, bits))
      return 0;
  }
  return 1;
}

/* The allowed text tokens in state (`stacks`, `part`): cached, or walked
 * and cached. NULL on allocation failure. */
static const uint64_t *allowed_tokens(tfm_grammar *g,
                                      const tfm_grammar_stacks *stacks,
                                      utf8_part part) {
  g->failure = TFM_GRAMMAR_NO_MEMORY; /* unless the walk says otherwise */
  size_t key_size = stacks->size + 3;
  uint32_t *key = malloc(key_size * sizeof *key);
  if (!key)
    return NULL;
  key[0] = part.value;
  key[1] = part.remaining;
  key[2] = part.length;
  if (stacks->size)
    memcpy(key + 3, stacks->data, stacks->size * sizeof *key);
  uint64_t hash = tfm_grammar_hash_words(key, key_size);
  for (size_t i = 0; i < kCacheEntries; ++i) {
    cache_entry *e = &g->cache[i];
    if (e->bits && e->hash == hash && e->key_size == key_size &&
        memcmp(e->key, key, key_size * sizeof *key) == 0) {
      free(key);
      g->failure = TFM_GRAMMAR_DONE;
      return e->bits;
    }
  }
  cache_entry *e = &g->cache[g->cache_next];
  g->cache_next = (g->cache_next + 1) % kCacheEntries;
  free(e->key);
  if (!e->bits)
    e->bits = malloc(g->mask_words * sizeof *e->bits);
  e->key = key;
  e->key_size = key_size;
  e->hash = hash;
  if (!e->bits) {
    free(key);
    e->key = NULL;
    return NULL;
  }
  memset(e->bits, 0, g->mask_words * sizeof *e->bits);
  g->walk_left = g->walk_budget;
  if (!walk(g, 0, stacks, part, 0, e->bits)) {
    free(e->bits);
    e->bits = NULL;
    return NULL;
  }
  g->failure = TFM_GRAMMAR_DONE;
  return e->bits;
}

tfm_status_code tfm_grammar_matcher_new(tfm_grammar *grammar,
                                        tfm_grammar_matcher **out,
                                        tfm_status *status) {
  if (!grammar || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_grammar_matcher_new: NULL argument");
  tfm_grammar_matcher *m = calloc(1, sizeof *m);
  if (!m)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  m->grammar = grammar;
  const tfm_grammar_stacks *start = &grammar->start;
  m->stacks.data = malloc((start->size ? start->size : 1) * sizeof *start->data);
  if (!m->stacks.data) {
    free(m);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  m->stacks.capacity = start->size ? start->size : 1;
  if (start->size)
    memcpy(m->stacks.data, start->data, start->size * sizeof *start->data);
  m->stacks.size = start->size;
  m->stacks.count = start->count;
  *out = m;
  return tfm_ok(status);
}

void tfm_grammar_matcher_free(tfm_grammar_matcher *m) {
  if (!m)
    return;
  tfm_grammar_stacks_free(&m->stacks);
  free(m);
}

int tfm_grammar_matcher_may_end(const tfm_grammar_matcher *m) {
  return m && (m->ended || (m->part.remaining == 0 &&
                            tfm_grammar_may_end(&m->stacks)));
}

int64_t tfm_grammar_matcher_mask(tfm_grammar_matcher *m, float *logits) {
  if (!m || !logits)
    return -1;
  tfm_grammar *g = m->grammar;
  const uint64_t *bits = m->ended ? NULL : allowed_tokens(g, &m->stacks, m->part);
  if (!m->ended && !bits)
    return -1;
  int may_end = !m->ended && tfm_grammar_matcher_may_end(m);
  int64_t allowed = 0;
  for (int64_t t = 0; t < g->v->vocab; ++t) {
    int ok = g->v->kind[t] == TFM_TOKEN_TEXT   ? bits && (bits[t / 64] >> (t % 64)) & 1
             : g->v->kind[t] == TFM_TOKEN_STOP ? may_end
                                        : 0;
    if (ok)
      ++allowed;
    else
      logits[t] = -INFINITY;
  }
  return allowed;
}

tfm_status_code tfm_grammar_matcher_accept(tfm_grammar_matcher *m,
                                           int32_t token, tfm_status *status) {
  if (!m)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_grammar_matcher_accept: NULL matcher");
  tfm_grammar *g = m->grammar;
  if (token < 0 || token >= g->v->vocab)
    return tfm_fail(status, TFM_ERROR_OUT_OF_RANGE,
                    "token %d is outside the vocabulary of %lld", token,
                    (long long)g->v->vocab);
  if (m->ended)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "token %d after the grammar's end", token);
  if (g->v->kind[token] == TFM_TOKEN_STOP) {
    if (!tfm_grammar_matcher_may_end(m))
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "end-of-generation token %d where the grammar cannot "
                      "end",
                      token);
    m->ended = 1;
    return tfm_ok(status);
  }
  if (g->v->kind[token] == TFM_TOKEN_NEVER)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "token %d is not text (a special or empty token): no "
                    "grammar allows it",
                    token);
  /* The bytes one by one, on copies: a refused token changes nothing. */
  tfm_grammar_stacks current = {0}, next = {0};
  utf8_part part = m->part;
  int ok = 1;
  const tfm_grammar_stacks *at = &m->stacks;
  for (uint32_t i = g->v->piece_offsets[token];
       ok > 0 && i < g->v->piece_offsets[token + 1]; ++i) {
    int moved;
    ok = step_byte(g, at, &part, g->v->piece_bytes[i], &next, &moved);
    if (ok > 0 && moved) {
      tfm_grammar_stacks swap = current;
      current = next;
      next = swap;
      at = &current;
    }
  }
  tfm_grammar_stacks_free(&next);
  if (ok < 0) {
    tfm_grammar_stacks_free(&current);
    char where[32];
    snprintf(where, sizeof where, "token %d: ", token);
    return tfm_grammar_step_status(g->failure, where, status);
  }
  if (!ok) {
    tfm_grammar_stacks_free(&current);
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "token %d is not allowed by the grammar here", token);
  }
  if (at == &current) {
    tfm_grammar_stacks_free(&m->stacks);
    m->stacks = current;
  }
  m->part = part;
  return tfm_ok(status);
}

int32_t tfm_grammar_matcher_accept_greedy(tfm_grammar_matcher *m, float *logits,
                                          int64_t *allowed) {
  if (allowed)
    *allowed = 1;
  if (!m || !logits) {
    if (allowed)
      *allowed = -1;
    return -1;
  }
  int64_t vocab = m->grammar->v->vocab;
  /* The best kGreedyCandidates by logit, best first (ties: the lower id,
   * as tfm_argmax takes it): an insertion into a short sorted list. */
  enum { kGreedyCandidates = 32 };
  int32_t best[kGreedyCandidates];
  int count = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    float value = logits[i];
    if (count == kGreedyCandidates && !(value > logits[best[count - 1]]))
      continue;
    int at = count < kGreedyCandidates ? count++ : count - 1;
    while (at > 0 && value > logits[best[at - 1]]) {
      best[at] = best[at - 1];
      --at;
    }
    best[at] = (int32_t)i;
  }
  /* The first of them the grammar takes is the allowed tokens' argmax. */
  for (int i = 0; i < count; ++i)
    if (tfm_grammar_matcher_accept(m, best[i], NULL) == TFM_OK)
      return best[i];
  int64_t left = tfm_grammar_matcher_mask(m, logits);
  if (allowed)
    *allowed = left;
  if (left <= 0)
    return -1;
  int32_t token = tfm_argmax(logits, vocab);
  if (tfm_grammar_matcher_accept(m, token, NULL) != TFM_OK) {
    if (allowed)
      *allowed = -1;
    return -1;
  }
  return token;
}

void tfm_grammar_set_mask_steps(tfm_grammar *g, uint64_t steps) {
  g->walk_budget = steps;
}

tfm_status_code tfm_grammar_matcher_failure(const tfm_grammar_matcher *m,
                                            tfm_status *status) {
  if (!m)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_grammar_matcher_failure: NULL matcher");
  return tfm_grammar_step_status(m->grammar->failure, "", status);
}
