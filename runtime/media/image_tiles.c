/*===- image_tiles.c - an image as a vision model's tiles -----------------===//
 *
 * tfm_image_tiles: an image model's input, one preprocessed image, or
 * LLaVA-NeXT's any-resolution tiles as transformers 4.40's
 * LlavaNextImageProcessor makes them (image_processing_llava_next.py):
 *   - the pinpoint that keeps the most of the image's pixels, and of those
 *     the one that wastes the fewest (select_best_resolution);
 *   - the image resized into it keeping its aspect, the shorter side
 *     rounded up (_get_patch_output_size), and padded with black, the
 *     same on both sides (so an odd remainder leaves the image one pixel
 *     short of the pinpoint, and its last tiles short);
 *   - tiles cut row by row (divide_to_patches);
 *   - first of all, the whole image squashed to the shortest edge's
 *     square;
 *   - each tile then preprocessed as one image (resize, crop, rescale,
 *     normalize: image_preprocess.c).
 * Or Idefics3's (SmolVLM's) as Idefics3ImageProcessor (transformers 4.46,
 * image_processing_idefics3.py) cuts them with do_image_splitting:
 *   - resized to the longest edge (tfm_resize_longest_edge);
 *   - resized to multiples of the tile's side (resize_for_vision_encoder:
 *     the longer side rounded up, the other from the aspect, truncated,
 *     then rounded up);
 *   - cut into tiles row by row (split_image), unless it is one tile;
 *   - the whole squashed to one tile, last.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/status.h"
#include "runtime/media/image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* select_best_resolution over the pinpoints ([n][2]: height, width). */
static void best_pinpoint(const tfm_image_preprocessing *p, int64_t height,
                          int64_t width, int64_t *best_height,
                          int64_t *best_width) {
  int64_t most_kept = -1, least_wasted = 0;
  for (int32_t i = 0; i < p->num_grid_pinpoints; ++i) {
    int64_t h = p->grid_pinpoints[2 * i], w = p->grid_pinpoints[2 * i + 1];
    double scale = fmin((double)w / (double)width, (double)h / (double)height);
    int64_t scaled =
        (int64_t)((double)width * scale) * (int64_t)((double)height * scale);
    int64_t kept = scaled < width * height ? scaled : width * height;
    int64_t wasted = w * h - kept;
    if (kept > most_kept || (kept == most_kept && wasted < least_wasted)) {
      most_kept = kept;
      least_wasted = wasted;
      *best_height = h;
      *best_width = w;
    }
  }
}

/* The image resized into the pinpoint (height x width) keeping its aspect,
 * padded centred with zeros. */
static int fit_into(const tfm_rgb_image *image,
                    const tfm_image_preprocessing *p, int64_t height,
                    int64_t width, tfm_rgb_image *padded) {
  double scale_w = (double)width / (double)image->width;
  double scale_h = (double)height / (double)image->height;
  int64_t new_w = width, new_h = height;
  if (scale_w < scale_h) {
    new_h = (int64_t)ceil((double)image->height * scale_w);
    new_h = new_h < height ? new_h : height;
  } else {
    new_w = (int64_t)ceil((double)image->width * scale_h);
    new_w = new_w < width ? new_w : width;
  }
  tfm_rgb_image resized;
  if (!tfm_resize_rgb(image, new_w, new_h, p->resample, &resized))
    return 0;
  int64_t top = (height - new_h) / 2, left = (width - new_w) / 2;
  padded->height = new_h + 2 * top;
  padded->width = new_w + 2 * left;
  padded->pixels = calloc((size_t)padded->height * padded->width * 3, 1);
  if (!padded->pixels) {
    free(resized.pixels);
    return 0;
  }
  for (int64_t y = 0; y < new_h; ++y)
    memcpy(padded->pixels + ((y + top) * padded->width + left) * 3,
           resized.pixels + y * new_w * 3, (size_t)new_w * 3);
  free(resized.pixels);
  return 1;
}

/* The part of `image` at (top, left), at most height x width. */
static int cut(const tfm_rgb_image *image, int64_t top, int64_t left,
               int64_t height, int64_t width, tfm_rgb_image *tile) {
  tile->height = image->height - top < height ? image->height - top : height;
  tile->width = image->width - left < width ? image->width - left : width;
  tile->pixels = malloc((size_t)tile->height * tile->width * 3);
  if (!tile->pixels)
    return 0;
  for (int64_t y = 0; y < tile->height; ++y)
    memcpy(tile->pixels + y * tile->width * 3,
           image->pixels + ((top + y) * image->width + left) * 3,
           (size_t)tile->width * 3);
  return 1;
}

/* The squashed whole of `image` at 0 in `pixels`, then the `count` - 1
 * tiles of the pinpoint best_h x best_w, row by row, each [3, height,
 * width]. */
static tfm_status_code tile(const tfm_model_desc *desc,
                            const tfm_rgb_image *image, int64_t best_h,
                            int64_t best_w, int64_t count, float *pixels,
                            int64_t height, int64_t width, tfm_status *status) {
  const tfm_image_preprocessing *p = desc->image_preprocessing;
  int64_t side = p->shortest_edge, size = p->crop_height;
  int64_t tile_floats = 3 * height * width;
  tfm_rgb_image whole, fitted, part;
  if (!tfm_resize_rgb(image, side, side, p->resample, &whole))
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory resizing the image");
  tfm_status_code code =
      tfm_preprocess_rgb(desc, &whole, pixels, height, width, status);
  free(whole.pixels);
  if (code != TFM_OK)
    return code;
  if (!fit_into(image, p, best_h, best_w, &fitted))
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory resizing the image");
  /* The fitted image is the pinpoint, or a pixel short of it: as many
   * tiles either way. */
  int64_t k = 1;
  for (int64_t top = 0; top < fitted.height && code == TFM_OK; top += size)
    for (int64_t left = 0; left < fitted.width && code == TFM_OK && k < count;
         left += size, ++k) {
      if (!cut(&fitted, top, left, size, size, &part)) {
        code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                        "out of memory cutting the image's tiles");
        break;
      }
      code = tfm_preprocess_rgb(desc, &part, pixels + k * tile_floats, height,
                                width, status);
      free(part.pixels);
    }
  free(fitted.pixels);
  return code;
}

/* resize_for_vision_encoder: `in` resized to multiples of `side`. */
static int to_tile_multiples(const tfm_rgb_image *in, int64_t side,
                             int32_t resample, tfm_rgb_image *out) {
  int64_t height = in->height, width = in->width;
  double aspect = (double)width / (double)height;
  if (width >= height) {
    width = (width + side - 1) / side * side;
    height = (int64_t)((double)width / aspect);
    height = (height + side - 1) / side * side;
  } else {
    height = (height + side - 1) / side * side;
    width = (int64_t)((double)height * aspect);
    width = (width + side - 1) / side * side;
  }
  return tfm_resize_rgb(in, width, height, resample, out);
}

/* Idefics3's image before it is cut (this file's comment): resized to the
 * longest edge, then to multiples of the tile's side; 0 when out of
 * memory. */
static int to_split(const tfm_image_preprocessing *p,
                    const tfm_rgb_image *image, tfm_rgb_image *whole) {
  tfm_rgb_image fitted;
  if (!tfm_resize_longest_edge(p, image, &fitted))
    return 0;
  int ok = to_tile_multiples(&fitted, p->resize_height, p->resample, whole);
  free(fitted.pixels);
  return ok;
}

/* Idefics3's `count` - 1 tiles of `whole` (to_split's), row by row, `grid`
 * across, then the whole squashed to one by tfm_preprocess_rgb's resize,
 * each [3, height, width] in `pixels`. */
static tfm_status_code split(const tfm_model_desc *desc,
                             const tfm_rgb_image *whole, int64_t columns,
                             int64_t count, float *pixels, int64_t height,
                             int64_t width, tfm_status *status) {
  int64_t side = desc->image_preprocessing->resize_height;
  int64_t tile_floats = 3 * height * width;
  tfm_status_code code = TFM_OK;
  tfm_rgb_image part;
  for (int64_t k = 0; k + 1 < count && code == TFM_OK; ++k) {
    if (!cut(whole, k / columns * side, k % columns * side, side, side, &part))
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                      "out of memory cutting the image's tiles");
    code = tfm_preprocess_rgb(desc, &part, pixels + k * tile_floats, height,
                              width, status);
    free(part.pixels);
  }
  if (code != TFM_OK)
    return code;
  return tfm_preprocess_rgb(desc, whole, pixels + (count - 1) * tile_floats,
                            height, width, status);
}

tfm_status_code tfm_image_tiles(const tfm_model *model, const uint8_t *data,
                                size_t size, tfm_tensor *tiles, int64_t grid[2],
                                int64_t image_size[2], tfm_status *status) {
  if (!model || (!data && size) || !tiles || !grid || !image_size)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_tiles: NULL %s",
                    !model   ? "model"
                    : !tiles ? "tiles"
                    : !grid  ? "grid"
                    : !data  ? "data"
                             : "image_size");
  memset(tiles, 0, sizeof *tiles);
  const tfm_tensor_desc *input = tfm_image_input(model, status);
  if (!input)
    return status ? status->code : TFM_ERROR_NOT_FOUND;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_image_preprocessing *p = desc->image_preprocessing;
  int64_t height = input->shape[1], width = input->shape[2];
  char error[256];
  tfm_rgb_image image;
  if (!tfm_decode_image(data, size, &image, error, sizeof error))
    return tfm_fail(status, TFM_ERROR_IMAGE, "%s", error);
  /* The whole, and the tiles of the pinpoint the image fits best; or
   * Idefics3's image resized for its tiles, and their grid (none where it
   * is one tile). */
  int64_t best_h = 0, best_w = 0;
  tfm_rgb_image whole = {0};
  grid[0] = grid[1] = 0;
  if (p->split_tiles) {
    if (!to_split(p, &image, &whole)) {
      free(image.pixels);
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                      "out of memory resizing the image");
    }
    int64_t side = p->resize_height;
    if (whole.height > side || whole.width > side) {
      grid[0] = whole.height / side;
      grid[1] = whole.width / side;
    }
  } else if (p->num_grid_pinpoints > 0) {
    best_pinpoint(p, image.height, image.width, &best_h, &best_w);
    grid[0] = best_h / p->crop_height;
    grid[1] = best_w / p->crop_width;
  }
  int64_t count = 1 + grid[0] * grid[1];
  size_t bytes = (size_t)count * 3 * height * width * sizeof(float);
  float *pixels = _mlir_memref_to_llvm_alloc(bytes);
  if (!pixels) {
    free(image.pixels);
    free(whole.pixels);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for the image's %lld tiles",
                    (long long)count);
  }
  tfm_status_code code =
      p->split_tiles
          ? split(desc, &whole, grid[1], count, pixels, height, width, status)
      : count == 1 ? tfm_preprocess_longest_edge_first(desc, &image, pixels,
                                                       height, width, status)
                   : tile(desc, &image, best_h, best_w, count, pixels, height,
                          width, status);
  image_size[0] = image.height;
  image_size[1] = image.width;
  free(image.pixels);
  free(whole.pixels);
  if (code != TFM_OK) {
    _mlir_memref_to_llvm_free(pixels);
    return code;
  }
  tfm_own_f32(tiles, pixels, 4, (const int64_t[]){count, 3, height, width});
  return tfm_ok(status);
}
