/*===- image_decode.c - PNG and JPEG bytes to RGB pixels ----------------===//
 *
 * Decodes an image file's bytes with Debian's libpng and libjpeg-turbo
 * into 8-bit RGB rows, as Pillow's Image.open(...).convert("RGB") sees
 * them: palettes expanded, gray replicated, alpha dropped (not blended),
 * 16-bit samples cut to their high byte (16-bit gray alone clipped at 255),
 * no gamma correction; JPEG with the library's default (islow) DCT and
 * fancy upsampling, as Pillow uses the same library. Every failure is a message naming what is wrong: a
 * file that is neither format, a truncated or corrupt stream (libjpeg's
 * warnings count), sizes past the limit, CMYK JPEG.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/media/image_internal.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* Past this many pixels an image is refused before its rows are allocated
 * (a crafted header can claim 2^31 x 2^31). */
enum { kMaxPixels = 1 << 28, kMaxSide = 1 << 16 };

static int fail(char *error, size_t capacity, const char *message) {
  snprintf(error, capacity, "%s", message);
  return 0;
}

static int check_size(uint64_t width, uint64_t height, char *error,
                      size_t capacity) {
  if (width == 0 || height == 0 || width > kMaxSide || height > kMaxSide ||
      width * height > kMaxPixels) {
    snprintf(error, capacity,
             "%llux%llu pixels is outside what is accepted (1 to %d a side, "
             "%d in all)",
             (unsigned long long)width, (unsigned long long)height, kMaxSide,
             kMaxPixels);
    return 0;
  }
  return 1;
}

/*===------------------------------- PNG --------------------------------===*/

typedef struct {
  const uint8_t *data;
  size_t size, at;
  char message[200];
} png_source;

static void png_read_bytes(png_structp png, png_bytep out, size_t count) {
  png_source *source = png_get_io_ptr(png);
  if (count > source->size - source->at)
    png_error(png, "the file ends early (truncated)");
  memcpy(out, source->data + source->at, count);
  source->at += count;
}

static void png_on_error(png_structp png, png_const_charp message) {
  png_source *source = png_get_error_ptr(png);
  snprintf(source->message, sizeof source->message, "%s", message);
  png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp message) {
  (void)png;
  (void)message; /* benign ancillary-chunk complaints; errors still fail */
}

static int decode_png(const uint8_t *data, size_t size, tfm_rgb_image *image,
                      char *error, size_t capacity) {
  png_source source = {data, size, 0, ""};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source,
                                           png_on_error, png_on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  /* volatile: set after setjmp and read after a longjmp back. */
  uint8_t *volatile pixels = NULL;
  png_bytep *volatile rows = NULL;
  if (!info) {
    png_destroy_read_struct(&png, NULL, NULL);
    return fail(error, capacity, "out of memory");
  }
  if (setjmp(png_jmpbuf(png))) {
    snprintf(error, capacity, "malformed PNG: %s", source.message);
    free(pixels);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
  }
  png_set_read_fn(png, &source, png_read_bytes);
  png_read_info(png, info);
  png_uint_32 width = png_get_image_width(png, info);
  png_uint_32 height = png_get_image_height(png, info);
  if (!check_size(width, height, error, capacity)) {
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
  }
  /* To 8-bit RGB: palettes and low bit depths expanded, 16 bits cut to
   * the high byte (Pillow's raw modes), gray replicated, alpha dropped.
   * 16-bit gray alone is read whole: Pillow holds it as 32-bit integers
   * ("I") and converts those to RGB by clipping at 255, not by scaling. */
  int gray16 = png_get_bit_depth(png, info) == 16 &&
               png_get_color_type(png, info) == PNG_COLOR_TYPE_GRAY;
  size_t sample_bytes = gray16 ? 2 : 3;
  if (!gray16) {
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    png_set_strip_alpha(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != (size_t)width * sample_bytes)
    png_error(png, "unexpected row layout after conversion to RGB");
  /* 16-bit gray is read into the last two thirds and widened in place. */
  pixels = malloc((size_t)width * height * 3);
  rows = malloc(sizeof *rows * height);
  if (!pixels || !rows)
    png_error(png, "out of memory");
  uint8_t *samples = pixels + (gray16 ? (size_t)width * height : 0);
  for (png_uint_32 y = 0; y < height; ++y)
    rows[y] = samples + (size_t)y * width * sample_bytes;
  png_read_image(png, rows);
  png_read_end(png, NULL);
  free(rows);
  for (size_t i = 0; gray16 && i < (size_t)width * height; ++i) {
    unsigned value = (unsigned)samples[2 * i] << 8 | samples[2 * i + 1];
    uint8_t clipped = value > 255 ? 255 : (uint8_t)value;
    pixels[3 * i] = pixels[3 * i + 1] = pixels[3 * i + 2] = clipped;
  }
  png_destroy_read_struct(&png, &info, NULL);
  image->pixels = pixels;
  image->width = width;
  image->height = height;
  return 1;
}

/*===------------------------------- JPEG -------------------------------===*/

typedef struct {
  struct jpeg_error_mgr base;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} jpeg_failure;

static void jpeg_on_error(j_common_ptr info) {
  jpeg_failure *failure = (jpeg_failure *)info->err;
  failure->base.format_message(info, failure->message);
  longjmp(failure->jump, 1);
}

static void jpeg_on_message(j_common_ptr info) {
  (void)info; /* warnings are counted (num_warnings) and refused below */
}

static int decode_jpeg(const uint8_t *data, size_t size, tfm_rgb_image *image,
                       char *error, size_t capacity) {
  struct jpeg_decompress_struct info;
  jpeg_failure failure;
  uint8_t *volatile pixels = NULL;
  info.err = jpeg_std_error(&failure.base);
  failure.base.error_exit = jpeg_on_error;
  failure.base.output_message = jpeg_on_message;
  if (setjmp(failure.jump)) {
    snprintf(error, capacity, "malformed JPEG: %s", failure.message);
    free(pixels);
    jpeg_destroy_decompress(&info);
    return 0;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, data, (unsigned long)size);
  jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&info);
    return fail(error, capacity, "CMYK JPEG images are not supported");
  }
  if (!check_size(info.image_width, info.image_height, error, capacity)) {
    jpeg_destroy_decompress(&info);
    return 0;
  }
  info.out_color_space = JCS_RGB; /* gray is replicated */
  jpeg_start_decompress(&info);
  size_t stride = (size_t)info.output_width * 3;
  pixels = malloc(stride * info.output_height);
  if (!pixels) {
    jpeg_destroy_decompress(&info);
    return fail(error, capacity, "out of memory");
  }
  /* A truncated or corrupt stream is only a warning to libjpeg (it fills
   * in gray); Pillow refuses such files. Checked after every row: a small
   * file claiming 65536 x 4096 pixels would otherwise be filled in whole
   * before being refused (seconds each, under the fuzzer). */
  while (info.output_scanline < info.output_height &&
         !failure.base.num_warnings) {
    JSAMPROW row = pixels + stride * info.output_scanline;
    jpeg_read_scanlines(&info, &row, 1);
  }
  if (failure.base.num_warnings) {
    failure.base.format_message((j_common_ptr)&info, failure.message);
    snprintf(error, capacity, "corrupt or truncated JPEG: %s",
             failure.message);
    free(pixels);
    jpeg_destroy_decompress(&info);
    return 0;
  }
  jpeg_finish_decompress(&info);
  image->width = info.output_width;
  image->height = info.output_height;
  jpeg_destroy_decompress(&info);
  image->pixels = pixels;
  return 1;
}

int tfm_decode_image(const uint8_t *data, size_t size, tfm_rgb_image *image,
                     char *error, size_t capacity) {
  static const uint8_t png_signature[8] = {0x89, 'P', 'N', 'G',
                                           '\r', '\n', 0x1a, '\n'};
  memset(image, 0, sizeof *image);
  if (size >= 8 && !memcmp(data, png_signature, 8))
    return decode_png(data, size, image, error, capacity);
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
    return decode_jpeg(data, size, image, error, capacity);
  return fail(error, capacity,
              size == 0 ? "the file is empty"
                        : "not a PNG or JPEG image (unknown signature)");
}
