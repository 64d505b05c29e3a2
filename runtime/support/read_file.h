/*===- read_file.h - a whole file into memory (not the runtime's API) -*- C
 * -*-===*/

#ifndef TFM_RUNTIME_SUPPORT_READ_FILE_H
#define TFM_RUNTIME_SUPPORT_READ_FILE_H

#include <stddef.h>
#include <stdint.h>

/* The whole of the file at `path`, malloc'd and followed by a NUL byte that
 * `*size` does not count (so that text is also a string); NULL with errno
 * set when it cannot be read or memory runs out. */
uint8_t *tfm_read_file(const char *path, size_t *size);

/* As tfm_read_file, but a file of more than `max_size` bytes is refused
 * with errno EFBIG after reading at most max_size + 1 of its bytes (a
 * prompt bigger than the context is not read whole; pipes have no size to
 * ask for). */
uint8_t *tfm_read_file_at_most(const char *path, size_t max_size,
                               size_t *size);

#endif /* TFM_RUNTIME_SUPPORT_READ_FILE_H */
