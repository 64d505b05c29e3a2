/*===- image_internal.h - decoded images (runtime-internal) ------*- C -*-===//
 *
 * What image_decode.c hands image_preprocess.c: 8-bit RGB pixels, row by
 * row.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_MEDIA_IMAGE_INTERNAL_H
#define TFM_RUNTIME_MEDIA_IMAGE_INTERNAL_H

#include "tfm/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint8_t *pixels; /* [height][width][3], malloc'd */
  int64_t width, height;
} tfm_rgb_image;

/* Decodes a PNG or JPEG file's bytes (told apart by their signature) into
 * `image`; 0 with a message in `error` when they are not a valid image of
 * either format. */
int tfm_decode_image(const uint8_t *data, size_t size, tfm_rgb_image *image,
                     char *error, size_t capacity);

/* The whole image file at `path` (malloc'd, its byte count in `*size`), or
 * NULL with `status` naming the file and why it cannot be read. */
uint8_t *tfm_read_image_file(const char *path, size_t *size,
                             tfm_status *status);

#endif /* TFM_RUNTIME_MEDIA_IMAGE_INTERNAL_H */
