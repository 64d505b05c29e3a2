/*===- image_patches.c - images at their own resolution, as patches -------===//
 *
 * Qwen2-VL's and Qwen2.5-VL's image processor (transformers 4.49's
 * Qwen2VLImageProcessor; docs/plans/qwen2.5-vl-spec.md): an image keeps
 * about its own size, rounded to a multiple of the patch grid's merge
 * squares (smart_resize), and becomes a row of pixels per patch, in the
 * order the vision tower reads them; and the tower's windows over those
 * patches (Qwen2.5-VL's get_window_index).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/media/image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tfm_status_code tfm_smart_resize(int64_t height, int64_t width, int64_t factor,
                                 int64_t min_pixels, int64_t max_pixels,
                                 int64_t *out_height, int64_t *out_width,
                                 tfm_status *status) {
  if (factor <= 0 || height < factor || width < factor)
    return tfm_fail(status, TFM_ERROR_IMAGE,
                    "the image is %lldx%lld pixels; the model needs each side "
                    "at least %lld",
                    (long long)width, (long long)height, (long long)factor);
  double h = (double)height, w = (double)width, f = (double)factor;
  if ((h > w ? h / w : w / h) > 200)
    return tfm_fail(status, TFM_ERROR_IMAGE,
                    "the image is %lldx%lld pixels; the model takes no aspect "
                    "ratio beyond 200",
                    (long long)width, (long long)height);
  /* Python's round() rounds ties to even, as nearbyint does by default. */
  double rh = nearbyint(h / f) * f, rw = nearbyint(w / f) * f;
  if (rh * rw > (double)max_pixels) {
    double beta = sqrt(h * w / (double)max_pixels);
    rh = floor(h / beta / f) * f;
    rw = floor(w / beta / f) * f;
  } else if (rh * rw < (double)min_pixels) {
    double beta = sqrt((double)min_pixels / (h * w));
    rh = ceil(h * beta / f) * f;
    rw = ceil(w * beta / f) * f;
  }
  /* Unclamped in transformers: a long, thin image under a small
   * max_pixels can lose its short side altogether. */
  if (rh < f || rw < f)
    return tfm_fail(status, TFM_ERROR_IMAGE,
                    "the image is %lldx%lld pixels, which at most %lld pixels "
                    "leaves a side of no patches",
                    (long long)width, (long long)height, (long long)max_pixels);
  *out_height = (int64_t)rh;
  *out_width = (int64_t)rw;
  return tfm_ok(status);
}

void tfm_image_patches(const tfm_rgb_image *image,
                       const tfm_image_preprocessing *p, int64_t patch,
                       int64_t merge, int64_t frames, float *out) {
  int64_t grid_h = image->height / patch, grid_w = image->width / patch;
  int64_t row_width = 3 * frames * patch * patch;
  int64_t rows = 0;
  /* Raster order over the merge squares, raster order inside each. */
  for (int64_t bh = 0; bh < grid_h / merge; ++bh)
    for (int64_t bw = 0; bw < grid_w / merge; ++bw)
      for (int64_t mh = 0; mh < merge; ++mh)
        for (int64_t mw = 0; mw < merge; ++mw, ++rows) {
          int64_t top = (bh * merge + mh) * patch;
          int64_t left = (bw * merge + mw) * patch;
          float *row = out + rows * row_width;
          /* Columns (channel, frame, y, x); a still image is every frame. */
          for (int c = 0; c < 3; ++c)
            for (int64_t y = 0; y < patch; ++y)
              for (int64_t x = 0; x < patch; ++x) {
                size_t at = (size_t)((top + y) * image->width + left + x);
                float value = tfm_pixel_value(p, c, image->pixels[at * 3 + c]);
                for (int64_t t = 0; t < frames; ++t)
                  row[((c * frames + t) * patch + y) * patch + x] = value;
              }
        }
}

int64_t tfm_patch_windows(int64_t grid_h, int64_t grid_w, int64_t merge,
                          int64_t window, int64_t *order, int64_t *lengths) {
  int64_t lh = grid_h / merge, lw = grid_w / merge;
  int64_t squares = merge * merge, count = 0, at = 0;
  /* Windows of window x window merge squares from the top left, row by
   * row (partial at the bottom and right); squares raster inside each. */
  for (int64_t wy = 0; wy < lh; wy += window)
    for (int64_t wx = 0; wx < lw; wx += window) {
      int64_t start = at;
      for (int64_t y = wy; y < lh && y < wy + window; ++y)
        for (int64_t x = wx; x < lw && x < wx + window; ++x)
          order[at++] = y * lw + x;
      lengths[count++] = (at - start) * squares;
    }
  return count;
}
