/*===- schema_terms.c - integer ranges and string patterns as GBNF -------===//
 *
 * Two JSON Schema keywords whose grammars are built character by
 * character (schema_terms.h). An integer range becomes alternatives of
 * digit classes, one per run of numbers that share a prefix ([13, 57]:
 * "1" [3-9] | [2-4] [0-9] | "5" [0-7]). A pattern is parsed as a regular
 * expression and written as the GBNF of the JSON string bodies that decode
 * to the texts it matches: characters JSON must escape are written
 * escaped, and negated classes (and `.`) match only characters JSON needs
 * no escape for, a subset of the regex's texts, so that every output
 * still matches it.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/grammar/schema_terms.h"
#include "runtime/grammar/text_buffer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *finish(tfm_text_buffer *b) {
  if (b->failed) {
    free(b->text);
    return NULL;
  }
  return b->text ? b->text : strdup("");
}

/*===--- integer ranges ---------------------------------------------------===*/

/* Alternatives for the n-digit texts from x to y (x <= y, same length),
 * each after `prefix` (terms so far). */
static void digits_between(tfm_text_buffer *out, tfm_text_buffer *prefix,
                           const char *x, const char *y, size_t n, int *first) {
  if (n == 0) {
    tfm_text_puts(out, *first ? "" : " | ");
    tfm_text_puts(out, prefix->text ? prefix->text : "\"\"");
    *first = 0;
    return;
  }
  size_t mark = prefix->length;
  if (x[0] == y[0]) {
    tfm_text_printf(prefix, " [%c]", x[0]);
    digits_between(out, prefix, x + 1, y + 1, n - 1, first);
  } else {
    int rest_low = strspn(x + 1, "0") == n - 1;
    int rest_high = strspn(y + 1, "9") == n - 1;
    char nines[20], zeros[20];
    memset(nines, '9', n - 1);
    memset(zeros, '0', n - 1);
    nines[n - 1] = zeros[n - 1] = '\0';
    char low = rest_low ? x[0] : (char)(x[0] + 1);
    char high = rest_high ? y[0] : (char)(y[0] - 1);
    if (!rest_low) {
      tfm_text_printf(prefix, " [%c]", x[0]);
      digits_between(out, prefix, x + 1, nines, n - 1, first);
      prefix->length = mark;
      prefix->text[mark] = '\0';
    }
    if (low <= high) {
      tfm_text_printf(prefix, " [%c-%c]", low, high);
      if (n > 1)
        tfm_text_printf(prefix, " [0-9]{%zu}", n - 1);
      digits_between(out, prefix, "", "", 0, first);
      prefix->length = mark;
      prefix->text[mark] = '\0';
    }
    if (!rest_high) {
      tfm_text_printf(prefix, " [%c]", y[0]);
      digits_between(out, prefix, zeros, y + 1, n - 1, first);
    }
  }
  if (prefix->text) {
    prefix->length = mark;
    prefix->text[mark] = '\0';
  }
}

/* Alternatives for low..high, 0 <= low <= high: one length at a time. */
static void naturals_between(tfm_text_buffer *out, int64_t low, int64_t high,
                             int *first) {
  char lows[24], highs[24];
  int64_t power = 1;
  for (size_t length = 1; length <= 16 && low <= high; ++length) {
    int64_t top = power * 10 - 1; /* the largest of this length */
    if (low <= top) {
      snprintf(lows, sizeof lows, "%lld", (long long)low);
      snprintf(highs, sizeof highs, "%lld",
               (long long)(high < top ? high : top));
      tfm_text_buffer prefix = {0};
      tfm_text_puts(&prefix, "");
      digits_between(out, &prefix, lows, highs, length, first);
      out->failed |= prefix.failed;
      free(prefix.text);
      low = top + 1;
    }
    power *= 10;
  }
}

char *tfm_schema_integer_range(int64_t low, int64_t high) {
  tfm_text_buffer out = {0};
  tfm_text_puts(&out, "(");
  int first = 1;
  if (low < 0) {
    /* Negative ones: "-" and their magnitudes. */
    tfm_text_buffer negative = {0};
    int negative_first = 1;
    naturals_between(&negative, high < 0 ? -high : 1, -low, &negative_first);
    tfm_text_puts(&out, " \"-\" (");
    tfm_text_puts(&out, negative.text ? negative.text : "");
    tfm_text_puts(&out, " )");
    out.failed |= negative.failed;
    free(negative.text);
    first = 0;
  }
  if (high >= 0)
    naturals_between(&out, low > 0 ? low : 0, high, &first);
  tfm_text_puts(&out, " )");
  return finish(&out);
}

/*===--- number ranges ----------------------------------------------------===*/

/* Non-negative numbers from `low` (>= 0; excluded if `low_open`) to
 * `high` (`high` < 0: unbounded; excluded if `high_open`), as alternatives
 * appended to `out`: integer parts strictly inside with any fraction,
 * `high` itself with a zero fraction, `low` with a nonzero one. */
static void non_negative(tfm_text_buffer *out, int64_t low, int low_open,
                         int64_t high, int high_open, int *first) {
  int64_t whole_low = low_open ? low + 1 : low;
  int64_t whole_high = high < 0 ? TFM_SCHEMA_MAX_INTEGER : high - 1;
  if (whole_low <= whole_high) {
    char *range = tfm_schema_integer_range(whole_low, whole_high);
    if (!range) {
      out->failed = 1;
      return;
    }
    tfm_text_puts(out, *first ? " " : " | ");
    tfm_text_puts(out, range);
    tfm_text_puts(out, " ( \".\" [0-9]{1,16} )?");
    free(range);
    *first = 0;
  }
  if (high >= 0 && !high_open && (high > low || !low_open)) {
    tfm_text_printf(out, "%s\"%lld\" ( \".\" \"0\"{1,16} )?", *first ? " " : " | ",
         (long long)high);
    *first = 0;
  }
  if (low_open && (high < 0 || low < high)) {
    tfm_text_printf(out, "%s\"%lld.\" [0-9]{0,15} [1-9] [0-9]{0,15}",
         *first ? " " : " | ", (long long)low);
    *first = 0;
  }
}

char *tfm_schema_number_range(int has_low, int64_t low, int low_open,
                              int has_high, int64_t high, int high_open,
                              int *empty) {
  tfm_text_buffer out = {0};
  int first = 1;
  tfm_text_puts(&out, "(");
  /* x >= 0: from max(low, 0) up. */
  if (!has_high || high >= 0) {
    int64_t from = has_low && low >= 0 ? low : 0;
    int from_open = has_low && low >= 0 && low_open;
    int64_t to = has_high ? high : -1;
    if (!has_high || to > from || (to == from && !from_open && !high_open))
      non_negative(&out, from, from_open, to, has_high && high_open, &first);
  }
  /* x < 0: "-" and a magnitude above max(-high, 0) (strictly above 0:
   * "-0" is not written) up to -low. */
  if (!has_low || low < 0) {
    int64_t from = has_high && high < 0 ? -high : 0;
    int from_open = has_high && high < 0 ? high_open : 1;
    int64_t to = has_low ? -low : -1;
    if (!has_low || to > from || (to == from && !from_open && !low_open)) {
      tfm_text_buffer magnitude = {0};
      int magnitude_first = 1;
      non_negative(&magnitude, from, from_open, to, has_low && low_open,
                   &magnitude_first);
      if (!magnitude_first) {
        tfm_text_puts(&out, first ? " \"-\" (" : " | \"-\" (");
        tfm_text_puts(&out, magnitude.text);
        tfm_text_puts(&out, " )");
        first = 0;
      }
      out.failed |= magnitude.failed;
      free(magnitude.text);
    }
  }
  tfm_text_puts(&out, " )");
  *empty = first && !out.failed;
  if (first) {
    free(out.text);
    return NULL;
  }
  return finish(&out);
}

/*===--- patterns ---------------------------------------------------------===*/

typedef struct {
  const char *regex;
  size_t at, length;
  char *error;
  size_t error_size;
  int failed;
} pattern_parser;

static void refuse(pattern_parser *p, const char *what) {
  if (p->failed)
    return;
  p->failed = 1;
  snprintf(p->error, p->error_size, "at offset %zu: %s", p->at, what);
}

/* The code point at p->at (UTF-8), moving past it. */
static uint32_t next_code_point(pattern_parser *p) {
  const unsigned char *s = (const unsigned char *)p->regex + p->at;
  uint32_t c = s[0];
  size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || p->at + n > p->length) {
    refuse(p, "the pattern is not UTF-8");
    p->at = p->length;
    return 0;
  }
  if (n > 1) {
    c &= 0x3F >> (n - 1);
    for (size_t i = 1; i < n; ++i)
      c = (c << 6) | (s[i] & 0x3F);
  }
  p->at += n;
  return c;
}

/* A code point as a GBNF literal of its JSON spelling. */
static void json_char(tfm_text_buffer *out, uint32_t c) {
  static const char named[] = {'b', 0x08, 'f', 0x0C, 'n', '\n', 'r', '\r',
                               't', '\t'};
  if (c == '"') {
    tfm_text_puts(out, " \"\\\\\\\"\"");
    return;
  }
  if (c == '\\') {
    tfm_text_puts(out, " \"\\\\\\\\\"");
    return;
  }
  if (c < 0x20 || c == 0x7F) {
    for (size_t i = 0; i < sizeof named; i += 2)
      if ((uint32_t)named[i + 1] == c) {
        tfm_text_printf(out, " \"\\\\%c\"", named[i]);
        return;
      }
    tfm_text_printf(out, " \"\\\\u%04x\"", c);
    return;
  }
  /* Otherwise as itself, in a class (no quoting of " or \ needed). */
  tfm_text_printf(out, " [\\U%08x]", c);
}

/* A class item's range as GBNF class text (code points escaped). */
static void class_range(tfm_text_buffer *out, uint32_t low, uint32_t high) {
  tfm_text_printf(out, "\\U%08x", low);
  if (high != low)
    tfm_text_printf(out, "-\\U%08x", high);
}

/* What JSON text may hold unescaped: every class the pattern writes is
 * kept inside it. */
static const char kUnescapedOnly[] = "\"\\\\\\x00-\\x1F\\x7F";

typedef struct {
  uint32_t low, high;
} code_range;

enum { kMaxClassRanges = 256 };

/* \d \w \s (and negated: \D \W \S) as ranges; 0 for another letter. */
static int shorthand(char letter, code_range *ranges, size_t *count,
                     int *negated) {
  static const code_range digit[] = {{'0', '9'}};
  static const code_range word[] = {
      {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  static const code_range space[] = {{'\t', '\r'}, {' ', ' '}};
  const code_range *set = NULL;
  size_t n = 0;
  switch (letter | 0x20) {
  case 'd':
    set = digit, n = 1;
    break;
  case 'w':
    set = word, n = 4;
    break;
  case 's':
    set = space, n = 2;
    break;
  default:
    return 0;
  }
  *negated = letter >= 'A' && letter <= 'Z';
  for (size_t i = 0; i < n && *count < kMaxClassRanges; ++i)
    ranges[(*count)++] = set[i];
  return 1;
}

/* An escape's code point (after the backslash); -1 refused. */
static int64_t escaped_char(pattern_parser *p) {
  if (p->at >= p->length) {
    refuse(p, "a pattern cannot end with '\\'");
    return -1;
  }
  char c = p->regex[p->at++];
  switch (c) {
  case 'n':
    return '\n';
  case 't':
    return '\t';
  case 'r':
    return '\r';
  case 'f':
    return '\f';
  case 'v':
    return '\v';
  case '0':
    return 0;
  case 'x':
  case 'u': {
    size_t digits = c == 'x' ? 2 : 4;
    if (p->at + digits > p->length) {
      refuse(p, "a short hexadecimal escape");
      return -1;
    }
    char hex[5] = {0};
    memcpy(hex, p->regex + p->at, digits);
    char *end;
    long value = strtol(hex, &end, 16);
    if (*end) {
      refuse(p, "a malformed hexadecimal escape");
      return -1;
    }
    p->at += digits;
    return value;
  }
  default:
    break;
  }
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9')) {
    --p->at;
    refuse(p, "this escape is not supported (backreferences, \\b, \\p and "
              "the like)");
    return -1;
  }
  return (unsigned char)c; /* \. \\ \/ \- \( ... */
}

/* Writes ranges (perhaps negated) as GBNF: a class of the characters JSON
 * writes as they are, and the others as their escapes. */
static void write_class(tfm_text_buffer *out, const code_range *ranges,
                        size_t count, int negated) {
  if (negated) {
    tfm_text_puts(out, " [^");
    for (size_t i = 0; i < count; ++i)
      class_range(out, ranges[i].low, ranges[i].high);
    tfm_text_puts(out, kUnescapedOnly);
    tfm_text_puts(out, "]");
    return;
  }
  tfm_text_puts(out, " (");
  int first = 1;
  tfm_text_buffer plain = {0};
  for (size_t i = 0; i < count; ++i)
    for (uint32_t c = ranges[i].low; c <= ranges[i].high; ++c) {
      if (c < 0x20 || c == '"' || c == '\\' || c == 0x7F) {
        tfm_text_puts(out, first ? "" : " |");
        json_char(out, c);
        first = 0;
        continue;
      }
      /* The rest of the range is plain text: one class item. */
      uint32_t end = ranges[i].high;
      if (c < '"' && end >= '"')
        end = '"' - 1;
      else if (c < '\\' && end >= '\\')
        end = '\\' - 1;
      else if (c < 0x7F && end >= 0x7F)
        end = 0x7E;
      class_range(&plain, c, end);
      c = end;
      if (c == UINT32_MAX)
        break;
    }
  if (plain.text) {
    tfm_text_puts(out, first ? " [" : " | [");
    tfm_text_puts(out, plain.text);
    tfm_text_puts(out, "]");
  }
  out->failed |= plain.failed;
  free(plain.text);
  tfm_text_puts(out, " )");
}

static int parse_alternatives(pattern_parser *p, tfm_text_buffer *out,
                              int depth);

/* [...] after its '['. */
static void parse_class(pattern_parser *p, tfm_text_buffer *out) {
  code_range ranges[kMaxClassRanges];
  size_t count = 0;
  int negated = 0;
  if (p->at < p->length && p->regex[p->at] == '^') {
    negated = 1;
    ++p->at;
  }
  int first = 1;
  while (!p->failed) {
    if (p->at >= p->length) {
      refuse(p, "'[' is not closed");
      return;
    }
    if (p->regex[p->at] == ']' && !first) {
      ++p->at;
      break;
    }
    first = 0;
    int64_t low;
    if (p->regex[p->at] == '\\') {
      ++p->at;
      int short_negated = 0;
      if (p->at < p->length &&
          shorthand(p->regex[p->at], ranges, &count, &short_negated)) {
        if (short_negated) {
          refuse(p, "\\D, \\W and \\S inside a class are not supported");
          return;
        }
        ++p->at;
        continue;
      }
      low = escaped_char(p);
    } else {
      low = next_code_point(p);
    }
    if (p->failed)
      return;
    int64_t high = low;
    if (p->at + 1 < p->length && p->regex[p->at] == '-' &&
        p->regex[p->at + 1] != ']') {
      ++p->at;
      if (p->regex[p->at] == '\\') {
        ++p->at;
        high = escaped_char(p);
      } else {
        high = next_code_point(p);
      }
      if (p->failed)
        return;
      if (high < low) {
        refuse(p, "a class range runs backwards");
        return;
      }
    }
    if (count == kMaxClassRanges) {
      refuse(p, "a class has too many ranges");
      return;
    }
    ranges[count++] = (code_range){(uint32_t)low, (uint32_t)high};
  }
  write_class(out, ranges, count, negated);
}

/* A quantifier after an atom, if any: written after it. Returns whether
 * the atom so quantified may match nothing. An unbounded repetition of an
 * atom that may match nothing ("(a|)*") is refused: GBNF cannot follow
 * it (its rule would be left-recursive). */
static int parse_quantifier(pattern_parser *p, tfm_text_buffer *out,
                            int atom_may_be_empty) {
  if (p->at >= p->length)
    return atom_may_be_empty;
  char c = p->regex[p->at];
  size_t quantifier = p->at;
  int may_be_empty = atom_may_be_empty, unbounded = 0;
  if (c == '*' || c == '+' || c == '?') {
    unbounded = c != '?';
    may_be_empty |= c != '+';
    ++p->at;
    tfm_text_printf(out, "%c", c);
  } else if (c == '{') {
    unsigned long low = 0, high = 0;
    int n = 0, bounded = 1;
    const char *s = p->regex + p->at;
    if (sscanf(s, "{%lu,%lu}%n", &low, &high, &n) == 2 && n > 0) {
    } else if ((n = 0, sscanf(s, "{%lu,}%n", &low, &n)) == 1 && n > 0) {
      bounded = 0;
    } else if ((n = 0, sscanf(s, "{%lu}%n", &low, &n)) == 1 && n > 0) {
      high = low;
    } else {
      refuse(p, "a malformed {m,n} quantifier");
      return 0;
    }
    if ((bounded && high < low) || low > 10000 || high > 10000) {
      refuse(p, "a {m,n} quantifier outside 0 <= m <= n <= 10000");
      return 0;
    }
    unbounded = !bounded;
    may_be_empty |= low == 0;
    p->at += (size_t)n;
    if (bounded)
      tfm_text_printf(out, "{%lu,%lu}", low, high);
    else
      tfm_text_printf(out, "{%lu,}", low);
  } else {
    return atom_may_be_empty;
  }
  if (unbounded && atom_may_be_empty) {
    p->at = quantifier;
    refuse(p, "an unbounded repetition of something that may match "
              "nothing (write it without its empty alternative)");
    return 0;
  }
  /* Lazy and possessive forms match the same texts. */
  if (p->at < p->length && (p->regex[p->at] == '?' || p->regex[p->at] == '+'))
    ++p->at;
  if (p->at < p->length && strchr("*+?{", p->regex[p->at]))
    refuse(p, "a quantifier follows a quantifier");
  return may_be_empty;
}

/* A run of atoms, up to '|' or ')' or the end. Returns whether it may
 * match nothing. */
static int parse_sequence(pattern_parser *p, tfm_text_buffer *out, int depth) {
  tfm_text_puts(out, " (");
  int empty = 1, may_be_empty = 1;
  while (!p->failed && p->at < p->length) {
    char c = p->regex[p->at];
    if (c == '|' || c == ')')
      break;
    size_t start = p->at;
    int atom_may_be_empty = 0;
    if (c == '(') {
      ++p->at;
      if (p->at < p->length && p->regex[p->at] == '?') {
        if (p->at + 1 < p->length && p->regex[p->at + 1] == ':') {
          p->at += 2;
        } else if (p->at + 1 < p->length && p->regex[p->at + 1] == '<' &&
                   p->at + 2 < p->length && p->regex[p->at + 2] != '=' &&
                   p->regex[p->at + 2] != '!') {
          /* A named group: a group. */
          const char *close = memchr(p->regex + p->at, '>', p->length - p->at);
          if (!close) {
            refuse(p, "a group name is not closed");
            return 0;
          }
          p->at = (size_t)(close - p->regex) + 1;
        } else {
          refuse(p, "lookarounds and other (?...) groups are not supported");
          return 0;
        }
      }
      tfm_text_puts(out, " (");
      atom_may_be_empty = parse_alternatives(p, out, depth + 1);
      if (p->failed)
        return 0;
      if (p->at >= p->length || p->regex[p->at] != ')') {
        refuse(p, "'(' is not closed");
        return 0;
      }
      ++p->at;
      tfm_text_puts(out, " )");
    } else if (c == '[') {
      ++p->at;
      parse_class(p, out);
    } else if (c == '.') {
      ++p->at;
      tfm_text_puts(out, " [^\\n");
      tfm_text_puts(out, kUnescapedOnly);
      tfm_text_puts(out, "]");
    } else if (c == '\\') {
      ++p->at;
      code_range ranges[4];
      size_t count = 0;
      int negated = 0;
      if (p->at < p->length &&
          shorthand(p->regex[p->at], ranges, &count, &negated)) {
        ++p->at;
        write_class(out, ranges, count, negated);
      } else {
        int64_t code = escaped_char(p);
        if (p->failed)
          return 0;
        json_char(out, (uint32_t)code);
      }
    } else if (c == '^' || c == '$') {
      refuse(p, "'^' and '$' are supported only at the pattern's start and "
                "end");
      return 0;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      refuse(p, "a quantifier follows nothing");
      return 0;
    } else {
      json_char(out, next_code_point(p));
    }
    if (p->failed)
      return 0;
    if (p->at == start)
      break;
    may_be_empty &= parse_quantifier(p, out, atom_may_be_empty);
    empty = 0;
  }
  if (empty)
    tfm_text_puts(out, " \"\"");
  tfm_text_puts(out, " )");
  return may_be_empty;
}

/* Returns whether the alternatives may match nothing. */
static int parse_alternatives(pattern_parser *p, tfm_text_buffer *out,
                              int depth) {
  if (depth > 64) {
    refuse(p, "groups nest deeper than 64");
    return 0;
  }
  int may_be_empty = parse_sequence(p, out, depth);
  while (!p->failed && p->at < p->length && p->regex[p->at] == '|') {
    ++p->at;
    tfm_text_puts(out, " |");
    may_be_empty |= parse_sequence(p, out, depth);
  }
  return may_be_empty;
}

char *tfm_schema_pattern(const char *regex, char *error, size_t error_size) {
  pattern_parser p = {regex, 0, strlen(regex), error, error_size, 0};
  int start_anchor = p.length > 0 && regex[0] == '^';
  int end_anchor = p.length > 0 && regex[p.length - 1] == '$' &&
                   (p.length < 2 || regex[p.length - 2] != '\\');
  if (start_anchor)
    p.at = 1;
  if (end_anchor)
    --p.length;
  tfm_text_buffer out = {0};
  /* Unanchored: the match may sit anywhere in the text. */
  static const char any_text[] = " ( [^\"\\\\\\x00-\\x1F\\x7F] )*";
  if (!start_anchor)
    tfm_text_puts(&out, any_text);
  tfm_text_puts(&out, " (");
  parse_alternatives(&p, &out, 0);
  if (!p.failed && p.at < p.length)
    refuse(&p, "')' has no '('");
  tfm_text_puts(&out, " )");
  if (!end_anchor)
    tfm_text_puts(&out, any_text);
  if (p.failed) {
    free(out.text);
    return NULL;
  }
  char *text = finish(&out);
  if (!text)
    snprintf(error, error_size, "out of memory");
  return text;
}
