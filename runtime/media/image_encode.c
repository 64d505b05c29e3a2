/*===- image_encode.c - RGB floats to a PNG file --------------------------===*
 *
 * tfm_image_write_png: a generated image ([H, W, 3] floats in [0, 1]) as
 * an 8-bit RGB PNG through Debian's libpng, each value rounded as
 * diffusers' numpy_to_pil rounds it ((x * 255).round()). libpng reports
 * errors by longjmp; the file is removed after a failed write.
 * tfm_image_encode_png: the same PNG in memory (tfm-serve's images), its
 * bytes the file's: both go through write_image.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxSide = 1 << 16 };

typedef struct {
  char message[256];
} png_failure;

static void on_png_error(png_structp png, png_const_charp message) {
  png_failure *failure = png_get_error_ptr(png);
  snprintf(failure->message, sizeof failure->message, "%s", message);
  png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp message) {
  (void)png;
  (void)message;
}

/* numpy's round: half to even, on the f32 product as numpy computes it. */
static png_byte to_byte(float value) {
  float scaled = value * 255.0f;
  float rounded = nearbyintf(scaled);
  return (png_byte)(rounded < 0.0f ? 0.0f : rounded > 255.0f ? 255.0f
                                                              : rounded);
}

/* Whether a height x width image fits a PNG here (1 to kMaxSide a side). */
static int fits_png(int64_t height, int64_t width) {
  return height > 0 && width > 0 && height <= kMaxSide && width <= kMaxSide;
}

/* The header, each row's bytes and the end, through `png` (its output set
 * up by the caller); `row` holds width * 3 bytes. libpng's errors jump to
 * the caller's setjmp. */
static void write_image(png_structp png, png_infop info, const float *rgb,
                        int64_t height, int64_t width, png_byte *row) {
  png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int64_t y = 0; y < height; ++y) {
    const float *source = rgb + y * width * 3;
    for (int64_t x = 0; x < width * 3; ++x)
      row[x] = to_byte(source[x]);
    png_write_row(png, row);
  }
  png_write_end(png, NULL);
}

tfm_status_code tfm_image_write_png(const char *path, const float *rgb,
                                    int64_t height, int64_t width,
                                    tfm_status *status) {
  if (!path || !rgb)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_write_png: NULL path or pixels");
  if (!fits_png(height, width))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "'%s': a %lldx%lld image is outside what PNG files "
                    "here hold (1 to %d a side)",
                    path, (long long)width, (long long)height, kMaxSide);
  FILE *file = fopen(path, "wb");
  if (!file)
    return tfm_fail(status, TFM_ERROR_IO, "cannot write '%s'", path);
  png_failure failure = {{0}};
  png_byte *row = malloc((size_t)width * 3);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &failure,
                                            on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!row || !png || !info) {
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    free(row);
    fclose(file);
    remove(path);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "no memory to write '%s'", path);
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    free(row);
    fclose(file);
    remove(path);
    return tfm_fail(status, TFM_ERROR_IO, "cannot write '%s': %s", path,
                    failure.message);
  }
  png_init_io(png, file);
  write_image(png, info, rgb, height, width, row);
  png_destroy_write_struct(&png, &info);
  free(row);
  if (fclose(file) != 0) {
    remove(path);
    return tfm_fail(status, TFM_ERROR_IO, "cannot write '%s' (closing it)",
                    path);
  }
  return tfm_ok(status);
}

/* The PNG's bytes as libpng writes them, in a buffer grown by doubling. */
typedef struct {
  uint8_t *data;
  size_t size, capacity;
  int out_of_memory;
} png_memory;

static void append_png(png_structp png, png_bytep bytes, png_size_t n) {
  png_memory *out = png_get_io_ptr(png);
  if (n > out->capacity - out->size) {
    size_t capacity = out->capacity ? out->capacity : 4096;
    while (n > capacity - out->size)
      capacity *= 2;
    uint8_t *grown = realloc(out->data, capacity);
    if (!grown) {
      out->out_of_memory = 1;
      png_error(png, "out of memory");
    }
    out->data = grown;
    out->capacity = capacity;
  }
  memcpy(out->data + out->size, bytes, n);
  out->size += n;
}

static void flush_png(png_structp png) { (void)png; }

tfm_status_code tfm_image_encode_png(const float *rgb, int64_t height,
                                     int64_t width, uint8_t **data,
                                     size_t *size, tfm_status *status) {
  if (!rgb || !data || !size)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_encode_png: NULL pixels, data or size");
  *data = NULL;
  *size = 0;
  if (!fits_png(height, width))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a %lldx%lld image is outside what PNG files here hold "
                    "(1 to %d a side)",
                    (long long)width, (long long)height, kMaxSide);
  png_failure failure = {{0}};
  png_memory out = {NULL, 0, 0, 0};
  png_byte *row = malloc((size_t)width * 3);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &failure,
                                            on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!row || !png || !info) {
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    free(row);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "no memory to encode a PNG");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    free(row);
    free(out.data);
    return out.out_of_memory
               ? tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                          "no memory for a %lldx%lld PNG", (long long)width,
                          (long long)height)
               : tfm_fail(status, TFM_ERROR_IMAGE, "cannot encode a PNG: %s",
                          failure.message);
  }
  png_set_write_fn(png, &out, append_png, flush_png);
  write_image(png, info, rgb, height, width, row);
  png_destroy_write_struct(&png, &info);
  free(row);
  *data = out.data;
  *size = out.size;
  return tfm_ok(status);
}
