/*===- read_file.c - a whole file into memory ---------------------------===*/

#include "runtime/read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

uint8_t *tfm_read_file(const char *path, size_t *size) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
  size_t capacity = 4096, used = 0, got;
  uint8_t *data = malloc(capacity);
  /* One byte always stays free for the NUL. */
  while (data && (got = fread(data + used, 1, capacity - used - 1, file)) > 0) {
    used += got;
    if (used + 1 == capacity) {
      uint8_t *grown = realloc(data, capacity *= 2);
      if (!grown)
        free(data);
      data = grown;
    }
  }
  int failed = ferror(file);
  fclose(file);
  if (data && failed) {
    free(data);
    data = NULL;
    errno = EIO;
  }
  if (!data)
    return NULL; /* errno: ENOMEM from malloc, or EIO */
  data[used] = '\0';
  *size = used;
  return data;
}
