/*===- json_schema.c - a JSON Schema as a GBNF grammar ------------------===//
 *
 * tfm_json_schema_to_gbnf: the grammar of the JSON texts a schema accepts,
 * written as llama.cpp's json-schema-to-grammar writes it (its primitive
 * rules, `space` between tokens, objects' properties in the schema's
 * order, required ones first), over the keywords listed in
 * tfm_runtime.h. Every other keyword is refused with its JSON path
 * (annotations such as title and description are read past): a schema
 * is never silently loosened.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/grammar/json_value.h"
#include "runtime/grammar/schema_terms.h"
#include "runtime/grammar/text_buffer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxRules = 4096, kMaxPath = 512, kMaxRepeat = 10000 };

/* A rule being defined, and how many brackets ("{", "[") were open when
 * its definition began: reaching it again with no bracket opened since
 * would read nothing between (left recursion). */
typedef struct open_rule {
  const char *name;
  int brackets;
  const struct open_rule *outer;
} open_rule;

typedef struct {
  const tfm_json *root;
  /* The rule of `root` ("$ref": "#"), and which of several schemas it is
   * (their "#/$defs/..." are apart). */
  const char *root_rule;
  size_t scope;
  tfm_text_buffer rules;      /* the grammar written so far */
  char **names;      /* rules defined (or being defined) */
  size_t name_count;
  char error[400];
  int failed;
  char path[kMaxPath]; /* "$.properties.a" of the schema being read */
  const open_rule *open; /* the rules being defined, innermost first */
  int brackets;          /* "{" and "[" opened on the way here */
} converter;

static void fail(converter *c, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(converter *c, const char *format, ...) {
  if (c->failed)
    return;
  c->failed = 1;
  int n = snprintf(c->error, sizeof c->error, "at %s: ", c->path);
  if (n < 0 || (size_t)n >= sizeof c->error)
    return;
  va_list args;
  va_start(args, format);
  vsnprintf(c->error + n, sizeof c->error - (size_t)n, format, args);
  va_end(args);
}

static int has_rule(const converter *c, const char *name) {
  for (size_t i = 0; i < c->name_count; ++i)
    if (strcmp(c->names[i], name) == 0)
      return 1;
  return 0;
}

/* Records `name` as defined; 0 (failed) past kMaxRules or out of memory. */
static int claim(converter *c, const char *name) {
  if (c->name_count >= kMaxRules) {
    fail(c, "the schema makes more than %d rules", kMaxRules);
    return 0;
  }
  char **names = realloc(c->names, (c->name_count + 1) * sizeof *names);
  char *copy = strdup(name);
  if (names)
    c->names = names;
  if (!names || !copy) {
    free(copy);
    fail(c, "out of memory");
    return 0;
  }
  c->names[c->name_count++] = copy;
  return 1;
}

/* The GBNF literal of `text` (UTF-8), quoted and escaped. */
static void literal(tfm_text_buffer *b, const char *text, size_t length) {
  tfm_text_put(b, "\"", 1);
  for (size_t i = 0; i < length; ++i) {
    unsigned char ch = (unsigned char)text[i];
    if (ch == '"' || ch == '\\') {
      char escaped[2] = {'\\', (char)ch};
      tfm_text_put(b, escaped, 2);
    } else if (ch == '\n') {
      tfm_text_put(b, "\\n", 2);
    } else if (ch < 0x20 || ch == 0x7F) {
      tfm_text_printf(b, "\\x%02X", ch);
    } else {
      tfm_text_put(b, (const char *)&text[i], 1);
    }
  }
  tfm_text_put(b, "\"", 1);
}

/* `value` as compact JSON text (a const or an enum member), appended. */
static void json_text(tfm_text_buffer *b, const tfm_json *value) {
  switch (value->kind) {
  case TFM_JSON_NULL: tfm_text_puts(b, "null"); break;
  case TFM_JSON_TRUE: tfm_text_puts(b, "true"); break;
  case TFM_JSON_FALSE: tfm_text_puts(b, "false"); break;
  case TFM_JSON_NUMBER: tfm_text_put(b, value->text, value->length); break;
  case TFM_JSON_STRING: {
    tfm_text_put(b, "\"", 1);
    for (size_t i = 0; i < value->length; ++i) {
      unsigned char ch = (unsigned char)value->text[i];
      const char *escape = ch == '"'    ? "\\\""
                           : ch == '\\' ? "\\\\"
                           : ch == '\n' ? "\\n"
                           : ch == '\r' ? "\\r"
                           : ch == '\t' ? "\\t"
                                        : NULL;
      if (escape)
        tfm_text_puts(b, escape);
      else if (ch < 0x20)
        tfm_text_printf(b, "\\u%04x", ch);
      else
        tfm_text_put(b, &value->text[i], 1);
    }
    tfm_text_put(b, "\"", 1);
    break;
  }
  case TFM_JSON_ARRAY:
    tfm_text_put(b, "[", 1);
    for (size_t i = 0; i < value->count; ++i) {
      if (i)
        tfm_text_put(b, ",", 1);
      json_text(b, &value->items[i]);
    }
    tfm_text_put(b, "]", 1);
    break;
  case TFM_JSON_OBJECT:
    tfm_text_put(b, "{", 1);
    for (size_t i = 0; i < value->count; ++i) {
      if (i)
        tfm_text_put(b, ",", 1);
      tfm_json key = {TFM_JSON_STRING, 0, value->keys[i],
                      strlen(value->keys[i]), NULL, NULL, 0};
      json_text(b, &key);
      tfm_text_put(b, ":", 1);
      json_text(b, &value->items[i]);
    }
    tfm_text_put(b, "}", 1);
    break;
  }
}

/* The primitive rules, each written once when first used. */
static const struct {
  const char *name, *body;
} kPrimitives[] = {
    {"space", "| \" \" | \"\\n\" [ \\t]{0,20}"},
    {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\/bfnrt] | \"u\" "
             "[0-9a-fA-F]{4})"},
    /* A bounded string's characters: no raw ones past U+FFFF, which
     * JavaScript (zod, ajv) counts as two (UTF-16 units) where JSON Schema
     * counts one; escaped as a surrogate pair they count two in both. */
    {"char-bmp", "[^\"\\\\\\x7F\\x00-\\x1F\\U00010000-\\U0010FFFF] | [\\\\] "
                 "([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})"},
    {"string", "\"\\\"\" char* \"\\\"\" space"},
    {"integral-part", "[0] | [1-9] [0-9]{0,15}"},
    {"decimal-part", "[0-9]{1,16}"},
    {"number", "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? "
               "integral-part)? space"},
    {"integer", "(\"-\"? integral-part) space"},
    {"boolean", "(\"true\" | \"false\") space"},
    {"null", "\"null\" space"},
    {"value", "object | array | string | number | boolean | null"},
    {"object", "\"{\" space ( string \":\" space value (\",\" space string "
               "\":\" space value)* )? \"}\" space"},
    {"array", "\"[\" space ( value (\",\" space value)* )? \"]\" space"},
    /* Calendar dates only: each month's days, February's 29th in leap
     * years (by 4, not by 100 unless by 400), years 0001 to 9999. */
    {"date", "( ( [1-9] [0-9]{3} | [0] [1-9] [0-9]{2} | \"00\" [1-9] [0-9] | "
             "\"000\" [1-9] ) \"-\" ( \"02-\" ( [0] [1-9] | [1] [0-9] | [2] "
             "[0-8] ) | ( [0] [13578] | [1] [02] ) \"-\" ( [0] [1-9] | [1-2] "
             "[0-9] | [3] [0-1] ) | ( [0] [469] | \"11\" ) \"-\" ( [0] [1-9] | "
             "[1-2] [0-9] | \"30\" ) ) | ( [0-9]{2} ( [0] [48] | [2468] [048] | "
             "[13579] [26] ) | ( [0] [48] | [2468] [048] | [13579] [26] ) "
             "\"00\" ) \"-02-29\" )"},
    {"time", "( [01] [0-9] | [2] [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] "
             "[0-9] ( \".\" [0-9]{3} )? ( \"Z\" | [+-] ( [01] [0-9] | [2] "
             "[0-3] ) \":\" [0-5] [0-9] )"},
    {"date-time", "date \"T\" time"},
    {"uuid", "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
             "[0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}"},
};

/* The rules each primitive's body refers to. */
static void use_primitive(converter *c, const char *name);

static void use_primitive(converter *c, const char *name) {
  if (c->failed || has_rule(c, name))
    return;
  for (size_t i = 0; i < sizeof kPrimitives / sizeof *kPrimitives; ++i) {
    if (strcmp(kPrimitives[i].name, name) != 0)
      continue;
    if (!claim(c, name))
      return;
    tfm_text_printf(&c->rules, "%s ::= %s\n", name, kPrimitives[i].body);
    /* What it refers to. */
    static const char *const kUses[][4] = {
        {"char", "string", NULL, NULL},
        {"space", "string", NULL, NULL},
        {"integral-part", "number", "integer", NULL},
        {"decimal-part", "number", NULL, NULL},
        {"space", "number", "integer", "boolean"},
        {"space", "null", "object", "array"},
        {"value", "object", "array", NULL},
        {"object", "value", NULL, NULL},
        {"array", "value", NULL, NULL},
        {"string", "value", "object", NULL},
        {"number", "value", NULL, NULL},
        {"boolean", "value", NULL, NULL},
        {"null", "value", NULL, NULL},
        {"date", "date-time", NULL, NULL},
        {"time", "date-time", NULL, NULL},
    };
    for (size_t u = 0; u < sizeof kUses / sizeof *kUses; ++u)
      for (int k = 1; k < 4 && kUses[u][k]; ++k)
        if (strcmp(kUses[u][k], name) == 0)
          use_primitive(c, kUses[u][0]);
    return;
  }
}

int tfm_schema_is_annotation(const char *key) {
  static const char *const kAnnotations[] = {
      "title", "description", "default", "examples", "$schema", "$id",
      "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
      "definitions"};
  for (size_t i = 0; i < sizeof kAnnotations / sizeof *kAnnotations; ++i)
    if (strcmp(key, kAnnotations[i]) == 0)
      return 1;
  return 0;
}

static int is_one_of(const char *key, const char *const *list) {
  for (; *list; ++list)
    if (strcmp(key, *list) == 0)
      return 1;
  return 0;
}

/* Appends ".key" (or "[i]") to the path for the duration of a visit. */
typedef struct {
  size_t length;
} path_mark;

static path_mark enter(converter *c, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static path_mark enter(converter *c, const char *format, ...) {
  path_mark mark = {strlen(c->path)};
  va_list args;
  va_start(args, format);
  vsnprintf(c->path + mark.length, sizeof c->path - mark.length, format,
            args);
  va_end(args);
  return mark;
}

static void leave(converter *c, path_mark mark) { c->path[mark.length] = 0; }

/* A rule name of `hint` that is not taken yet. */
static void fresh_name(converter *c, const char *hint, char *out,
                       size_t size) {
  char base[96];
  size_t n = 0;
  for (const char *p = hint; *p && n + 1 < sizeof base; ++p)
    base[n++] = ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9'))
                    ? *p
                    : '-';
  base[n] = '\0';
  snprintf(out, size, "%s", n ? base : "item");
  for (int i = 1; has_rule(c, out); ++i)
    snprintf(out, size, "%s-%d", n ? base : "item", i);
}

static void visit(converter *c, const tfm_json *schema, const char *hint,
                  tfm_text_buffer *expr);

/* Writes rule `name ::= body` where `body` is the schema's expression. */
static void define(converter *c, const char *name, const tfm_json *schema) {
  tfm_text_buffer body = {0};
  open_rule self = {name, c->brackets, c->open};
  c->open = &self;
  visit(c, schema, name, &body);
  c->open = self.outer;
  if (!c->failed && !body.failed)
    tfm_text_printf(&c->rules, "%s ::= %s\n", name, body.text ? body.text : "");
  if (body.failed)
    fail(c, "out of memory");
  free(body.text);
}

/* The value of an object's property or an array's item: read after the
 * bracket, so a rule it refers back to is not left-recursive. */
static void define_inside(converter *c, const char *name,
                          const tfm_json *schema) {
  ++c->brackets;
  define(c, name, schema);
  --c->brackets;
}

/* Fails where `rule` is being defined and no bracket opened since: a
 * schema such as {"anyOf": [{"$ref": "#"}, ...]} whose validation would
 * come back to itself forever (its grammar would be left-recursive). */
static int refers_back_at_once(converter *c, const char *ref,
                               const char *rule) {
  for (const open_rule *o = c->open; o; o = o->outer)
    if (strcmp(o->name, rule) == 0) {
      if (o->brackets != c->brackets)
        return 0;
      fail(c,
           "$ref \"%s\" refers back to a schema it is part of before "
           "any object or array opens (validating it would never end)",
           ref);
      return 1;
    }
  return 0;
}

/* A reference "#/$defs/NAME" (or "#/definitions/NAME"): its rule, defined
 * on first use (a recursive schema refers to it while it is defined). */
static void reference(converter *c, const char *ref, tfm_text_buffer *expr) {
  const char *name = NULL;
  const tfm_json *defs = NULL;
  if (strncmp(ref, "#/$defs/", 8) == 0) {
    defs = tfm_json_get(c->root, "$defs");
    name = ref + 8;
  } else if (strncmp(ref, "#/definitions/", 14) == 0) {
    defs = tfm_json_get(c->root, "definitions");
    name = ref + 14;
  } else if (strcmp(ref, "#") == 0) {
    if (!refers_back_at_once(c, ref, c->root_rule))
      tfm_text_puts(expr, c->root_rule);
    return;
  } else {
    fail(c, "$ref \"%s\" is not supported (only \"#\", \"#/$defs/...\" and "
            "\"#/definitions/...\")", ref);
    return;
  }
  const tfm_json *target = tfm_json_get(defs, name);
  if (!target) {
    fail(c, "$ref \"%s\" names no definition", ref);
    return;
  }
  char rule[128], hint[104];
  snprintf(hint, sizeof hint, "def-%s", name);
  fresh_name(c, hint, rule, sizeof rule);
  /* One rule a definition: found by its recorded name. */
  char key[160];
  snprintf(key, sizeof key, "#ref:%zu:%s", c->scope, ref);
  for (size_t i = 0; i + 1 < c->name_count; ++i)
    if (strcmp(c->names[i], key) == 0) {
      if (!refers_back_at_once(c, ref, c->names[i + 1]))
        tfm_text_puts(expr, c->names[i + 1]);
      return;
    }
  if (!claim(c, key) || !claim(c, rule))
    return;
  tfm_text_puts(expr, rule);
  char saved[kMaxPath];
  memcpy(saved, c->path, sizeof saved);
  snprintf(c->path, sizeof c->path, "%s", ref);
  define(c, rule, target);
  memcpy(c->path, saved, sizeof saved);
}

/* Alternatives: each of `list`'s schemas. */
static void alternatives(converter *c, const tfm_json *list, const char *hint,
                         const char *keyword, tfm_text_buffer *expr) {
  if (list->kind != TFM_JSON_ARRAY || list->count == 0) {
    fail(c, "'%s' must be a non-empty array of schemas", keyword);
    return;
  }
  tfm_text_put(expr, "(", 1);
  for (size_t i = 0; i < list->count && !c->failed; ++i) {
    path_mark mark = enter(c, ".%s[%zu]", keyword, i);
    char name[128];
    char sub[160];
    snprintf(sub, sizeof sub, "%s-%zu", hint, i);
    fresh_name(c, sub, name, sizeof name);
    if (claim(c, name)) {
      define(c, name, &list->items[i]);
      tfm_text_printf(expr, "%s%s", i ? " | " : " ", name);
    }
    leave(c, mark);
  }
  tfm_text_puts(expr, " )");
}

/* A non-negative integer keyword (minLength, maxItems), or -1 absent. */
static long count_keyword(converter *c, const tfm_json *schema,
                          const char *key) {
  const tfm_json *v = tfm_json_get(schema, key);
  if (!v)
    return -1;
  if (v->kind != TFM_JSON_NUMBER || v->number < 0 ||
      v->number != floor(v->number) || v->number > kMaxRepeat) {
    fail(c, "'%s' must be an integer from 0 to %d", key, kMaxRepeat);
    return -1;
  }
  return (long)v->number;
}

/* x{min,max} with max -1 unbounded. */
static void repetition(tfm_text_buffer *expr, long min, long max) {
  if (max < 0)
    tfm_text_printf(expr, "{%ld,}", min);
  else if (min == max)
    tfm_text_printf(expr, "{%ld}", min);
  else
    tfm_text_printf(expr, "{%ld,%ld}", min, max);
}

static void object_rule(converter *c, const tfm_json *schema,
                        const char *hint, tfm_text_buffer *expr) {
  const tfm_json *properties = tfm_json_get(schema, "properties");
  const tfm_json *required = tfm_json_get(schema, "required");
  const tfm_json *additional = tfm_json_get(schema, "additionalProperties");
  if (properties && properties->kind != TFM_JSON_OBJECT) {
    fail(c, "'properties' must be an object");
    return;
  }
  if (required && required->kind != TFM_JSON_ARRAY) {
    fail(c, "'required' must be an array of names");
    return;
  }
  size_t n = properties ? properties->count : 0;
  /* Each property's "key": value rule; required ones first, in order. */
  char **kv = calloc(n ? n : 1, sizeof *kv);
  int *is_required = calloc(n ? n : 1, sizeof *is_required);
  if (!kv || !is_required) {
    free(kv);
    free(is_required);
    fail(c, "out of memory");
    return;
  }
  for (size_t i = 0; required && i < required->count; ++i) {
    const tfm_json *name = &required->items[i];
    int found = 0;
    for (size_t p = 0; name->kind == TFM_JSON_STRING && p < n; ++p)
      if (strcmp(properties->keys[p], name->text) == 0)
        found = is_required[p] = 1;
    if (!found) {
      path_mark mark = enter(c, ".required[%zu]", i);
      fail(c, "a required property that 'properties' does not define");
      leave(c, mark);
    }
  }
  for (size_t p = 0; p < n && !c->failed; ++p) {
    path_mark mark = enter(c, ".properties.%s", properties->keys[p]);
    char name[128], hintp[160];
    snprintf(hintp, sizeof hintp, "%s-%s", hint, properties->keys[p]);
    fresh_name(c, hintp, name, sizeof name);
    char value[140];
    snprintf(value, sizeof value, "%s", name);
    if (claim(c, name))
      define_inside(c, name, &properties->items[p]);
    tfm_text_buffer entry = {0};
    tfm_json key = {TFM_JSON_STRING, 0, properties->keys[p],
                    strlen(properties->keys[p]), NULL, NULL, 0};
    tfm_text_buffer quoted = {0};
    json_text(&quoted, &key);
    literal(&entry, quoted.text ? quoted.text : "", quoted.length);
    free(quoted.text);
    tfm_text_printf(&entry, " space \":\" space %s", value);
    kv[p] = entry.text;
    leave(c, mark);
  }
  /* Properties beyond those named: allowed (true or {}) only where none
   * are named, since an extra key could repeat a named one with a value
   * its schema refuses; absent or false, none (as OpenAI's strict mode and
   * llama.cpp read it). */
  int extra = 0;
  if (additional) {
    if (additional->kind == TFM_JSON_TRUE ||
        (additional->kind == TFM_JSON_OBJECT && additional->count == 0)) {
      extra = 1;
      if (n > 0) {
        path_mark mark = enter(c, ".additionalProperties");
        fail(c, "other properties beside named ones are not supported yet "
                "(use false, or no 'properties')");
        leave(c, mark);
      }
    } else if (additional->kind != TFM_JSON_FALSE) {
      path_mark mark = enter(c, ".additionalProperties");
      fail(c, "only true, false or {} are supported");
      leave(c, mark);
    }
  }
  if (!c->failed) {
    use_primitive(c, "space");
    tfm_text_puts(expr, "\"{\" space");
    int first = 1;
    for (size_t p = 0; p < n; ++p)
      if (is_required[p]) {
        tfm_text_printf(expr, " %s%s", first ? "" : "\",\" space ", kv[p]);
        first = 0;
      }
    /* Optional ones: after a required one, each "," kv optional; with
     * none required, any of them may start the list. */
    size_t optional_count = 0;
    for (size_t p = 0; p < n; ++p)
      optional_count += !is_required[p];
    if (optional_count && !first) {
      for (size_t p = 0; p < n; ++p)
        if (!is_required[p])
          tfm_text_printf(expr, " ( \",\" space %s )?", kv[p]);
    } else if (optional_count) {
      tfm_text_puts(expr, " (");
      int alternative = 0;
      for (size_t p = 0; p < n; ++p) {
        if (is_required[p])
          continue;
        tfm_text_printf(expr, "%s %s", alternative ? " |" : "", kv[p]);
        for (size_t q = p + 1; q < n; ++q)
          if (!is_required[q])
            tfm_text_printf(expr, " ( \",\" space %s )?", kv[q]);
        alternative = 1;
      }
      tfm_text_puts(expr, " )?");
      first = 0; /* an optional list may be empty: extras below start it */
    }
    if (extra) {
      use_primitive(c, "string");
      use_primitive(c, "value");
      tfm_text_puts(expr, " ( string \":\" space value ( \",\" space string \":\" "
                  "space value )* )?");
    }
    tfm_text_puts(expr, " \"}\" space");
  }
  for (size_t p = 0; p < n; ++p)
    free(kv[p]);
  free(kv);
  free(is_required);
}

static void array_rule(converter *c, const tfm_json *schema, const char *hint,
                       tfm_text_buffer *expr) {
  const tfm_json *items = tfm_json_get(schema, "items");
  const tfm_json *prefix = tfm_json_get(schema, "prefixItems");
  long min = count_keyword(c, schema, "minItems");
  long max = count_keyword(c, schema, "maxItems");
  if (c->failed)
    return;
  if (min < 0)
    min = 0;
  if (max >= 0 && max < min) {
    fail(c, "'maxItems' below 'minItems'");
    return;
  }
  use_primitive(c, "space");
  if (prefix) {
    if (prefix->kind != TFM_JSON_ARRAY || prefix->count == 0) {
      fail(c, "'prefixItems' must be a non-empty array of schemas");
      return;
    }
    if ((items && items->kind != TFM_JSON_FALSE) || min > 0 || max >= 0) {
      fail(c, "'prefixItems' is supported with \"items\": false only, "
              "without minItems or maxItems (a tuple)");
      return;
    }
    tfm_text_puts(expr, "\"[\" space");
    for (size_t i = 0; i < prefix->count && !c->failed; ++i) {
      path_mark mark = enter(c, ".prefixItems[%zu]", i);
      char name[128], sub[160];
      snprintf(sub, sizeof sub, "%s-%zu", hint, i);
      fresh_name(c, sub, name, sizeof name);
      if (claim(c, name))
        define_inside(c, name, &prefix->items[i]);
      tfm_text_printf(expr, " %s%s", i ? "\",\" space " : "", name);
      leave(c, mark);
    }
    tfm_text_puts(expr, " \"]\" space");
    return;
  }
  char item[128];
  if (items && items->kind != TFM_JSON_TRUE &&
      !(items->kind == TFM_JSON_OBJECT && items->count == 0)) {
    path_mark mark = enter(c, ".items");
    char sub[160];
    snprintf(sub, sizeof sub, "%s-item", hint);
    fresh_name(c, sub, item, sizeof item);
    if (claim(c, item))
      define_inside(c, item, items);
    leave(c, mark);
  } else {
    use_primitive(c, "value");
    snprintf(item, sizeof item, "value");
  }
  tfm_text_puts(expr, "\"[\" space ");
  if (max == 0) {
    tfm_text_puts(expr, "\"]\" space");
    return;
  }
  if (min == 0)
    tfm_text_puts(expr, "( ");
  tfm_text_printf(expr, "%s ( \",\" space %s )", item, item);
  repetition(expr, min ? min - 1 : 0, max < 0 ? -1 : max - 1);
  if (min == 0)
    tfm_text_puts(expr, " )?");
  tfm_text_puts(expr, " \"]\" space");
}

static void string_rule(converter *c, const tfm_json *schema, tfm_text_buffer *expr) {
  const tfm_json *format = tfm_json_get(schema, "format");
  const tfm_json *pattern = tfm_json_get(schema, "pattern");
  long min = count_keyword(c, schema, "minLength");
  long max = count_keyword(c, schema, "maxLength");
  if (c->failed)
    return;
  use_primitive(c, "space");
  if (pattern) {
    path_mark mark = enter(c, ".pattern");
    if (pattern->kind != TFM_JSON_STRING)
      fail(c, "'pattern' must be a string");
    else if (format || min >= 0 || max >= 0)
      fail(c, "'pattern' with 'format', 'minLength' or 'maxLength' is not "
              "supported");
    char error[200];
    char *body = c->failed ? NULL
                           : tfm_schema_pattern(pattern->text, error,
                                                sizeof error);
    if (!c->failed && !body)
      fail(c, "%s", error);
    if (body)
      tfm_text_printf(expr, "\"\\\"\" (%s ) \"\\\"\" space", body);
    free(body);
    leave(c, mark);
    return;
  }
  if (format) {
    static const char *const kFormats[] = {"date", "time", "date-time",
                                           "uuid", NULL};
    if (format->kind != TFM_JSON_STRING || !is_one_of(format->text, kFormats)) {
      path_mark mark = enter(c, ".format");
      fail(c, "unsupported format (supported: date, time, date-time, uuid)");
      leave(c, mark);
      return;
    }
    if (min >= 0 || max >= 0) {
      fail(c, "'format' with 'minLength' or 'maxLength' is not supported");
      return;
    }
    use_primitive(c, format->text);
    tfm_text_printf(expr, "\"\\\"\" %s \"\\\"\" space", format->text);
    return;
  }
  const char *character = max >= 0 ? "char-bmp" : "char";
  use_primitive(c, character);
  if (max >= 0 && max < (min < 0 ? 0 : min)) {
    fail(c, "'maxLength' below 'minLength'");
    return;
  }
  tfm_text_printf(expr, "\"\\\"\" %s", character);
  if (min < 0 && max < 0)
    tfm_text_puts(expr, "*");
  else
    repetition(expr, min < 0 ? 0 : min, max);
  tfm_text_puts(expr, " \"\\\"\" space");
}

/* A number's bounds (minimum, exclusiveMinimum, maximum,
 * exclusiveMaximum) where they are whole numbers: the decimal texts
 * between them, no exponent. Fractional bounds are refused. */
static void number_range(converter *c, const tfm_json *schema,
                         tfm_text_buffer *expr) {
  static const char *const kBounds[] = {"minimum", "exclusiveMinimum",
                                        "maximum", "exclusiveMaximum"};
  int has[2] = {0, 0}, open[2] = {0, 0};
  int64_t value[2] = {0, 0};
  for (int i = 0; i < 4; ++i) {
    const tfm_json *bound = tfm_json_get(schema, kBounds[i]);
    if (!bound)
      continue;
    path_mark mark = enter(c, ".%s", kBounds[i]);
    if (bound->kind != TFM_JSON_NUMBER || bound->number != floor(bound->number) ||
        fabs(bound->number) > (double)TFM_SCHEMA_MAX_INTEGER) {
      fail(c, "a number's bounds must be whole numbers of up to 16 digits "
              "(an integer's may be any)");
      leave(c, mark);
      return;
    }
    leave(c, mark);
    int side = i / 2; /* 0: lower, 1: upper */
    int64_t v = (int64_t)bound->number;
    int is_open = i % 2;
    /* The tighter of a bound and its exclusive form. */
    int tighter = !has[side] ||
                  (side == 0 ? v > value[0] || (v == value[0] && is_open)
                             : v < value[1] || (v == value[1] && is_open));
    if (tighter) {
      has[side] = 1;
      value[side] = v;
      open[side] = is_open;
    }
  }
  int empty = 0;
  char *range = tfm_schema_number_range(has[0], value[0], open[0], has[1],
                                        value[1], open[1], &empty);
  if (!range) {
    fail(c, empty ? "no number lies within the bounds" : "out of memory");
    return;
  }
  use_primitive(c, "space");
  tfm_text_printf(expr, "%s space", range);
  free(range);
}

/* allOf: one schema (pydantic's {"allOf": [{"$ref": ...}], "description":
 * ...}) is that schema; object schemas are merged (schema_all_of.c). */
static void all_of(converter *c, const tfm_json *schema, const char *hint,
                   tfm_text_buffer *expr) {
  const tfm_json *all = tfm_json_get(schema, "allOf");
  int alone = all->kind == TFM_JSON_ARRAY && all->count == 1;
  for (size_t i = 0; alone && i < schema->count; ++i)
    alone = strcmp(schema->keys[i], "allOf") == 0 ||
            tfm_schema_is_annotation(schema->keys[i]);
  path_mark mark = enter(c, ".allOf");
  if (alone) {
    path_mark item = enter(c, "[0]");
    visit(c, &all->items[0], hint, expr);
    leave(c, item);
    leave(c, mark);
    return;
  }
  char error[300];
  tfm_json *merged = tfm_schema_merge_all_of(schema, c->root, error,
                                             sizeof error);
  if (!merged)
    fail(c, "%s", error);
  leave(c, mark);
  if (merged)
    visit(c, merged, hint, expr);
  tfm_schema_merged_free(merged);
}

/* Whether a number schema bounds its values. */
static int has_bounds(const tfm_json *schema) {
  return tfm_json_get(schema, "minimum") || tfm_json_get(schema, "maximum") ||
         tfm_json_get(schema, "exclusiveMinimum") ||
         tfm_json_get(schema, "exclusiveMaximum");
}

/* An integer's bounds (minimum, maximum, exclusiveMinimum and
 * exclusiveMaximum as numbers, JSON Schema 2019 on) as the integers they
 * allow, digit by digit; past 16 digits is the integer primitive's limit. */
static void integer_range(converter *c, const tfm_json *schema,
                          tfm_text_buffer *expr) {
  double low = -(double)TFM_SCHEMA_MAX_INTEGER;
  double high = (double)TFM_SCHEMA_MAX_INTEGER;
  static const char *const kBounds[] = {"minimum", "exclusiveMinimum",
                                        "maximum", "exclusiveMaximum"};
  for (int i = 0; i < 4; ++i) {
    const tfm_json *bound = tfm_json_get(schema, kBounds[i]);
    if (!bound)
      continue;
    if (bound->kind != TFM_JSON_NUMBER || !isfinite(bound->number)) {
      path_mark mark = enter(c, ".%s", kBounds[i]);
      fail(c, "'%s' must be a number", kBounds[i]);
      leave(c, mark);
      return;
    }
    double v = bound->number;
    if (i == 0)
      low = fmax(low, ceil(v));
    else if (i == 1)
      low = fmax(low, floor(v) + 1);
    else if (i == 2)
      high = fmin(high, floor(v));
    else
      high = fmin(high, ceil(v) - 1);
  }
  if (low > high) {
    fail(c, "no integer lies within the bounds%s",
         low > (double)TFM_SCHEMA_MAX_INTEGER ||
                 high < -(double)TFM_SCHEMA_MAX_INTEGER
             ? " of 16 digits"
             : "");
    return;
  }
  char *range = tfm_schema_integer_range((int64_t)low, (int64_t)high);
  if (!range) {
    fail(c, "out of memory");
    return;
  }
  use_primitive(c, "space");
  tfm_text_printf(expr, "%s space", range);
  free(range);
}

static void visit(converter *c, const tfm_json *schema, const char *hint,
                  tfm_text_buffer *expr) {
  if (c->failed)
    return;
  if (schema->kind == TFM_JSON_TRUE ||
      (schema->kind == TFM_JSON_OBJECT && schema->count == 0)) {
    use_primitive(c, "value");
    tfm_text_puts(expr, "value");
    return;
  }
  if (schema->kind != TFM_JSON_OBJECT) {
    fail(c, "a schema must be an object or true");
    return;
  }
  /* What each type reads; anything else is refused by name. */
  static const char *const kCommon[] = {"type", "const", "enum", "anyOf",
                                        "oneOf", "allOf", "$ref", NULL};
  static const char *const kObject[] = {"properties", "required",
                                        "additionalProperties", NULL};
  static const char *const kArray[] = {"items", "prefixItems", "minItems",
                                       "maxItems", NULL};
  static const char *const kString[] = {"minLength", "maxLength", "format",
                                        "pattern", NULL};
  static const char *const kNumber[] = {"minimum", "maximum",
                                        "exclusiveMinimum",
                                        "exclusiveMaximum", NULL};
  for (size_t i = 0; i < schema->count; ++i) {
    const char *key = schema->keys[i];
    if (tfm_schema_is_annotation(key) || is_one_of(key, kCommon) ||
        is_one_of(key, kObject) || is_one_of(key, kArray) ||
        is_one_of(key, kString) || is_one_of(key, kNumber))
      continue;
    path_mark mark = enter(c, ".%s", key);
    fail(c, "the keyword '%s' is not supported", key);
    leave(c, mark);
    return;
  }
  const tfm_json *ref = tfm_json_get(schema, "$ref");
  const tfm_json *constant = tfm_json_get(schema, "const");
  const tfm_json *choices = tfm_json_get(schema, "enum");
  const tfm_json *any = tfm_json_get(schema, "anyOf");
  const tfm_json *one = tfm_json_get(schema, "oneOf");
  const tfm_json *type = tfm_json_get(schema, "type");
  if (ref) {
    if (ref->kind != TFM_JSON_STRING) {
      fail(c, "'$ref' must be a string");
      return;
    }
    reference(c, ref->text, expr);
    return;
  }
  if (tfm_json_get(schema, "allOf")) {
    all_of(c, schema, hint, expr);
    return;
  }
  if (constant || choices) {
    use_primitive(c, "space");
    if (choices && (choices->kind != TFM_JSON_ARRAY || !choices->count)) {
      fail(c, "'enum' must be a non-empty array");
      return;
    }
    tfm_text_put(expr, "(", 1);
    size_t count = constant ? 1 : choices->count;
    for (size_t i = 0; i < count; ++i) {
      tfm_text_buffer text = {0};
      json_text(&text, constant ? constant : &choices->items[i]);
      tfm_text_puts(expr, i ? " | " : " ");
      literal(expr, text.text ? text.text : "", text.length);
      free(text.text);
    }
    tfm_text_puts(expr, " ) space");
    return;
  }
  if (any || one) {
    alternatives(c, any ? any : one, hint, any ? "anyOf" : "oneOf", expr);
    return;
  }
  if (type && type->kind == TFM_JSON_ARRAY) {
    /* Several types: each as the schema with that type alone, and only
     * the keywords of that type ({"type": ["string", "null"],
     * "maxLength": 5} bounds the string). */
    static const char *const *const kByType[] = {kObject, kArray, kString,
                                                 kNumber};
    static const char *const kTypeNames[][2] = {{"object", NULL},
                                                {"array", NULL},
                                                {"string", NULL},
                                                {"integer", "number"}};
    tfm_text_put(expr, "(", 1);
    for (size_t i = 0; i < type->count && !c->failed; ++i) {
      const tfm_json *name = &type->items[i];
      tfm_json one_type = *schema;
      tfm_json *items = malloc(schema->count * sizeof *items);
      char **keys = malloc(schema->count * sizeof *keys);
      if (!items || !keys) {
        free(items);
        free(keys);
        fail(c, "out of memory");
        return;
      }
      size_t kept = 0;
      for (size_t k = 0; k < schema->count; ++k) {
        int other = 0; /* a keyword of a type other than this one */
        for (size_t t = 0; t < 4; ++t)
          if (is_one_of(schema->keys[k], kByType[t]) &&
              !(name->kind == TFM_JSON_STRING &&
                (strcmp(name->text, kTypeNames[t][0]) == 0 ||
                 (kTypeNames[t][1] &&
                  strcmp(name->text, kTypeNames[t][1]) == 0))))
            other = 1;
        if (other)
          continue;
        keys[kept] = schema->keys[k];
        items[kept++] = strcmp(schema->keys[k], "type") == 0
                            ? *name
                            : schema->items[k];
      }
      one_type.items = items;
      one_type.keys = keys;
      one_type.count = kept;
      tfm_text_puts(expr, i ? " | " : " ");
      tfm_text_put(expr, "(", 1);
      visit(c, &one_type, hint, expr);
      tfm_text_put(expr, ")", 1);
      free(items);
      free(keys);
    }
    tfm_text_puts(expr, " )");
    return;
  }
  const char *kind = NULL;
  if (type) {
    if (type->kind != TFM_JSON_STRING) {
      fail(c, "'type' must be a string or an array of them");
      return;
    }
    kind = type->text;
  } else if (tfm_json_get(schema, "properties")) {
    kind = "object";
  } else if (tfm_json_get(schema, "items") ||
             tfm_json_get(schema, "prefixItems")) {
    kind = "array";
  }
  /* A keyword of another type than the schema's is refused too. */
  const char *const *own = !kind                         ? NULL
                           : strcmp(kind, "object") == 0 ? kObject
                           : strcmp(kind, "array") == 0  ? kArray
                           : strcmp(kind, "string") == 0 ? kString
                           : strcmp(kind, "integer") == 0 ||
                                   strcmp(kind, "number") == 0
                               ? kNumber
                               : NULL;
  for (size_t i = 0; i < schema->count; ++i) {
    const char *key = schema->keys[i];
    if (tfm_schema_is_annotation(key) || is_one_of(key, kCommon) ||
        (own && is_one_of(key, own)))
      continue;
    path_mark mark = enter(c, ".%s", key);
    fail(c, "'%s' does not apply to %s", key,
         kind ? kind : "a schema without a type");
    leave(c, mark);
    return;
  }
  if (!kind) {
    use_primitive(c, "value");
    tfm_text_puts(expr, "value");
  } else if (strcmp(kind, "object") == 0) {
    object_rule(c, schema, hint, expr);
  } else if (strcmp(kind, "array") == 0) {
    array_rule(c, schema, hint, expr);
  } else if (strcmp(kind, "string") == 0) {
    string_rule(c, schema, expr);
  } else if (strcmp(kind, "integer") == 0 && has_bounds(schema)) {
    integer_range(c, schema, expr);
  } else if (strcmp(kind, "number") == 0 && has_bounds(schema)) {
    number_range(c, schema, expr);
  } else if (strcmp(kind, "integer") == 0 || strcmp(kind, "number") == 0) {
    /* Unbounded (bounded ones are ranges, above). */
    use_primitive(c, kind);
    tfm_text_puts(expr, kind);
  } else if (strcmp(kind, "boolean") == 0 || strcmp(kind, "null") == 0) {
    use_primitive(c, kind);
    tfm_text_puts(expr, kind);
  } else {
    path_mark mark = enter(c, ".type");
    fail(c, "unknown type \"%s\"", kind);
    leave(c, mark);
  }
}

tfm_status_code tfm_json_schemas_to_gbnf(const char *const *schemas,
                                         const char *const *rules,
                                         size_t count, char **gbnf,
                                         tfm_status *status) {
  if ((!schemas || !rules) && count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_json_schemas_to_gbnf: NULL argument");
  if (!gbnf)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_json_schemas_to_gbnf: NULL argument");
  converter c = {0};
  char where[32] = "";
  for (size_t i = 0; i < count && !c.failed; ++i) {
    if (!schemas[i] || !rules[i])
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "tfm_json_schemas_to_gbnf: NULL schema or rule name");
    /* Schema i's messages say which it is where there are several. */
    if (count > 1)
      snprintf(where, sizeof where, "schema %zu: ", i);
    char error[400];
    tfm_json *root = tfm_json_parse(schemas[i], error, sizeof error);
    if (!root) {
      for (size_t k = 0; k < c.name_count; ++k)
        free(c.names[k]);
      free(c.names);
      free(c.rules.text);
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "json schema: %snot JSON: %s", where, error);
    }
    c.root = root;
    c.root_rule = rules[i];
    c.scope = i;
    snprintf(c.path, sizeof c.path, "$");
    if (has_rule(&c, rules[i]))
      fail(&c, "the rule name '%s' is given twice", rules[i]);
    else if (claim(&c, rules[i]))
      define(&c, rules[i], root);
    tfm_json_free(root);
  }
  if (c.rules.failed)
    fail(&c, "out of memory");
  for (size_t i = 0; i < c.name_count; ++i)
    free(c.names[i]);
  free(c.names);
  if (c.failed) {
    free(c.rules.text);
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "json schema: %s%s",
                    where, c.error);
  }
  *gbnf = c.rules.text ? c.rules.text : strdup("");
  return *gbnf ? tfm_ok(status)
               : tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
}

tfm_status_code tfm_json_schema_to_gbnf(const char *schema, char **gbnf,
                                        tfm_status *status) {
  if (!schema || !gbnf)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_json_schema_to_gbnf: NULL argument");
  const char *rule = "root";
  return tfm_json_schemas_to_gbnf(&schema, &rule, 1, gbnf, status);
}
