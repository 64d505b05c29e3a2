/* schema_terms.h - JSON Schema keywords that json_schema.c leaves to
 * others: allOf merged into one object schema (schema_all_of.c), and GBNF
 * expressions for two keywords whose grammars are built character by
 * character (schema_terms.c), an integer range (minimum, maximum and their
 * exclusive forms) and a string `pattern` (a regular expression).
 * json_schema.c puts them inside its rules. */
#ifndef TFM_RUNTIME_GRAMMAR_SCHEMA_TERMS_H
#define TFM_RUNTIME_GRAMMAR_SCHEMA_TERMS_H

#include "runtime/grammar/json_value.h"

#include <stddef.h>
#include <stdint.h>

/* The largest magnitude a JSON integer has in tfmc's grammars: 16 digits,
 * as the `integral-part` primitive allows. */
#define TFM_SCHEMA_MAX_INTEGER 9999999999999999LL

/* The integers from `low` to `high` (inclusive, |each| <= the maximum
 * above, low <= high) as a GBNF expression of their decimal texts (no
 * leading zeros, "-0" never): digit by digit, as llama.cpp's
 * json-schema-to-grammar bounds integers. malloc'd; NULL out of memory. */
char *tfm_schema_integer_range(int64_t low, int64_t high);

/* The numbers (decimal, no exponent) within bounds that are whole
 * numbers: `low` (if `has_low`; excluded if `low_open`) to `high` (the
 * same). Integer parts as tfm_schema_integer_range writes them, up to 16
 * fraction digits; "-0" never. NULL where no number lies within them, or
 * out of memory (`*empty` says which). */
char *tfm_schema_number_range(int has_low, int64_t low, int low_open,
                              int has_high, int64_t high, int high_open,
                              int *empty);

/* A regular expression (ECMAScript's syntax, the subset below) as a GBNF
 * expression of the JSON string bodies (between the quotes, escapes
 * spelled as JSON spells them) whose decoded text it matches, or NULL with
 * `error` saying what and at which offset. Supported: literals and
 * escapes (\d \D \w \W \s \S \. \\ \/ \- \n \t \r \uXXXX ...), `.`,
 * classes [a-z0-9_] and [^...], groups (...) and (?:...), `|`, the
 * quantifiers * + ? {m} {m,} {m,n} (lazy forms match the same texts),
 * and the anchors ^ at the start and $ at the end (without them the match
 * may have text before or after, as JSON Schema's `pattern` searches).
 * Backreferences, lookarounds, \b and anchors elsewhere are refused. */
char *tfm_schema_pattern(const char *regex, char *error, size_t error_size);

/* Whether `key` is an annotation (title, description, default, $defs,
 * ...): read past, it constrains nothing (json_schema.c). */
int tfm_schema_is_annotation(const char *key);

/* allOf over object schemas as one object schema: the parts (allOf's
 * schemas, "#/$defs/..." references among them resolved in `root`, and the
 * schema's own keywords beside allOf) may hold only `type` "object",
 * `properties`, `required`, `additionalProperties` true and annotations; a
 * property may be defined by one part only. The result (free it with
 * tfm_schema_merged_free) shares the parts' values; NULL with `error`
 * saying why. */
tfm_json *tfm_schema_merge_all_of(const tfm_json *schema, const tfm_json *root,
                                  char *error, size_t error_size);
void tfm_schema_merged_free(tfm_json *merged);

#endif
