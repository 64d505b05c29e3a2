/* grammar_internal.h - a GBNF grammar as rules of elements, the stacks that
 * track where in it a text can be, and the token mask over them.
 *
 * A grammar is rules; a rule is alternatives; an alternative is a run of
 * elements ending in an END element: a character set (ranges of code
 * points, perhaps negated) or a reference to a rule. Repetitions and groups
 * become rules of their own when parsed (x* is r ::= x r | <empty>), as
 * llama.cpp's parser makes them.
 *
 * Where a text can be is a set of stacks: each stack lists element
 * positions, its top the character set the next code point must match,
 * the entries below it where to go on once the rule above returns. An empty
 * stack means the text may end there. */
#ifndef TFM_RUNTIME_GRAMMAR_GRAMMAR_INTERNAL_H
#define TFM_RUNTIME_GRAMMAR_GRAMMAR_INTERNAL_H

#include "tfm/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

enum { TFM_GRAMMAR_END = 0, TFM_GRAMMAR_CHARS = 1, TFM_GRAMMAR_RULE = 2 };

typedef struct {
  uint8_t kind;    /* TFM_GRAMMAR_* */
  uint8_t negated; /* CHARS: matches what its ranges do not */
  uint32_t first;  /* CHARS: its first range; RULE: the rule */
  uint32_t count;  /* CHARS: its ranges */
} tfm_grammar_element;

typedef struct {
  uint32_t low, high; /* code points, inclusive */
} tfm_grammar_range;

typedef struct {
  uint32_t first_alternative, alternative_count;
} tfm_grammar_rule;

/* The parsed grammar. alternatives[] holds each alternative's first
 * element's index; rules[] each rule's run of alternatives. */
typedef struct {
  tfm_grammar_element *elements;
  size_t element_count, element_capacity;
  tfm_grammar_range *ranges;
  size_t range_count, range_capacity;
  uint32_t *alternatives;
  size_t alternative_count, alternative_capacity;
  tfm_grammar_rule *rules;
  char **rule_names; /* NULL for the rules the parser made */
  size_t rule_count, rule_capacity;
  uint32_t root;
} tfm_grammar_rules;

/* Parses GBNF text (llama.cpp's format) into `rules`; on failure writes
 * "line L, column C: what" to `error` and returns 0. Checks that every
 * rule referred to is defined, that `root` is, and that no rule can reach
 * itself without reading a character (left recursion, which no stack could
 * follow). */
int tfm_grammar_parse(const char *text, tfm_grammar_rules *rules,
                      char *error, size_t error_size);
void tfm_grammar_rules_free(tfm_grammar_rules *rules);

/* A set of stacks: `data` holds them one after another, each as its
 * length then its positions. */
typedef struct {
  uint32_t *data;
  size_t size, capacity;
  size_t count; /* stacks */
} tfm_grammar_stacks;

/* The deepest stack followed (a grammar nested deeper, as JSON arrays in
 * arrays can be, refuses the text that needs it), and the scratch room
 * the functions below take: that many positions and two more. */
enum { TFM_GRAMMAR_MAX_DEPTH = 2048,
       TFM_GRAMMAR_SCRATCH = TFM_GRAMMAR_MAX_DEPTH + 2 };
/* The most stacks one character may leave: a grammar that reads a text in
 * more ways at once (alternatives that match the same text, nested in
 * repetitions and recursion, grow them exponentially) is refused as it
 * gets there, rather than followed for minutes a character. So is an
 * alternation of more strings than that (a JSON Schema enum), which
 * starts with a stack each. Twice as many made the fuzzer's smoke run
 * (test/fuzz/smoke-runs) 13 times slower. */
enum { TFM_GRAMMAR_MAX_STACKS = 1 << 13 };
/* Nor may the stacks hold more than this many positions together: a few
 * thousand stacks hundreds deep (a rule recursing inside a repetition
 * that may match nothing, nested at every character) cost seconds a
 * character under the fuzzer's sanitizers (found by fuzz-grammar), where
 * a JSON Schema's stacks hold a few thousand. */
enum { TFM_GRAMMAR_MAX_STACK_WORDS = 1 << 17 };

/* How following a grammar a step went. */
typedef enum {
  TFM_GRAMMAR_DONE = 0,
  TFM_GRAMMAR_NO_MEMORY,
  TFM_GRAMMAR_TOO_AMBIGUOUS,  /* more than TFM_GRAMMAR_MAX_STACKS stacks,
                                 or TFM_GRAMMAR_MAX_STACK_WORDS in them */
  TFM_GRAMMAR_MASK_TOO_COSTLY /* more than a mask's steps */
} tfm_grammar_step;

/* The stacks one token mask may step, summed over the nodes of the
 * vocabulary's trie it walks: 2^26, some 30 times what a JSON string's
 * mask over a 152k-token vocabulary takes (every token allowed, a dozen
 * stacks), and a few seconds of a hostile grammar's. */
#define TFM_GRAMMAR_MASK_STEPS (UINT64_C(1) << 26)
/* Another bound for `grammar`'s masks (the tests' small vocabularies). */
void tfm_grammar_set_mask_steps(tfm_grammar *grammar, uint64_t steps);

void tfm_grammar_stacks_free(tfm_grammar_stacks *stacks);
void tfm_grammar_stacks_clear(tfm_grammar_stacks *stacks);
/* The stacks where a text starts: root's alternatives, expanded. */
tfm_grammar_step tfm_grammar_start(const tfm_grammar_rules *rules,
                                   tfm_grammar_stacks *out, uint32_t *scratch);
/* The stacks after `code_point` from `in` (none where nothing matches it),
 * sorted and without repeats. */
tfm_grammar_step tfm_grammar_accept_char(const tfm_grammar_rules *rules,
                                         const tfm_grammar_stacks *in,
                                         uint32_t code_point,
                                         tfm_grammar_stacks *out,
                                         uint32_t *scratch);
/* A step as a status: TFM_OK when done, TFM_ERROR_OUT_OF_MEMORY "out of
 * memory", or TFM_ERROR_INVALID_ARGUMENT saying, after `where` ("" or
 * "token 5: "), how the grammar is too ambiguous to follow. */
tfm_status_code tfm_grammar_step_status(tfm_grammar_step step,
                                        const char *where, tfm_status *status);
/* FNV-1a over 32-bit words: a stack's (a closure's stacks expanded) and a
 * set of stacks' (the token mask's cache). */
uint64_t tfm_grammar_hash_words(const uint32_t *words, size_t n);
/* Whether some stack's character set admits a code point in
 * [low, high]: a character begun in a token and finished by the next. */
int tfm_grammar_admits_range(const tfm_grammar_rules *rules,
                             const tfm_grammar_stacks *stacks, uint32_t low,
                             uint32_t high);
/* Whether some stack is empty: the text may end here. */
int tfm_grammar_may_end(const tfm_grammar_stacks *stacks);

#endif /* TFM_RUNTIME_GRAMMAR_GRAMMAR_INTERNAL_H */
