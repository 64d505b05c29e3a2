/*===- read_file.c - a whole file into memory ---------------------------===*/

#include "runtime/support/read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Room left in the buffer, but no further than one byte past `left` (the
 * bytes a file may still have): enough to tell that it is too long. */
static size_t want(size_t room, size_t left) {
  return room < left + 1 ? room : left + 1;
}

uint8_t *tfm_read_file(const char *path, size_t *size) {
  return tfm_read_file_at_most(path, SIZE_MAX - 1, size);
}

uint8_t *tfm_read_file_at_most(const char *path, size_t max_size,
                               size_t *size) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
  size_t capacity = 4096, used = 0, got;
  uint8_t *data = malloc(capacity);
  /* One byte always stays free for the NUL. */
  while (data && used <= max_size &&
         (got = fread(data + used, 1, want(capacity - used - 1, max_size - used),
                      file)) > 0) {
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
  if (data && used > max_size) {
    free(data);
    data = NULL;
    errno = EFBIG;
  }
  if (!data)
    return NULL; /* errno: ENOMEM from malloc, EIO, or EFBIG */
  data[used] = '\0';
  *size = used;
  return data;
}
