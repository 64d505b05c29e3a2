/* text_buffer.h - a growing NUL-terminated text, as the JSON Schema
 * converter (json_schema.c) and its parts (schema_terms.c) write GBNF into
 * it. Out of memory sets `failed` and later writes do nothing, so a writer
 * checks once at the end. */
#ifndef TFM_RUNTIME_GRAMMAR_TEXT_BUFFER_H
#define TFM_RUNTIME_GRAMMAR_TEXT_BUFFER_H

#include <stddef.h>

typedef struct {
  char *text; /* NULL until something is written */
  size_t length, capacity;
  int failed; /* out of memory */
} tfm_text_buffer;

void tfm_text_put(tfm_text_buffer *b, const char *s, size_t n);
void tfm_text_puts(tfm_text_buffer *b, const char *s);
/* Formatted text of any length. */
void tfm_text_printf(tfm_text_buffer *b, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#endif
