/*===- schema_all_of.c - allOf of object schemas as one ------------------===//
 *
 * Pydantic and zod write a model that extends another as allOf: the base's
 * $ref and the new properties. The instances are the objects every part
 * accepts; for parts that only name properties (no additionalProperties
 * false) that is one object schema with all of their properties and all
 * of their required names, which json_schema.c then writes as any other.
 * Anything else under allOf is refused: intersecting other constraints is
 * not a merge of lists.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/grammar/schema_terms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxParts = 64 };

/* "#/$defs/NAME" or "#/definitions/NAME" in `root`; NULL otherwise. */
static const tfm_json *resolve(const tfm_json *root, const char *ref) {
  if (strncmp(ref, "#/$defs/", 8) == 0)
    return tfm_json_get(tfm_json_get(root, "$defs"), ref + 8);
  if (strncmp(ref, "#/definitions/", 14) == 0)
    return tfm_json_get(tfm_json_get(root, "definitions"), ref + 14);
  return NULL;
}

/* Checks that `part` only names properties; 0 with `error` otherwise. */
static int object_part(const tfm_json *part, const char *where, char *error,
                       size_t error_size) {
  if (part->kind != TFM_JSON_OBJECT) {
    snprintf(error, error_size, "%s is not an object schema", where);
    return 0;
  }
  for (size_t i = 0; i < part->count; ++i) {
    const char *key = part->keys[i];
    const tfm_json *value = &part->items[i];
    int fits =
        tfm_schema_is_annotation(key) || strcmp(key, "allOf") == 0 ||
        (strcmp(key, "properties") == 0 && value->kind == TFM_JSON_OBJECT) ||
        (strcmp(key, "required") == 0 && value->kind == TFM_JSON_ARRAY) ||
        (strcmp(key, "type") == 0 && value->kind == TFM_JSON_STRING &&
         strcmp(value->text, "object") == 0) ||
        (strcmp(key, "additionalProperties") == 0 &&
         value->kind == TFM_JSON_TRUE);
    if (!fits) {
      snprintf(error, error_size,
               "allOf merges object schemas that name properties; %s has "
               "'%s'",
               where, key);
      return 0;
    }
  }
  return 1;
}

void tfm_schema_merged_free(tfm_json *merged) {
  if (!merged)
    return;
  for (size_t i = 0; i < merged->count; ++i) {
    free(merged->items[i].items);
    free(merged->items[i].keys);
  }
  free(merged->items);
  free(merged->keys);
  free(merged);
}

tfm_json *tfm_schema_merge_all_of(const tfm_json *schema, const tfm_json *root,
                                  char *error, size_t error_size) {
  const tfm_json *all = tfm_json_get(schema, "allOf");
  if (!all || all->kind != TFM_JSON_ARRAY || all->count == 0 ||
      all->count >= kMaxParts) {
    snprintf(error, error_size, "'allOf' must be an array of 1 to %d schemas",
             kMaxParts - 1);
    return NULL;
  }
  const tfm_json *parts[kMaxParts];
  size_t count = 0;
  parts[count++] = schema; /* its own keywords beside allOf */
  for (size_t i = 0; i < all->count; ++i) {
    const tfm_json *part = &all->items[i];
    const tfm_json *ref = tfm_json_get(part, "$ref");
    if (ref && ref->kind == TFM_JSON_STRING) {
      const tfm_json *target = resolve(root, ref->text);
      if (!target) {
        snprintf(error, error_size,
                 "allOf[%zu]: $ref \"%s\" is not a definition in #/$defs or "
                 "#/definitions",
                 i, ref->text);
        return NULL;
      }
      part = target;
    }
    char where[32];
    snprintf(where, sizeof where, "allOf[%zu]", i);
    if (!object_part(part, where, error, error_size))
      return NULL;
    if (tfm_json_get(part, "allOf")) {
      snprintf(error, error_size, "%s holds an allOf of its own", where);
      return NULL;
    }
    parts[count++] = part;
  }
  if (!object_part(schema, "the schema beside allOf", error, error_size))
    return NULL;

  size_t property_count = 0, required_count = 0;
  for (size_t i = 0; i < count; ++i) {
    const tfm_json *properties = tfm_json_get(parts[i], "properties");
    const tfm_json *required = tfm_json_get(parts[i], "required");
    property_count += properties ? properties->count : 0;
    required_count += required ? required->count : 0;
  }
  tfm_json *merged = calloc(1, sizeof *merged);
  tfm_json *items = calloc(3, sizeof *items);
  char **keys = calloc(3, sizeof *keys);
  tfm_json *property_items = calloc(property_count + 1, sizeof *property_items);
  char **property_keys = calloc(property_count + 1, sizeof *property_keys);
  tfm_json *required_items = calloc(required_count + 1, sizeof *required_items);
  if (!merged || !items || !keys || !property_items || !property_keys ||
      !required_items) {
    free(merged), free(items), free(keys), free(property_items);
    free(property_keys), free(required_items);
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  static char kType[] = "type", kObject[] = "object",
              kProperties[] = "properties", kRequired[] = "required";
  merged->kind = TFM_JSON_OBJECT;
  merged->items = items;
  merged->keys = keys;
  merged->count = 3;
  keys[0] = kType;
  items[0] = (tfm_json){TFM_JSON_STRING, 0, kObject, 6, NULL, NULL, 0};
  keys[1] = kProperties;
  items[1] = (tfm_json){TFM_JSON_OBJECT, 0, NULL, 0, property_items,
                        property_keys, 0};
  keys[2] = kRequired;
  items[2] = (tfm_json){TFM_JSON_ARRAY, 0, NULL, 0, required_items, NULL, 0};
  for (size_t i = 0; i < count; ++i) {
    const tfm_json *properties = tfm_json_get(parts[i], "properties");
    for (size_t p = 0; properties && p < properties->count; ++p) {
      for (size_t q = 0; q < items[1].count; ++q)
        if (strcmp(property_keys[q], properties->keys[p]) == 0) {
          snprintf(error, error_size,
                   "allOf: the property '%s' is defined by two of its "
                   "schemas",
                   properties->keys[p]);
          tfm_schema_merged_free(merged);
          return NULL;
        }
      property_keys[items[1].count] = properties->keys[p];
      property_items[items[1].count++] = properties->items[p];
    }
    const tfm_json *required = tfm_json_get(parts[i], "required");
    for (size_t r = 0; required && r < required->count; ++r)
      required_items[items[2].count++] = required->items[r];
  }
  return merged;
}
