/*===- json_value.c - a JSON document as a tree -------------------------===//
 *
 * See json_value.h. A recursive descent over the text; values own their
 * children, freed with the root.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/grammar/json_value.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxDepth = 128 };

typedef struct {
  const char *text, *at;
  char *error;
  size_t error_size;
  int failed;
} reader;

static void fail(reader *r, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(reader *r, const char *format, ...) {
  if (r->failed)
    return;
  r->failed = 1;
  int n = snprintf(r->error, r->error_size, "offset %ld: ",
                   (long)(r->at - r->text));
  if (n < 0 || (size_t)n >= r->error_size)
    return;
  va_list args;
  va_start(args, format);
  vsnprintf(r->error + n, r->error_size - (size_t)n, format, args);
  va_end(args);
}

static void skip_space(reader *r) {
  while (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r')
    ++r->at;
}

static int append(char **out, size_t *length, size_t *capacity,
                  const char *bytes, size_t n) {
  if (*length + n + 1 > *capacity) {
    size_t next = *capacity ? *capacity * 2 : 32;
    while (next < *length + n + 1)
      next *= 2;
    char *grown = realloc(*out, next);
    if (!grown)
      return 0;
    *out = grown;
    *capacity = next;
  }
  memcpy(*out + *length, bytes, n);
  *length += n;
  (*out)[*length] = '\0';
  return 1;
}

static int hex4(reader *r, uint32_t *value) {
  *value = 0;
  for (int i = 0; i < 4; ++i) {
    char c = *r->at++;
    int v = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (v < 0) {
      fail(r, "expected 4 hexadecimal digits after \\u");
      return 0;
    }
    *value = *value << 4 | (uint32_t)v;
  }
  return 1;
}

/* A string's text after its opening quote, escapes decoded. */
static char *read_string(reader *r, size_t *length_out) {
  char *out = NULL;
  size_t length = 0, capacity = 0;
  if (!append(&out, &length, &capacity, "", 0)) {
    fail(r, "out of memory");
    return NULL;
  }
  for (;;) {
    unsigned char c = (unsigned char)*r->at;
    if (c == '"') {
      ++r->at;
      *length_out = length;
      return out;
    }
    if (c < 0x20) {
      fail(r, c ? "a control character in a string" : "unterminated string");
      free(out);
      return NULL;
    }
    char bytes[4];
    size_t n = 1;
    if (c >= 0x80) {
      /* A whole UTF-8 character, or a refusal: JSON text is UTF-8. */
      const unsigned char *u = (const unsigned char *)r->at;
      n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
          : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
      uint32_t code = n ? c & (0x7Fu >> n) : 0;
      for (size_t i = 1; i < n; ++i) {
        if ((u[i] & 0xC0) != 0x80) {
          n = 0;
          break;
        }
        code = code << 6 | (u[i] & 0x3Fu);
      }
      if (!n || (n == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
          (n == 4 && (code < 0x10000 || code > 0x10FFFF))) {
        fail(r, "malformed UTF-8 in a string");
        free(out);
        return NULL;
      }
      memcpy(bytes, r->at, n);
      r->at += n;
    } else if (c != '\\') {
      bytes[0] = (char)c;
      ++r->at;
    } else {
      ++r->at;
      char e = *r->at++;
      const char *simple = strchr("\"\\/bfnrt", e);
      if (e && simple) {
        bytes[0] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      } else if (e == 'u') {
        uint32_t code;
        if (!hex4(r, &code)) {
          free(out);
          return NULL;
        }
        if (code >= 0xD800 && code <= 0xDBFF) {
          uint32_t low;
          if (r->at[0] != '\\' || r->at[1] != 'u') {
            fail(r, "an unpaired surrogate in a string");
            free(out);
            return NULL;
          }
          r->at += 2;
          if (!hex4(r, &low) || low < 0xDC00 || low > 0xDFFF) {
            fail(r, "an unpaired surrogate in a string");
            free(out);
            return NULL;
          }
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if ((code >= 0xDC00 && code <= 0xDFFF) || code == 0) {
          fail(r, code ? "an unpaired surrogate in a string"
                       : "a \\u0000 in a string");
          free(out);
          return NULL;
        }
        if (code < 0x80) {
          bytes[0] = (char)code;
        } else if (code < 0x800) {
          bytes[0] = (char)(0xC0 | code >> 6);
          bytes[1] = (char)(0x80 | (code & 0x3F));
          n = 2;
        } else if (code < 0x10000) {
          bytes[0] = (char)(0xE0 | code >> 12);
          bytes[1] = (char)(0x80 | (code >> 6 & 0x3F));
          bytes[2] = (char)(0x80 | (code & 0x3F));
          n = 3;
        } else {
          bytes[0] = (char)(0xF0 | code >> 18);
          bytes[1] = (char)(0x80 | (code >> 12 & 0x3F));
          bytes[2] = (char)(0x80 | (code >> 6 & 0x3F));
          bytes[3] = (char)(0x80 | (code & 0x3F));
          n = 4;
        }
      } else {
        fail(r, "unknown escape in a string");
        free(out);
        return NULL;
      }
    }
    if (!append(&out, &length, &capacity, bytes, n)) {
      fail(r, "out of memory");
      free(out);
      return NULL;
    }
  }
}

static void clear(tfm_json *v) {
  free(v->text);
  for (size_t i = 0; i < v->count; ++i) {
    clear(&v->items[i]);
    if (v->keys)
      free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  memset(v, 0, sizeof *v);
}

static int read_value(reader *r, tfm_json *out, int depth);

/* The members or items up to `close`, into out->items (and keys). */
static int read_members(reader *r, tfm_json *out, char close, int depth) {
  size_t capacity = 0;
  int object = close == '}';
  skip_space(r);
  if (*r->at == close) {
    ++r->at;
    return 1;
  }
  for (;;) {
    if (out->count == capacity) {
      size_t next = capacity ? capacity * 2 : 4;
      tfm_json *items = realloc(out->items, next * sizeof *items);
      if (items)
        out->items = items;
      char **keys =
          object ? realloc(out->keys, next * sizeof *keys) : NULL;
      if (object && keys)
        out->keys = keys;
      if (!items || (object && !keys)) {
        fail(r, "out of memory");
        return 0;
      }
      capacity = next;
    }
    tfm_json *item = &out->items[out->count];
    memset(item, 0, sizeof *item);
    if (object) {
      skip_space(r);
      if (*r->at != '"') {
        fail(r, "expected a member's name in quotes");
        return 0;
      }
      ++r->at;
      size_t length;
      char *key = read_string(r, &length);
      if (!key)
        return 0;
      out->keys[out->count] = key;
      ++out->count;
      skip_space(r);
      if (*r->at != ':') {
        fail(r, "expected ':' after a member's name");
        return 0;
      }
      ++r->at;
    } else {
      ++out->count;
    }
    if (!read_value(r, item, depth + 1))
      return 0;
    skip_space(r);
    if (*r->at == close) {
      ++r->at;
      return 1;
    }
    if (*r->at != ',') {
      fail(r, "expected ',' or '%c'", close);
      return 0;
    }
    ++r->at;
  }
}

static int read_value(reader *r, tfm_json *out, int depth) {
  if (depth > kMaxDepth) {
    fail(r, "nested deeper than %d", kMaxDepth);
    return 0;
  }
  skip_space(r);
  const char *start = r->at;
  char c = *r->at;
  if (c == '{' || c == '[') {
    ++r->at;
    out->kind = c == '{' ? TFM_JSON_OBJECT : TFM_JSON_ARRAY;
    return read_members(r, out, c == '{' ? '}' : ']', depth);
  }
  if (c == '"') {
    ++r->at;
    out->kind = TFM_JSON_STRING;
    out->text = read_string(r, &out->length);
    return out->text != NULL;
  }
  static const struct {
    const char *word;
    tfm_json_kind kind;
  } words[] = {{"null", TFM_JSON_NULL},
               {"true", TFM_JSON_TRUE},
               {"false", TFM_JSON_FALSE}};
  for (size_t i = 0; i < 3; ++i)
    if (strncmp(r->at, words[i].word, strlen(words[i].word)) == 0) {
      r->at += strlen(words[i].word);
      out->kind = words[i].kind;
      return 1;
    }
  /* A number, as RFC 8259 spells it. */
  const char *p = r->at;
  if (*p == '-')
    ++p;
  if (*p == '0')
    ++p;
  else if (*p >= '1' && *p <= '9')
    while (*p >= '0' && *p <= '9')
      ++p;
  else {
    fail(r, "expected a JSON value");
    return 0;
  }
  if (*p == '.') {
    ++p;
    if (*p < '0' || *p > '9') {
      fail(r, "expected a digit after '.'");
      return 0;
    }
    while (*p >= '0' && *p <= '9')
      ++p;
  }
  if (*p == 'e' || *p == 'E') {
    ++p;
    if (*p == '+' || *p == '-')
      ++p;
    if (*p < '0' || *p > '9') {
      fail(r, "expected a digit in the exponent");
      return 0;
    }
    while (*p >= '0' && *p <= '9')
      ++p;
  }
  out->kind = TFM_JSON_NUMBER;
  out->length = (size_t)(p - start);
  out->text = malloc(out->length + 1);
  if (!out->text) {
    fail(r, "out of memory");
    return 0;
  }
  memcpy(out->text, start, out->length);
  out->text[out->length] = '\0';
  out->number = strtod(out->text, NULL);
  r->at = p;
  return 1;
}

tfm_json *tfm_json_parse(const char *text, char *error, size_t error_size) {
  reader r = {text, text, error, error_size, 0};
  if (error_size)
    error[0] = '\0';
  tfm_json *root = calloc(1, sizeof *root);
  if (!root) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  if (read_value(&r, root, 0)) {
    skip_space(&r);
    if (*r.at)
      fail(&r, "text after the JSON value");
  }
  if (r.failed) {
    tfm_json_free(root);
    return NULL;
  }
  return root;
}

void tfm_json_free(tfm_json *value) {
  if (!value)
    return;
  clear(value);
  free(value);
}

const tfm_json *tfm_json_get(const tfm_json *object, const char *key) {
  if (!object || object->kind != TFM_JSON_OBJECT)
    return NULL;
  for (size_t i = 0; i < object->count; ++i)
    if (strcmp(object->keys[i], key) == 0)
      return &object->items[i];
  return NULL;
}
