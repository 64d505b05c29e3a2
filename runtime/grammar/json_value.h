/* json_value.h - a JSON document as a tree, for the schema converter
 * (json_schema.c). Strict RFC 8259: no comments, no trailing commas, no
 * NaN; strings' escapes decoded (a \u0000 or an unpaired surrogate is
 * refused: schemas are text); nesting bounded. */
#ifndef TFM_RUNTIME_GRAMMAR_JSON_VALUE_H
#define TFM_RUNTIME_GRAMMAR_JSON_VALUE_H

#include <stddef.h>

typedef enum {
  TFM_JSON_NULL,
  TFM_JSON_FALSE,
  TFM_JSON_TRUE,
  TFM_JSON_NUMBER,
  TFM_JSON_STRING,
  TFM_JSON_ARRAY,
  TFM_JSON_OBJECT
} tfm_json_kind;

typedef struct tfm_json tfm_json;
struct tfm_json {
  tfm_json_kind kind;
  double number;
  /* STRING: its UTF-8 text; NUMBER: its text as written (for const and
   * enum, which must match it digit for digit). */
  char *text;
  size_t length;
  /* ARRAY: items; OBJECT: values, keys[i] naming items[i]. */
  tfm_json *items;
  char **keys;
  size_t count;
};

/* Parses `text`; NULL with "offset N: what" in `error` when it is not one
 * JSON value. */
tfm_json *tfm_json_parse(const char *text, char *error, size_t error_size);
void tfm_json_free(tfm_json *value);
/* The member `key` of an object; NULL when absent or not an object. */
const tfm_json *tfm_json_get(const tfm_json *object, const char *key);

#endif /* TFM_RUNTIME_GRAMMAR_JSON_VALUE_H */
