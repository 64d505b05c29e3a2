/*===- gbnf_parse.c - GBNF text into rules of elements ------------------===//
 *
 * llama.cpp's GBNF (grammars/README.md there): rules `name ::= ...`,
 * alternatives `|`, string literals, character classes `[a-z]`/`[^...]`,
 * `.`, groups, repetitions `* + ? {m} {m,} {m,n}`, `#` comments. Newlines
 * end a rule except inside parentheses and after `|`. A repeated or
 * grouped symbol becomes a rule of its own: x* is r ::= x r | <empty>,
 * x{0,n} nests (x (x ...)?)? so that n optional copies cost no more stacks
 * than one.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/grammar/grammar_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep a hostile grammar's rules and the stacks over them
 * small: repetitions above kMaxRepeat, and grammars of more elements than
 * kMaxElements, are refused. */
enum { kMaxRepeat = 10000, kMaxElements = 1 << 22, kMaxNesting = 256 };

/* A run of elements being built: one alternative. */
typedef struct {
  tfm_grammar_element *items;
  size_t count, capacity;
} element_list;

typedef struct {
  const char *text, *at;
  tfm_grammar_rules *rules;
  unsigned char *defined; /* [rule_capacity] */
  char *error;
  size_t error_size;
  int failed;
  int nesting;
} parser;

static void fail_at(parser *p, const char *where, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_at(parser *p, const char *where, const char *format, ...) {
  if (p->failed)
    return;
  p->failed = 1;
  int line = 1, column = 1;
  for (const char *c = p->text; c < where && *c; ++c) {
    if (*c == '\n') {
      ++line;
      column = 1;
    } else if (((unsigned char)*c & 0xC0) != 0x80) {
      ++column;
    }
  }
  int n = snprintf(p->error, p->error_size, "line %d, column %d: ", line,
                   column);
  if (n < 0 || (size_t)n >= p->error_size)
    return;
  va_list args;
  va_start(args, format);
  vsnprintf(p->error + n, p->error_size - (size_t)n, format, args);
  va_end(args);
}

static int grow(void **data, size_t *capacity, size_t needed, size_t size) {
  if (needed <= *capacity)
    return 1;
  size_t next = *capacity ? *capacity * 2 : 16;
  while (next < needed)
    next *= 2;
  void *grown = realloc(*data, next * size);
  if (!grown)
    return 0;
  *data = grown;
  *capacity = next;
  return 1;
}

static int list_push(parser *p, element_list *list, tfm_grammar_element e) {
  if (!grow((void **)&list->items, &list->capacity, list->count + 1,
            sizeof *list->items)) {
    fail_at(p, p->at, "out of memory");
    return 0;
  }
  list->items[list->count++] = e;
  return 1;
}

static uint32_t add_range(parser *p, uint32_t low, uint32_t high) {
  tfm_grammar_rules *r = p->rules;
  if (!grow((void **)&r->ranges, &r->range_capacity, r->range_count + 1,
            sizeof *r->ranges)) {
    fail_at(p, p->at, "out of memory");
    return 0;
  }
  r->ranges[r->range_count].low = low;
  r->ranges[r->range_count].high = high;
  return (uint32_t)r->range_count++;
}

/* A new rule, named (a name from the text) or not (a group's). */
static int new_rule(parser *p, const char *name, size_t length,
                    uint32_t *out) {
  tfm_grammar_rules *r = p->rules;
  size_t old = r->rule_capacity;
  if (!grow((void **)&r->rules, &r->rule_capacity, r->rule_count + 1,
            sizeof *r->rules)) {
    fail_at(p, p->at, "out of memory");
    return 0;
  }
  if (r->rule_capacity != old) {
    char **names = realloc(r->rule_names, r->rule_capacity * sizeof *names);
    unsigned char *defined = realloc(p->defined, r->rule_capacity);
    if (names)
      r->rule_names = names;
    if (defined)
      p->defined = defined;
    if (!names || !defined) {
      fail_at(p, p->at, "out of memory");
      return 0;
    }
  }
  char *copy = NULL;
  if (name) {
    copy = malloc(length + 1);
    if (!copy) {
      fail_at(p, p->at, "out of memory");
      return 0;
    }
    memcpy(copy, name, length);
    copy[length] = '\0';
  }
  r->rule_names[r->rule_count] = copy;
  r->rules[r->rule_count].first_alternative = 0;
  r->rules[r->rule_count].alternative_count = 0;
  p->defined[r->rule_count] = 0;
  *out = (uint32_t)r->rule_count++;
  return 1;
}

/* The rule named so, made (undefined) on first mention. */
static int rule_named(parser *p, const char *name, size_t length,
                      uint32_t *out) {
  tfm_grammar_rules *r = p->rules;
  for (size_t i = 0; i < r->rule_count; ++i)
    if (r->rule_names[i] && strlen(r->rule_names[i]) == length &&
        memcmp(r->rule_names[i], name, length) == 0) {
      *out = (uint32_t)i;
      return 1;
    }
  return new_rule(p, name, length, out);
}

/* Whether elements x and y read the same: a character class by its
 * ranges (each class has ranges of its own), a reference by its rule. */
static int same_element(const tfm_grammar_rules *r,
                        const tfm_grammar_element *x,
                        const tfm_grammar_element *y) {
  if (x->kind != y->kind || x->negated != y->negated || x->count != y->count)
    return 0;
  if (x->kind != TFM_GRAMMAR_CHARS)
    return x->first == y->first;
  return !x->count || !memcmp(r->ranges + x->first, r->ranges + y->first,
                              x->count * sizeof *r->ranges);
}

static int same_alternative(const tfm_grammar_rules *r, const element_list *a,
                            const element_list *b) {
  if (a->count != b->count)
    return 0;
  for (size_t i = 0; i < a->count; ++i)
    if (!same_element(r, &a->items[i], &b->items[i]))
      return 0;
  return 1;
}

/* A hash of what an alternative reads (same_alternative's equality). */
static uint64_t alternative_hash(const tfm_grammar_rules *r,
                                 const element_list *a) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < a->count; ++i) {
    const tfm_grammar_element *e = &a->items[i];
    uint32_t head[3] = {e->kind | (uint32_t)e->negated << 8, e->count,
                        e->kind == TFM_GRAMMAR_CHARS ? 0 : e->first};
    h = (h ^ tfm_grammar_hash_words(head, 3)) * 1099511628211u;
    if (e->kind == TFM_GRAMMAR_CHARS && e->count)
      h = (h ^ tfm_grammar_hash_words((const uint32_t *)(r->ranges + e->first),
                                      2 * e->count)) *
          1099511628211u;
  }
  return h;
}

/* Drops the alternatives that repeat an earlier one (`a | a`, or the many
 * empty ones of `"x" | | |`): they add no text the rule admits, and each
 * doubled every stack set it reached, so that such a grammar took seconds
 * a character (found by fuzz-grammar). Returns the count kept, in order,
 * at the front of `alts`; the dropped ones' items are freed and the slots
 * past the kept ones emptied. Out of memory: none dropped. */
static size_t drop_repeated(const tfm_grammar_rules *r, element_list *alts,
                            size_t count) {
  size_t slots = 16;
  while (slots < 2 * count)
    slots *= 2;
  size_t *table = malloc(slots * sizeof *table); /* index + 1; 0: empty */
  if (!table)
    return count;
  memset(table, 0, slots * sizeof *table);
  size_t kept = 0;
  for (size_t a = 0; a < count; ++a) {
    size_t slot = (size_t)alternative_hash(r, &alts[a]) & (slots - 1);
    int repeated = 0;
    for (; table[slot]; slot = (slot + 1) & (slots - 1))
      if (same_alternative(r, &alts[table[slot] - 1], &alts[a])) {
        repeated = 1;
        break;
      }
    if (repeated) {
      free(alts[a].items);
      continue;
    }
    alts[kept] = alts[a];
    table[slot] = kept + 1;
    ++kept;
  }
  free(table);
  /* The caller frees all `count`: the slots past the kept ones are moved
   * or freed already. */
  for (size_t a = kept; a < count; ++a)
    alts[a] = (element_list){NULL, 0, 0};
  return kept;
}

/* Gives rule `rule` the alternatives `alts[0..count)`, repeats dropped. */
static int define_rule(parser *p, uint32_t rule, element_list *alts,
                       size_t count) {
  count = drop_repeated(p->rules, alts, count);
  tfm_grammar_rules *r = p->rules;
  size_t elements = r->element_count;
  for (size_t a = 0; a < count; ++a)
    elements += alts[a].count + 1;
  if (elements > kMaxElements) {
    fail_at(p, p->at, "the grammar is too large (more than %d elements)",
            kMaxElements);
    return 0;
  }
  if (!grow((void **)&r->elements, &r->element_capacity, elements,
            sizeof *r->elements) ||
      !grow((void **)&r->alternatives, &r->alternative_capacity,
            r->alternative_count + count, sizeof *r->alternatives)) {
    fail_at(p, p->at, "out of memory");
    return 0;
  }
  r->rules[rule].first_alternative = (uint32_t)r->alternative_count;
  r->rules[rule].alternative_count = (uint32_t)count;
  for (size_t a = 0; a < count; ++a) {
    r->alternatives[r->alternative_count++] = (uint32_t)r->element_count;
    if (alts[a].count)
      memcpy(r->elements + r->element_count, alts[a].items,
             alts[a].count * sizeof *alts[a].items);
    r->element_count += alts[a].count;
    tfm_grammar_element end = {TFM_GRAMMAR_END, 0, 0, 0};
    r->elements[r->element_count++] = end;
  }
  p->defined[rule] = 1;
  return 1;
}

static void free_alternatives(element_list *alts, size_t count) {
  for (size_t a = 0; a < count; ++a)
    free(alts[a].items);
  free(alts);
}

static int is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skips spaces and comments; newlines too where `newlines`. */
static void skip_space(parser *p, int newlines) {
  for (;;) {
    char c = *p->at;
    if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
      ++p->at;
    } else if (c == '#') {
      while (*p->at && *p->at != '\n')
        ++p->at;
    } else {
      return;
    }
  }
}

/* One UTF-8 character of the text, or -1 (error set) if malformed. */
static int64_t read_utf8(parser *p) {
  const unsigned char *s = (const unsigned char *)p->at;
  uint32_t c = s[0];
  int length = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                          : (c & 0xF8) == 0xF0   ? 4
                                                 : 0;
  if (!length || c == 0) {
    fail_at(p, p->at, c ? "malformed UTF-8" : "unexpected end of the grammar");
    return -1;
  }
  uint32_t value = length == 1 ? c : c & (0x7F >> length);
  for (int i = 1; i < length; ++i) {
    if ((s[i] & 0xC0) != 0x80) {
      fail_at(p, p->at, "malformed UTF-8");
      return -1;
    }
    value = value << 6 | (s[i] & 0x3F);
  }
  p->at += length;
  return value;
}

/* A character of a literal or a class, escapes read. */
static int64_t read_char(parser *p) {
  if (*p->at != '\\')
    return read_utf8(p);
  const char *start = p->at++;
  char c = *p->at++;
  int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i, ++p->at) {
      char h = *p->at;
      int v = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (v < 0) {
        fail_at(p, start, "expected %d hexadecimal digits after \\%c", digits,
                c);
        return -1;
      }
      value = value << 4 | (uint32_t)v;
    }
    if (value > 0x10FFFF) {
      fail_at(p, start, "\\%c escape beyond U+10FFFF", c);
      return -1;
    }
    return value;
  }
  switch (c) {
  case 'n': return '\n';
  case 't': return '\t';
  case 'r': return '\r';
  case '\\': case '"': case '[': case ']': case '-': case '^': case '/':
    return (unsigned char)c;
  default:
    fail_at(p, start, "unknown escape '\\%c'", c ? c : ' ');
    return -1;
  }
}

static int parse_alternates(parser *p, uint32_t rule, int nested);

/* Repeats the symbol `seq->items[start..count)` as {low, high} (high < 0:
 * unbounded), in place. */
static int repeat(parser *p, element_list *seq, size_t start, long low,
                  long high) {
  size_t width = seq->count - start;
  /* The copies it makes, before any rule is defined: bounded first. */
  double copies = (double)width * (double)(low + (high < 0 ? 1 : high - low));
  if (copies + (double)p->rules->element_count > kMaxElements) {
    fail_at(p, p->at, "the grammar is too large (more than %d elements "
            "once its repetitions are written out)", kMaxElements);
    return 0;
  }
  element_list symbol = {NULL, 0, 0};
  for (size_t i = 0; i < width; ++i)
    if (!list_push(p, &symbol, seq->items[start + i])) {
      free(symbol.items);
      return 0;
    }
  seq->count = start;
  int ok = 1;
  for (long i = 0; i < low && ok; ++i)
    for (size_t j = 0; j < width && ok; ++j)
      ok = list_push(p, seq, symbol.items[j]);
  if (ok && high != low) {
    /* The optional part: r ::= symbol r | <empty> (unbounded), or the
     * nesting r1 ::= symbol r2 | <empty>, ..., rn ::= symbol | <empty>. */
    long optional = high < 0 ? 1 : high - low;
    uint32_t first = 0;
    for (long k = 0; k < optional && ok; ++k) {
      uint32_t r;
      ok = new_rule(p, NULL, 0, &r); /* consecutive: first + k */
      if (ok && k == 0)
        first = r;
    }
    /* Define them from the innermost out, each referring to the next. */
    for (long k = optional - 1; k >= 0 && ok; --k) {
      uint32_t r = first + (uint32_t)k;
      element_list alts[2] = {{NULL, 0, 0}, {NULL, 0, 0}};
      for (size_t j = 0; j < width && ok; ++j)
        ok = list_push(p, &alts[0], symbol.items[j]);
      uint32_t next = high < 0 ? r : (k + 1 < optional ? r + 1 : UINT32_MAX);
      if (ok && next != UINT32_MAX) {
        tfm_grammar_element ref = {TFM_GRAMMAR_RULE, 0, next, 0};
        ok = list_push(p, &alts[0], ref);
      }
      if (ok)
        ok = define_rule(p, r, alts, 2);
      free(alts[0].items);
    }
    if (ok) {
      tfm_grammar_element ref = {TFM_GRAMMAR_RULE, 0, first, 0};
      ok = list_push(p, seq, ref);
    }
  }
  free(symbol.items);
  return ok;
}

/* A decimal count of a repetition. */
static long read_count(parser *p) {
  if (*p->at < '0' || *p->at > '9') {
    fail_at(p, p->at, "expected a number in the repetition");
    return -1;
  }
  const char *start = p->at;
  long value = 0;
  while (*p->at >= '0' && *p->at <= '9') {
    value = value * 10 + (*p->at++ - '0');
    if (value > kMaxRepeat) {
      fail_at(p, start, "repetition count above %d", kMaxRepeat);
      return -1;
    }
  }
  return value;
}

/* One alternative: symbols up to `|`, `)` or the end of the rule. */
/* "..." at p->at (its opening quote): a character element per character. */
static int parse_string_literal(parser *p, element_list *seq) {
  const char *here = p->at++;
  while (*p->at != '"') {
    if (!*p->at || *p->at == '\n') {
      fail_at(p, here, "unterminated string literal");
      return 0;
    }
    int64_t ch = read_char(p);
    if (ch < 0)
      return 0;
    tfm_grammar_element e = {TFM_GRAMMAR_CHARS, 0,
                             add_range(p, (uint32_t)ch, (uint32_t)ch), 1};
    if (p->failed || !list_push(p, seq, e))
      return 0;
  }
  ++p->at;
  return 1;
}

/* [...] or [^...] at p->at: one element over its ranges. */
static int parse_char_class(parser *p, element_list *seq) {
  const char *here = p->at++;
  tfm_grammar_element e = {TFM_GRAMMAR_CHARS, 0,
                           (uint32_t)p->rules->range_count, 0};
  if (*p->at == '^') {
    e.negated = 1;
    ++p->at;
  }
  while (*p->at != ']') {
    if (!*p->at) {
      fail_at(p, here, "unterminated character class");
      return 0;
    }
    int64_t low = read_char(p);
    if (low < 0)
      return 0;
    int64_t high = low;
    if (p->at[0] == '-' && p->at[1] != ']' && p->at[1]) {
      ++p->at;
      high = read_char(p);
      if (high < 0)
        return 0;
      if (high < low) {
        fail_at(p, here, "character range with its end before its start");
        return 0;
      }
    }
    add_range(p, (uint32_t)low, (uint32_t)high);
    if (p->failed)
      return 0;
    ++e.count;
  }
  ++p->at;
  return list_push(p, seq, e);
}

/* (...) at p->at: its alternates as a rule of their own, referred to. */
static int parse_group(parser *p, element_list *seq) {
  const char *here = p->at++;
  if (++p->nesting > kMaxNesting) {
    fail_at(p, here, "groups nested deeper than %d", kMaxNesting);
    return 0;
  }
  uint32_t group;
  if (!new_rule(p, NULL, 0, &group) || !parse_alternates(p, group, 1))
    return 0;
  --p->nesting;
  skip_space(p, 1);
  if (*p->at != ')') {
    fail_at(p, here, "'(' is not closed");
    return 0;
  }
  ++p->at;
  tfm_grammar_element ref = {TFM_GRAMMAR_RULE, 0, group, 0};
  return list_push(p, seq, ref);
}

/* The bounds of the repetition operator at p->at (*, +, ?, {m}, {m,},
 * {m,n}; -1: no maximum), consumed. */
static int parse_repetition(parser *p, long *low, long *high) {
  const char *here = p->at;
  char c = *p->at++;
  *low = c == '+' ? 1 : 0;
  *high = c == '?' ? 1 : -1;
  if (c != '{')
    return 1;
  skip_space(p, 0);
  *low = read_count(p);
  if (*low < 0)
    return 0;
  skip_space(p, 0);
  *high = *low;
  if (*p->at == ',') {
    ++p->at;
    skip_space(p, 0);
    *high = *p->at == '}' ? -1 : read_count(p);
    if (p->failed)
      return 0;
    if (*high >= 0 && *high < *low) {
      fail_at(p, here,
              "repetition {%ld,%ld} with its maximum below "
              "its minimum",
              *low, *high);
      return 0;
    }
  }
  skip_space(p, 0);
  if (*p->at != '}') {
    fail_at(p, p->at, "expected '}' closing the repetition");
    return 0;
  }
  ++p->at;
  return 1;
}

static int parse_sequence(parser *p, element_list *seq, int nested) {
  size_t last_start = 0;
  int have_symbol = 0;
  for (;;) {
    skip_space(p, nested);
    char c = *p->at;
    const char *here = p->at;
    size_t start = seq->count;
    if (c == '"') {
      if (!parse_string_literal(p, seq))
        return 0;
    } else if (c == '[') {
      if (!parse_char_class(p, seq))
        return 0;
    } else if (c == '.') {
      ++p->at;
      tfm_grammar_element any = {TFM_GRAMMAR_CHARS, 1, 0, 0};
      if (!list_push(p, seq, any))
        return 0;
    } else if (is_name_char(c)) {
      const char *name = p->at;
      while (is_name_char(*p->at))
        ++p->at;
      const char *after = p->at;
      skip_space(p, 0);
      if (p->at[0] == ':' && p->at[1] == ':' && p->at[2] == '=') {
        /* The next rule's head: this alternative ends before it. */
        p->at = name;
        return 1;
      }
      p->at = after;
      uint32_t rule;
      if (!rule_named(p, name, (size_t)(after - name), &rule))
        return 0;
      tfm_grammar_element ref = {TFM_GRAMMAR_RULE, 0, rule, 0};
      if (!list_push(p, seq, ref))
        return 0;
    } else if (c == '(') {
      if (!parse_group(p, seq))
        return 0;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (!have_symbol) {
        fail_at(p, here, "'%c' repeats nothing", c);
        return 0;
      }
      long low, high;
      if (!parse_repetition(p, &low, &high) ||
          !repeat(p, seq, last_start, low, high))
        return 0;
      have_symbol = 0; /* x** is refused, as llama.cpp refuses it */
      continue;
    } else if (c == '<' || c == '!') {
      fail_at(p, here, "token references (<...>, !<...>) are not supported");
      return 0;
    } else {
      return 1; /* '|', ')', a newline or the end: the caller decides */
    }
    /* A symbol: what a repetition after it repeats. */
    last_start = start;
    have_symbol = 1;
  }
}

/* Alternatives of `rule`, up to ')' (nested) or the end of the rule. */
static int parse_alternates(parser *p, uint32_t rule, int nested) {
  element_list *alts = NULL;
  size_t count = 0, capacity = 0;
  int ok = 1;
  for (;;) {
    if (!grow((void **)&alts, &capacity, count + 1, sizeof *alts)) {
      fail_at(p, p->at, "out of memory");
      ok = 0;
      break;
    }
    alts[count].items = NULL;
    alts[count].count = alts[count].capacity = 0;
    ++count;
    if (!parse_sequence(p, &alts[count - 1], nested)) {
      ok = 0;
      break;
    }
    skip_space(p, nested);
    if (*p->at != '|')
      break;
    ++p->at;
    skip_space(p, 1); /* a newline after '|' continues the rule */
  }
  if (ok)
    ok = define_rule(p, rule, alts, count);
  free_alternatives(alts, count);
  return ok;
}

/* Whether a rule can match the empty text, for every rule: a fixpoint. */
static unsigned char *nullable_rules(const tfm_grammar_rules *r) {
  unsigned char *nullable = calloc(r->rule_count ? r->rule_count : 1, 1);
  if (!nullable)
    return NULL;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < r->rule_count; ++i) {
      if (nullable[i])
        continue;
      const tfm_grammar_rule *rule = &r->rules[i];
      for (uint32_t a = 0; a < rule->alternative_count && !nullable[i]; ++a) {
        const tfm_grammar_element *e =
            &r->elements[r->alternatives[rule->first_alternative + a]];
        while (e->kind == TFM_GRAMMAR_RULE && nullable[e->first])
          ++e;
        if (e->kind == TFM_GRAMMAR_END)
          nullable[i] = changed = 1;
      }
    }
  }
  return nullable;
}

/* Depth-first search for a rule that reaches itself before any character
 * (0: white, 1: on the path, 2: done); returns the rule found, or -1. */
static int64_t left_cycle(const tfm_grammar_rules *r,
                          const unsigned char *nullable, unsigned char *mark,
                          uint32_t rule) {
  if (mark[rule] == 1)
    return rule;
  if (mark[rule] == 2)
    return -1;
  mark[rule] = 1;
  const tfm_grammar_rule *g = &r->rules[rule];
  for (uint32_t a = 0; a < g->alternative_count; ++a) {
    const tfm_grammar_element *e =
        &r->elements[r->alternatives[g->first_alternative + a]];
    for (; e->kind == TFM_GRAMMAR_RULE; ++e) {
      int64_t found = left_cycle(r, nullable, mark, e->first);
      if (found >= 0)
        return found;
      if (!nullable[e->first])
        break;
    }
  }
  mark[rule] = 2;
  return -1;
}

/* The name a message gives rule `rule`: its own, or that of the named
 * rule it was made in (the parser makes a group's rules after its rule). */
static const char *rule_label(const tfm_grammar_rules *r, uint32_t rule) {
  for (int64_t i = rule; i >= 0; --i)
    if (r->rule_names[i])
      return r->rule_names[i];
  return "?";
}

int tfm_grammar_parse(const char *text, tfm_grammar_rules *rules, char *error,
                      size_t error_size) {
  memset(rules, 0, sizeof *rules);
  parser p = {text, text, rules, NULL, error, error_size, 0, 0};
  if (error_size)
    error[0] = '\0';
  for (;;) {
    skip_space(&p, 1);
    if (!*p.at)
      break;
    const char *name = p.at;
    while (is_name_char(*p.at))
      ++p.at;
    if (p.at == name) {
      fail_at(&p, p.at, "expected a rule name");
      break;
    }
    size_t length = (size_t)(p.at - name);
    skip_space(&p, 0);
    if (p.at[0] != ':' || p.at[1] != ':' || p.at[2] != '=') {
      fail_at(&p, p.at, "expected '::=' after the rule name");
      break;
    }
    p.at += 3;
    skip_space(&p, 1);
    uint32_t rule;
    if (!rule_named(&p, name, length, &rule))
      break;
    if (p.defined[rule]) {
      fail_at(&p, name, "rule '%.*s' is defined twice", (int)length, name);
      break;
    }
    if (!parse_alternates(&p, rule, 0))
      break;
    skip_space(&p, 0);
    if (*p.at == ')') {
      fail_at(&p, p.at, "unmatched ')'");
      break;
    }
    if (*p.at && *p.at != '\n' && *p.at != '\r') {
      fail_at(&p, p.at, "unexpected '%c'", *p.at);
      break;
    }
  }
  int ok = !p.failed;
  if (ok) {
    int found = 0;
    for (size_t i = 0; i < rules->rule_count && ok; ++i) {
      if (!p.defined[i]) {
        fail_at(&p, p.text, "rule '%s' is used but not defined",
                rules->rule_names[i] ? rules->rule_names[i] : "?");
        ok = 0;
      } else if (rules->rule_names[i] &&
                 strcmp(rules->rule_names[i], "root") == 0) {
        rules->root = (uint32_t)i;
        found = 1;
      }
    }
    if (ok && !found) {
      fail_at(&p, p.text, "the grammar has no 'root' rule");
      ok = 0;
    }
  }
  if (ok) {
    unsigned char *nullable = nullable_rules(rules);
    unsigned char *mark = calloc(rules->rule_count, 1);
    if (!nullable || !mark) {
      fail_at(&p, p.text, "out of memory");
      ok = 0;
    }
    for (size_t i = 0; i < rules->rule_count && ok; ++i) {
      int64_t cycle = left_cycle(rules, nullable, mark, (uint32_t)i);
      if (cycle >= 0) {
        fail_at(&p, p.text,
                "rule '%s' is left-recursive: it reaches itself before "
                "reading a character (a repetition of something that may "
                "be empty does too)",
                rule_label(rules, (uint32_t)cycle));
        ok = 0;
      }
    }
    free(nullable);
    free(mark);
  }
  free(p.defined);
  if (!ok)
    tfm_grammar_rules_free(rules);
  return ok;
}

void tfm_grammar_rules_free(tfm_grammar_rules *rules) {
  if (!rules)
    return;
  for (size_t i = 0; i < rules->rule_count; ++i)
    free(rules->rule_names ? rules->rule_names[i] : NULL);
  free(rules->rule_names);
  free(rules->rules);
  free(rules->alternatives);
  free(rules->elements);
  free(rules->ranges);
  memset(rules, 0, sizeof *rules);
}
