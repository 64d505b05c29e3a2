/*===- text_buffer.c - a growing text for the writers of GBNF -----------===//
 *
 * text_buffer.h says what it is for.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/grammar/text_buffer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tfm_text_put(tfm_text_buffer *b, const char *s, size_t n) {
  if (b->failed)
    return;
  if (b->length + n + 1 > b->capacity) {
    size_t next = b->capacity ? b->capacity * 2 : 256;
    while (next < b->length + n + 1)
      next *= 2;
    char *grown = realloc(b->text, next);
    if (!grown) {
      b->failed = 1;
      return;
    }
    b->text = grown;
    b->capacity = next;
  }
  memcpy(b->text + b->length, s, n);
  b->length += n;
  b->text[b->length] = '\0';
}

void tfm_text_puts(tfm_text_buffer *b, const char *s) { tfm_text_put(b, s, strlen(s)); }

void tfm_text_printf(tfm_text_buffer *b, const char *format, ...) {
  char small[256];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(small, sizeof small, format, args);
  va_end(args);
  if (n < 0) {
    b->failed = 1;
  } else if ((size_t)n < sizeof small) {
    tfm_text_put(b, small, (size_t)n);
  } else {
    /* Longer (a rule's whole body): formatted again into its own room. */
    char *large = malloc((size_t)n + 1);
    if (!large) {
      b->failed = 1;
      return;
    }
    va_start(args, format);
    vsnprintf(large, (size_t)n + 1, format, args);
    va_end(args);
    tfm_text_put(b, large, (size_t)n);
    free(large);
  }
}

