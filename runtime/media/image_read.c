/*===- image_read.c - an image file as RGB floats ------------------------===*
 *
 * tfm_image_read: a PNG or JPEG file decoded as Pillow's
 * Image.open(...).convert("RGB") (image_decode.c), as floats in [0, 1]
 * (np.array(image) / 255, in f32): what diffusers' image processors take an
 * init image or a mask from. No resizing: a pipeline is compiled for one
 * size, and the caller checks it.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/media/image_internal.h"

#include <stdlib.h>

tfm_status_code tfm_image_read(const char *path, float **rgb, int64_t *height,
                               int64_t *width, tfm_status *status) {
  if (!path || !rgb || !height || !width)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_read: NULL path or result");
  *rgb = NULL;
  size_t size;
  uint8_t *data = tfm_read_image_file(path, &size, status);
  if (!data)
    return status ? status->code : TFM_ERROR_IO;
  tfm_rgb_image image;
  char error[256];
  int decoded = tfm_decode_image(data, size, &image, error, sizeof error);
  free(data);
  if (!decoded)
    return tfm_fail(status, TFM_ERROR_IMAGE, "%s: %s", path, error);
  size_t count = (size_t)(image.height * image.width * 3);
  float *values = malloc(count * sizeof *values);
  if (!values) {
    free(image.pixels);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "no memory for the %lldx%lld image '%s'",
                    (long long)image.width, (long long)image.height, path);
  }
  for (size_t i = 0; i < count; ++i)
    values[i] = (float)image.pixels[i] / 255.0f;
  free(image.pixels);
  *rgb = values;
  *height = image.height;
  *width = image.width;
  return tfm_ok(status);
}
