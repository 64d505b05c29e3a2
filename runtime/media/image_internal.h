/*===- image_internal.h - decoded images (runtime-internal) ------*- C -*-===//
 *
 * What image_decode.c hands image_preprocess.c: 8-bit RGB pixels, row by
 * row; the preprocessing steps image_tiles.c repeats for each tile.
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

/* `in` resized to width x height with Pillow's filter `resample`
 * (tfm_resample) into `out` (its pixels malloc'd; the same size is a
 * copy, as Pillow's); 0 when out of memory. */
int tfm_resize_rgb(const tfm_rgb_image *in, int64_t width, int64_t height,
                   int32_t resample, tfm_rgb_image *out);

/* Idefics3's first resize (preprocessing->longest_edge): `in` resized so
 * that its longer side is the longest edge, keeping its aspect as
 * Idefics3ImageProcessor rounds it; 0 when out of memory. */
int tfm_resize_longest_edge(const tfm_image_preprocessing *p,
                            const tfm_rgb_image *in, tfm_rgb_image *out);

/* `image` made the model's f32 [3, height, width] input, as its
 * preprocessing (desc->image_preprocessing) says: resized, center-cropped,
 * rescaled and normalized; TFM_ERROR_IMAGE when that is not height x
 * width. */
tfm_status_code tfm_preprocess_rgb(const tfm_model_desc *desc,
                                   const tfm_rgb_image *image, float *pixels,
                                   int64_t height, int64_t width,
                                   tfm_status *status);

/* tfm_preprocess_rgb after Idefics3's resize to the longest edge, where
 * the preprocessing has one. */
tfm_status_code tfm_preprocess_longest_edge_first(const tfm_model_desc *desc,
                                                  const tfm_rgb_image *image,
                                                  float *pixels, int64_t height,
                                                  int64_t width,
                                                  tfm_status *status);

/* Channel c's 8-bit value `u` as the model reads it, as `p` says:
 * rescaled in float64, then normalized in float32 arithmetic, as
 * transformers' image processors compute it. */
static inline float tfm_pixel_value(const tfm_image_preprocessing *p, int c,
                                    uint8_t u) {
  float value = p->rescale != 0.0 ? (float)((double)u * p->rescale) : (float)u;
  if (p->normalize)
    value = (value - p->mean[c]) / p->std[c];
  return value;
}

/* Qwen2-VL's smart_resize (image_patches.c): the size an image of
 * height x width is resized to, each side a multiple of `factor` (the
 * patch times the merge square) and the area within [min_pixels,
 * max_pixels], in transformers' double arithmetic (ties to even);
 * TFM_ERROR_IMAGE for a side under `factor`, an aspect ratio past 200, or
 * a size that leaves a side no patch. */
tfm_status_code tfm_smart_resize(int64_t height, int64_t width, int64_t factor,
                                 int64_t min_pixels, int64_t max_pixels,
                                 int64_t *out_height, int64_t *out_width,
                                 tfm_status *status);

/* An image already resized by tfm_smart_resize as rows of `patch` x
 * `patch` pixels ([(height / patch) * (width / patch), 3 * frames * patch
 * * patch] into `out`): the patches in raster order over `merge` x `merge`
 * squares, then in raster order inside each; a row's columns (channel,
 * frame, y, x), the still image repeated over `frames` (the processor's
 * temporal patch); rescaled and normalized as `p` says. */
void tfm_image_patches(const tfm_rgb_image *image,
                       const tfm_image_preprocessing *p, int64_t patch,
                       int64_t merge, int64_t frames, float *out);

/* Qwen2.5-VL's windows over a grid_h x grid_w grid of patches, `window`
 * merge squares a side from the top left, row by row (partial at the
 * bottom and right): each square's index (raster over the merge squares)
 * in window order into `order` (room for the squares), and each window's
 * patches into `lengths` (room for the windows). Returns the windows. */
int64_t tfm_patch_windows(int64_t grid_h, int64_t grid_w, int64_t merge,
                          int64_t window, int64_t *order, int64_t *lengths);

/* The model's image input ([3, height, width]), or NULL with `status`
 * saying that it takes no RGB image or has no preprocessing. */
const tfm_tensor_desc *tfm_image_input(const tfm_model *model,
                                       tfm_status *status);

/* `tensor` as the f32 [shape[0], ..., shape[rank - 1]] `data`, a buffer of
 * the runtime's allocator (_mlir_memref_to_llvm_alloc), which
 * tfm_tensor_release frees. */
void tfm_own_f32(tfm_tensor *tensor, float *data, int32_t rank,
                 const int64_t *shape);

/* Prefixes `status`'s message with the file it is about (`path`). */
void tfm_name_file(tfm_status *status, const char *path);

#endif /* TFM_RUNTIME_MEDIA_IMAGE_INTERNAL_H */
