/*===- grammar_stacks.c - where in a grammar a text can be --------------===//
 *
 * The pushdown automaton over parsed rules (grammar_internal.h): a set of
 * stacks of element positions, each expanded until its top is a character
 * set (or it is empty: the text may end). Reading a code point keeps the
 * stacks whose top admits it, moved past it and expanded again. The sets
 * are kept sorted and without repeats, so that equal sets are equal bytes
 * (the token mask caches by them).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/grammar/grammar_internal.h"

#include "runtime/core/status.h"

#include <stdlib.h>
#include <string.h>

enum { kMaxStackDepth = TFM_GRAMMAR_MAX_DEPTH };

void tfm_grammar_stacks_free(tfm_grammar_stacks *stacks) {
  free(stacks->data);
  memset(stacks, 0, sizeof *stacks);
}

void tfm_grammar_stacks_clear(tfm_grammar_stacks *stacks) {
  stacks->size = stacks->count = 0;
}

static int push_stack(tfm_grammar_stacks *out, const uint32_t *positions,
                      size_t n) {
  if (out->size + n + 1 > out->capacity) {
    size_t next = out->capacity ? out->capacity * 2 : 64;
    while (next < out->size + n + 1)
      next *= 2;
    uint32_t *grown = realloc(out->data, next * sizeof *grown);
    if (!grown)
      return 0;
    out->data = grown;
    out->capacity = next;
  }
  out->data[out->size++] = (uint32_t)n;
  if (n)
    memcpy(out->data + out->size, positions, n * sizeof *positions);
  out->size += n;
  ++out->count;
  return 1;
}

/* One closure (the start, or one code point read): where its expansions
 * go, and, once they are many, the stacks already expanded. A grammar
 * whose alternatives match the empty text in several ways reaches the
 * same stack by many paths ((| | "a"){2,5} by 3^5 of them): past
 * kMemoAfter calls each stack is expanded once, so the work grows with
 * the stacks there are rather than the paths to them. Most closures are
 * a few calls and never build the set. */
enum { kMemoAfter = 4096 };

typedef struct {
  const tfm_grammar_rules *rules;
  tfm_grammar_stacks *out;
  size_t calls;
  int too_many; /* past TFM_GRAMMAR_MAX_STACKS */
  /* Open addressing over `seen`'s stacks: slot = offset + 1, 0 empty. */
  size_t *slots;
  size_t slot_count, used;
  tfm_grammar_stacks seen;
} closure;

static void closure_free(closure *c) {
  free(c->slots);
  tfm_grammar_stacks_free(&c->seen);
}

uint64_t tfm_grammar_hash_words(const uint32_t *words, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= words[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* 1 where `stack[0..n)` was expanded before in this closure (else records
 * it), -1 on allocation failure. */
static int seen_before(closure *c, const uint32_t *stack, size_t n) {
  if (c->used >= 4 * (size_t)TFM_GRAMMAR_MAX_STACKS) {
    c->too_many = 1;
    return -1;
  }
  if (2 * (c->used + 1) > c->slot_count) {
    size_t count = c->slot_count ? 2 * c->slot_count : 1024;
    size_t *slots = calloc(count, sizeof *slots);
    if (!slots)
      return -1;
    for (size_t i = 0; i < c->slot_count; ++i) {
      size_t offset = c->slots[i];
      if (!offset--)
        continue;
      size_t at = tfm_grammar_hash_words(c->seen.data + offset + 1,
                                         c->seen.data[offset]) &
                  (count - 1);
      while (slots[at])
        at = (at + 1) & (count - 1);
      slots[at] = offset + 1;
    }
    free(c->slots);
    c->slots = slots;
    c->slot_count = count;
  }
  size_t at = tfm_grammar_hash_words(stack, n) & (c->slot_count - 1);
  for (; c->slots[at]; at = (at + 1) & (c->slot_count - 1)) {
    const uint32_t *kept = c->seen.data + c->slots[at] - 1;
    if (kept[0] == n && memcmp(kept + 1, stack, n * sizeof *stack) == 0)
      return 1;
  }
  size_t offset = c->seen.size;
  if (!push_stack(&c->seen, stack, n))
    return -1;
  c->slots[at] = offset + 1;
  ++c->used;
  return 0;
}

/* A stack the closure reaches: one more of its result. */
static int emit(closure *c, const uint32_t *stack, size_t n) {
  if (c->out->count >= TFM_GRAMMAR_MAX_STACKS ||
      c->out->size + n + 1 > TFM_GRAMMAR_MAX_STACK_WORDS) {
    c->too_many = 1;
    return 0;
  }
  return push_stack(c->out, stack, n);
}

/* Expands `stack[0..n)` into the closure's stacks: a rule reference on
 * top becomes each of its alternatives, an alternative that ends returns
 * to the entry below. `stack` has room for kMaxStackDepth + 1 entries;
 * entries past n are scratch, and stack[0..n) is as it was on return. */
static int expand(closure *c, uint32_t *stack, size_t n) {
  if (++c->calls > kMemoAfter) {
    int seen = seen_before(c, stack, n);
    if (seen)
      return seen > 0;
  }
  if (n == 0)
    return emit(c, stack, 0);
  const tfm_grammar_rules *rules = c->rules;
  uint32_t position = stack[n - 1];
  const tfm_grammar_element *e = &rules->elements[position];
  if (e->kind == TFM_GRAMMAR_CHARS)
    return emit(c, stack, n);
  /* A reference: what follows it replaces it (nothing where it ends its
   * alternative), then each of the rule's alternatives goes on top. */
  size_t below = n - 1;
  if (rules->elements[position + 1].kind != TFM_GRAMMAR_END)
    stack[below++] = position + 1;
  const tfm_grammar_rule *rule = &rules->rules[e->first];
  int ok = 1;
  for (uint32_t a = 0; a < rule->alternative_count && ok; ++a) {
    uint32_t first = rules->alternatives[rule->first_alternative + a];
    size_t depth = below;
    if (rules->elements[first].kind != TFM_GRAMMAR_END) {
      if (depth >= kMaxStackDepth)
        continue;
      stack[depth++] = first;
    }
    ok = expand(c, stack, depth);
  }
  stack[n - 1] = position;
  return ok;
}

static int compare_stacks(const void *a, const void *b) {
  const uint32_t *x = *(const uint32_t *const *)a;
  const uint32_t *y = *(const uint32_t *const *)b;
  uint32_t n = x[0] < y[0] ? x[0] : y[0];
  for (uint32_t i = 1; i <= n; ++i)
    if (x[i] != y[i])
      return x[i] < y[i] ? -1 : 1;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0;
}

/* Sorts the stacks and drops repeats, in place. Most sets are a few short
 * stacks: those are sorted in buffers on the C stack. */
static int normalize(tfm_grammar_stacks *s) {
  if (s->count < 2)
    return 1;
  enum { kSmallCount = 32, kSmallSize = 1024 };
  const uint32_t *small_order[kSmallCount];
  uint32_t small_copy[kSmallSize];
  int small = s->count <= kSmallCount && s->size <= kSmallSize;
  const uint32_t **order =
      small ? small_order : malloc(s->count * sizeof *order);
  uint32_t *copy = small ? small_copy : malloc(s->size * sizeof *copy);
  if (!order || !copy) {
    if (!small) {
      free(order);
      free(copy);
    }
    return 0;
  }
  memcpy(copy, s->data, s->size * sizeof *copy);
  size_t at = 0;
  for (size_t i = 0; i < s->count; ++i) {
    order[i] = copy + at;
    at += copy[at] + 1;
  }
  qsort(order, s->count, sizeof *order, compare_stacks);
  size_t count = 0;
  s->size = 0;
  for (size_t i = 0; i < s->count; ++i) {
    if (i > 0 && compare_stacks(&order[i], &order[i - 1]) == 0)
      continue;
    memcpy(s->data + s->size, order[i], (order[i][0] + 1) * sizeof *copy);
    s->size += order[i][0] + 1;
    ++count;
  }
  s->count = count;
  if (!small) {
    free(order);
    free(copy);
  }
  return 1;
}

/* What a closure ending with `ok` (its expansions, then `normalize`)
 * comes to. */
static tfm_grammar_step closure_end(closure *c, int ok) {
  closure_free(c);
  ok = ok && normalize(c->out);
  return ok            ? TFM_GRAMMAR_DONE
         : c->too_many ? TFM_GRAMMAR_TOO_AMBIGUOUS
                       : TFM_GRAMMAR_NO_MEMORY;
}

tfm_grammar_step tfm_grammar_start(const tfm_grammar_rules *rules,
                                   tfm_grammar_stacks *out, uint32_t *scratch) {
  tfm_grammar_stacks_clear(out);
  closure c = {rules, out, 0, 0, NULL, 0, 0, {0}};
  const tfm_grammar_rule *root = &rules->rules[rules->root];
  int ok = 1;
  for (uint32_t a = 0; a < root->alternative_count && ok; ++a) {
    uint32_t first = rules->alternatives[root->first_alternative + a];
    size_t n = 0;
    if (rules->elements[first].kind != TFM_GRAMMAR_END)
      scratch[n++] = first;
    ok = expand(&c, scratch, n);
  }
  return closure_end(&c, ok);
}

static int chars_admit(const tfm_grammar_rules *rules,
                       const tfm_grammar_element *e, uint32_t c) {
  int in = 0;
  for (uint32_t i = 0; i < e->count && !in; ++i) {
    const tfm_grammar_range *r = &rules->ranges[e->first + i];
    in = c >= r->low && c <= r->high;
  }
  return in != e->negated;
}

tfm_grammar_step tfm_grammar_accept_char(const tfm_grammar_rules *rules,
                                         const tfm_grammar_stacks *in,
                                         uint32_t code_point,
                                         tfm_grammar_stacks *out,
                                         uint32_t *scratch) {
  tfm_grammar_stacks_clear(out);
  closure c = {rules, out, 0, 0, NULL, 0, 0, {0}};
  int ok = 1;
  size_t at = 0;
  for (size_t s = 0; s < in->count && ok; ++s) {
    uint32_t n = in->data[at];
    const uint32_t *stack = in->data + at + 1;
    at += n + 1;
    if (n == 0)
      continue; /* ended: reads nothing more */
    uint32_t position = stack[n - 1];
    if (!chars_admit(rules, &rules->elements[position], code_point))
      continue;
    memcpy(scratch, stack, (n - 1) * sizeof *scratch);
    size_t depth = n - 1;
    if (rules->elements[position + 1].kind != TFM_GRAMMAR_END)
      scratch[depth++] = position + 1;
    ok = expand(&c, scratch, depth);
  }
  return closure_end(&c, ok);
}

/* Whether `e` admits some code point in [low, high]. */
static int chars_admit_range(const tfm_grammar_rules *rules,
                             const tfm_grammar_element *e, uint32_t low,
                             uint32_t high) {
  if (!e->negated) {
    for (uint32_t i = 0; i < e->count; ++i) {
      const tfm_grammar_range *r = &rules->ranges[e->first + i];
      if (r->low <= high && r->high >= low)
        return 1;
    }
    return 0;
  }
  /* Negated: some point of [low, high] outside every range. */
  uint32_t c = low;
  for (;;) {
    int covered = 0;
    for (uint32_t i = 0; i < e->count; ++i) {
      const tfm_grammar_range *r = &rules->ranges[e->first + i];
      if (c >= r->low && c <= r->high) {
        if (r->high >= high)
          return 0;
        c = r->high + 1;
        covered = 1;
        break;
      }
    }
    if (!covered)
      return 1;
  }
}

int tfm_grammar_admits_range(const tfm_grammar_rules *rules,
                             const tfm_grammar_stacks *stacks, uint32_t low,
                             uint32_t high) {
  size_t at = 0;
  for (size_t s = 0; s < stacks->count; ++s) {
    uint32_t n = stacks->data[at];
    if (n > 0 && chars_admit_range(rules,
                                   &rules->elements[stacks->data[at + n]],
                                   low, high))
      return 1;
    at += n + 1;
  }
  return 0;
}

int tfm_grammar_may_end(const tfm_grammar_stacks *stacks) {
  size_t at = 0;
  for (size_t s = 0; s < stacks->count; ++s) {
    if (stacks->data[at] == 0)
      return 1;
    at += stacks->data[at] + 1;
  }
  return 0;
}

tfm_status_code tfm_grammar_step_status(tfm_grammar_step step,
                                        const char *where, tfm_status *status) {
  switch (step) {
  case TFM_GRAMMAR_DONE:
    return tfm_ok(status);
  case TFM_GRAMMAR_NO_MEMORY:
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  case TFM_GRAMMAR_MASK_TOO_COSTLY:
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%sthe grammar's token mask steps its stacks more than "
                    "2^26 times over the vocabulary (thousands of ways to "
                    "read the text, kept by every byte): too ambiguous to "
                    "follow",
                    where);
  case TFM_GRAMMAR_TOO_AMBIGUOUS:
    break;
  }
  _Static_assert(TFM_GRAMMAR_MAX_STACKS == 8192 &&
                     TFM_GRAMMAR_MAX_STACK_WORDS == 131072,
                 "the message says 8192 and 131072");
  return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                  "%sthe grammar reads the text in more than 8192 ways at "
                  "once, or in ways holding more than 131072 positions "
                  "together (alternatives that match the same text, "
                  "repeated or nested): too ambiguous to follow",
                  where);
}
