/*===- image_preprocess.c - an image model's input from an image file ---===//
 *
 * tfm_image_load: decode (image_decode.c), then what transformers' image
 * processors do with preprocessor_config.json's settings (recorded in the
 * model as tfm_image_preprocessing): resize with Pillow, center crop,
 * rescale, normalize, channels first.
 *
 * The resize is Pillow's (9.x, libImaging/Resample.c and Geometry.c),
 * reproduced so that pixels match the reference bit for bit: a separable
 * convolution whose filter support grows with the downscaling factor
 * (antialiasing), coefficients normalized per output pixel and rounded to
 * 22-bit fixed point, a horizontal pass over the rows the vertical pass
 * needs, each pass rounded and clamped to 8 bits; NEAREST samples the
 * pixel under each output pixel's center, stepping by accumulated
 * doubles as Pillow does.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/media/image_internal.h"
#include "runtime/media/refusals.h"
#include "runtime/support/read_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kPrecisionBits = 32 - 8 - 2 };

typedef struct {
  double (*weight)(double);
  double support;
} resample_filter;

static double box_weight(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

static double bilinear_weight(double x) {
  x = fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

static double hamming_weight(double x) {
  x = fabs(x);
  if (x == 0.0)
    return 1.0;
  if (x >= 1.0)
    return 0.0;
  x *= M_PI;
  return sin(x) / x * (0.54 + 0.46 * cos(x));
}

static double bicubic_weight(double x) {
  const double a = -0.5;
  x = fabs(x);
  if (x < 1.0)
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0)
    return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

static double sinc(double x) {
  if (x == 0.0)
    return 1.0;
  x *= M_PI;
  return sin(x) / x;
}

static double lanczos_weight(double x) {
  return x >= -3.0 && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0;
}

static const resample_filter *filter_of(int32_t resample) {
  static const resample_filter box = {box_weight, 0.5},
                               bilinear = {bilinear_weight, 1.0},
                               hamming = {hamming_weight, 1.0},
                               bicubic = {bicubic_weight, 2.0},
                               lanczos = {lanczos_weight, 3.0};
  switch (resample) {
  case TFM_RESAMPLE_BOX:
    return &box;
  case TFM_RESAMPLE_BILINEAR:
    return &bilinear;
  case TFM_RESAMPLE_HAMMING:
    return &hamming;
  case TFM_RESAMPLE_BICUBIC:
    return &bicubic;
  case TFM_RESAMPLE_LANCZOS:
    return &lanczos;
  }
  return NULL;
}

/* One axis of the resampling: for each output index its first input index,
 * input count, and `ksize` fixed-point weights. */
typedef struct {
  int64_t ksize;
  int64_t *bounds; /* [out][2]: first input, count */
  int32_t *weights; /* [out][ksize] */
} axis_coefficients;

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc over [0, in). */
static int axis_coefficients_of(int64_t in, int64_t out,
                                const resample_filter *filter,
                                axis_coefficients *axis) {
  double scale = (double)in / (double)out;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  double support = filter->support * filterscale;
  axis->ksize = (int64_t)ceil(support) * 2 + 1;
  axis->bounds = malloc(sizeof *axis->bounds * 2 * out);
  axis->weights = malloc(sizeof *axis->weights * axis->ksize * out);
  double *k = malloc(sizeof *k * axis->ksize);
  if (!axis->bounds || !axis->weights || !k) {
    free(k);
    return 0;
  }
  for (int64_t xx = 0; xx < out; ++xx) {
    double center = (xx + 0.5) * scale, total = 0.0, ss = 1.0 / filterscale;
    int64_t xmin = (int64_t)(center - support + 0.5);
    if (xmin < 0)
      xmin = 0;
    int64_t xmax = (int64_t)(center + support + 0.5);
    if (xmax > in)
      xmax = in;
    xmax -= xmin;
    for (int64_t x = 0; x < xmax; ++x) {
      k[x] = filter->weight((x + xmin - center + 0.5) * ss);
      total += k[x];
    }
    int32_t *w = axis->weights + xx * axis->ksize;
    for (int64_t x = 0; x < axis->ksize; ++x) {
      double v = x < xmax && total != 0.0 ? k[x] / total : 0.0;
      w[x] = (int32_t)(v < 0 ? -0.5 + v * (1 << kPrecisionBits)
                             : 0.5 + v * (1 << kPrecisionBits));
    }
    axis->bounds[2 * xx] = xmin;
    axis->bounds[2 * xx + 1] = xmax;
  }
  free(k);
  return 1;
}

static void axis_free(axis_coefficients *axis) {
  free(axis->bounds);
  free(axis->weights);
}

static uint8_t clip8(int64_t sum) {
  int64_t v = sum >> kPrecisionBits;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Pillow's ImagingResampleInner for RGB: the horizontal pass over the rows
 * the vertical pass reads, then the vertical pass. */
static int resample(const tfm_rgb_image *in, int64_t width, int64_t height,
                    const resample_filter *filter, tfm_rgb_image *out) {
  axis_coefficients h = {0}, v = {0};
  int ok = axis_coefficients_of(in->width, width, filter, &h) &&
           axis_coefficients_of(in->height, height, filter, &v);
  int64_t first = ok ? v.bounds[0] : 0;
  int64_t last = ok ? v.bounds[2 * height - 2] + v.bounds[2 * height - 1] : 0;
  uint8_t *rows = NULL, *result = NULL;
  if (ok) {
    rows = malloc((size_t)(last - first) * width * 3);
    result = malloc((size_t)height * width * 3);
    ok = rows && result;
  }
  if (!ok) {
    axis_free(&h);
    axis_free(&v);
    free(rows);
    free(result);
    return 0;
  }
  int horizontal = width != in->width, vertical = height != in->height;
  for (int64_t y = first; y < last; ++y) {
    const uint8_t *src = in->pixels + y * in->width * 3;
    uint8_t *dst = rows + (y - first) * width * 3;
    if (!horizontal) {
      memcpy(dst, src, (size_t)width * 3);
      continue;
    }
    for (int64_t x = 0; x < width; ++x) {
      int64_t xmin = h.bounds[2 * x], count = h.bounds[2 * x + 1];
      const int32_t *w = h.weights + x * h.ksize;
      for (int c = 0; c < 3; ++c) {
        int64_t sum = 1 << (kPrecisionBits - 1);
        for (int64_t i = 0; i < count; ++i)
          sum += src[(xmin + i) * 3 + c] * (int64_t)w[i];
        dst[x * 3 + c] = clip8(sum);
      }
    }
  }
  for (int64_t y = 0; y < height; ++y) {
    uint8_t *dst = result + y * width * 3;
    if (!vertical) {
      memcpy(dst, rows + (y - first) * width * 3, (size_t)width * 3);
      continue;
    }
    int64_t ymin = v.bounds[2 * y] - first, count = v.bounds[2 * y + 1];
    const int32_t *w = v.weights + y * v.ksize;
    for (int64_t x = 0; x < width * 3; ++x) {
      int64_t sum = 1 << (kPrecisionBits - 1);
      for (int64_t i = 0; i < count; ++i)
        sum += rows[(ymin + i) * width * 3 + x] * (int64_t)w[i];
      dst[x] = clip8(sum);
    }
  }
  axis_free(&h);
  axis_free(&v);
  free(rows);
  out->pixels = result;
  out->width = width;
  out->height = height;
  return 1;
}

/* Pillow's NEAREST (ImagingScaleAffine): the input pixel under each output
 * pixel's center, positions accumulated step by step in doubles. */
static int resample_nearest(const tfm_rgb_image *in, int64_t width,
                            int64_t height, tfm_rgb_image *out) {
  uint8_t *result = malloc((size_t)width * height * 3);
  int64_t *columns = malloc(sizeof *columns * width);
  if (!result || !columns) {
    free(result);
    free(columns);
    return 0;
  }
  double step_x = (double)in->width / width, step_y = (double)in->height / height;
  double xo = step_x * 0.5, yo = step_y * 0.5;
  for (int64_t x = 0; x < width; ++x, xo += step_x)
    columns[x] = (int64_t)xo < in->width ? (int64_t)xo : in->width - 1;
  for (int64_t y = 0; y < height; ++y, yo += step_y) {
    int64_t row = (int64_t)yo < in->height ? (int64_t)yo : in->height - 1;
    for (int64_t x = 0; x < width; ++x)
      memcpy(result + (y * width + x) * 3,
             in->pixels + (row * in->width + columns[x]) * 3, 3);
  }
  free(columns);
  out->pixels = result;
  out->width = width;
  out->height = height;
  return 1;
}

/* The size transformers resizes to: height x width, or the shorter side to
 * shortest_edge with the longer scaled and truncated
 * (get_resize_output_image_size). */
static void resized_size(const tfm_image_preprocessing *p, int64_t width,
                         int64_t height, int64_t *out_width,
                         int64_t *out_height) {
  *out_width = width;
  *out_height = height;
  if (p->resize_height > 0 && p->resize_width > 0) {
    *out_width = p->resize_width;
    *out_height = p->resize_height;
  } else if (p->shortest_edge > 0) {
    int64_t shorter = width <= height ? width : height;
    int64_t longer = width <= height ? height : width;
    int64_t scaled = (int64_t)((double)p->shortest_edge * longer / shorter);
    *out_width = width <= height ? p->shortest_edge : scaled;
    *out_height = width <= height ? scaled : p->shortest_edge;
  }
}

/* The features input of the model's first entry point that takes one:
 * [3, height, width]. */
static const tfm_tensor_desc *image_input(const tfm_model_desc *desc) {
  for (int32_t e = 0; e < desc->num_entry_points; ++e)
    for (int32_t i = 0; i < desc->entry_points[e].num_inputs; ++i) {
      const tfm_tensor_desc *input = &desc->entry_points[e].inputs[i];
      if (input->role == TFM_ROLE_FEATURES && input->rank == 3)
        return input;
    }
  return NULL;
}

int tfm_resize_rgb(const tfm_rgb_image *in, int64_t width, int64_t height,
                   int32_t resample_filter, tfm_rgb_image *out) {
  if (width == in->width && height == in->height) {
    /* Pillow copies an image resized to its own size. */
    size_t bytes = (size_t)width * height * 3;
    out->pixels = malloc(bytes ? bytes : 1);
    if (!out->pixels)
      return 0;
    memcpy(out->pixels, in->pixels, bytes);
    out->width = width;
    out->height = height;
    return 1;
  }
  if (resample_filter == TFM_RESAMPLE_NEAREST)
    return resample_nearest(in, width, height, out);
  return resample(in, width, height, filter_of(resample_filter), out);
}

int tfm_resize_longest_edge(const tfm_image_preprocessing *p,
                            const tfm_rgb_image *in, tfm_rgb_image *out) {
  /* _resize_output_size_rescale_to_max_len: the longer side to the
   * longest edge, the other truncated and made even; then
   * _resize_output_size_scale_below_upper_bound's 4096 (MAX_IMAGE_SIZE).
   * Python's float arithmetic, in doubles. */
  int64_t height = in->height, width = in->width;
  double aspect = (double)width / (double)height;
  if (width >= height) {
    width = p->longest_edge;
    height = (int64_t)((double)width / aspect);
    height += height % 2;
  } else {
    height = p->longest_edge;
    width = (int64_t)((double)height * aspect);
    width += width % 2;
  }
  height = height > 1 ? height : 1;
  width = width > 1 ? width : 1;
  const int64_t most = 4096;
  aspect = (double)width / (double)height;
  if (width >= height && width > most) {
    width = most;
    height = (int64_t)((double)width / aspect);
  } else if (height > width && height > most) {
    height = most;
    width = (int64_t)((double)height * aspect);
  }
  height = height > 1 ? height : 1;
  width = width > 1 ? width : 1;
  return tfm_resize_rgb(in, width, height, p->resample, out);
}

tfm_status_code tfm_preprocess_rgb(const tfm_model_desc *desc,
                                   const tfm_rgb_image *image, float *pixels,
                                   int64_t height, int64_t width,
                                   tfm_status *status) {
  const tfm_image_preprocessing *p = desc->image_preprocessing;
  int64_t rw, rh;
  resized_size(p, image->width, image->height, &rw, &rh);
  tfm_rgb_image resized = {0};
  if (!tfm_resize_rgb(image, rw, rh, p->resample, &resized))
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory resizing the image");
  /* transformers' center_crop: the crop's top-left at half the excess,
   * rounded down; a crop larger than the image pads it with zeros, the
   * image at half the padding. */
  int64_t ch = p->crop_height > 0 ? p->crop_height : rh;
  int64_t cw = p->crop_width > 0 ? p->crop_width : rw;
  if (ch != height || cw != width) {
    free(resized.pixels);
    return tfm_fail(status, TFM_ERROR_IMAGE,
                    "the image preprocesses to %lldx%lld pixels, but model "
                    "'%s' takes %lldx%lld",
                    (long long)cw, (long long)ch, desc->name,
                    (long long)width, (long long)height);
  }
  int64_t padded_h = rh > ch ? rh : ch, padded_w = rw > cw ? rw : cw;
  int64_t top = (padded_h - ch) / 2 - (padded_h - rh) / 2;
  int64_t left = (padded_w - cw) / 2 - (padded_w - rw) / 2;
  for (int c = 0; c < 3; ++c)
    for (int64_t y = 0; y < ch; ++y)
      for (int64_t x = 0; x < cw; ++x) {
        int64_t sy = y + top, sx = x + left;
        int inside = sy >= 0 && sy < rh && sx >= 0 && sx < rw;
        uint8_t u = inside ? resized.pixels[(sy * rw + sx) * 3 + c] : 0;
        pixels[(c * ch + y) * cw + x] = tfm_pixel_value(p, c, u);
      }
  free(resized.pixels);
  return tfm_ok(status);
}

tfm_status_code tfm_preprocess_longest_edge_first(const tfm_model_desc *desc,
                                                  const tfm_rgb_image *image,
                                                  float *pixels, int64_t height,
                                                  int64_t width,
                                                  tfm_status *status) {
  if (!desc->image_preprocessing->longest_edge)
    return tfm_preprocess_rgb(desc, image, pixels, height, width, status);
  tfm_rgb_image fitted;
  if (!tfm_resize_longest_edge(desc->image_preprocessing, image, &fitted))
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory resizing the image");
  tfm_status_code code =
      tfm_preprocess_rgb(desc, &fitted, pixels, height, width, status);
  free(fitted.pixels);
  return code;
}

const tfm_tensor_desc *tfm_image_input(const tfm_model *model,
                                       tfm_status *status) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_tensor_desc *input = image_input(desc);
  if (!input || input->shape[0] != 3) {
    tfm_fail(status, TFM_ERROR_NOT_FOUND, "model '%s' takes no RGB image",
             desc->name);
    return NULL;
  }
  if (!desc->image_preprocessing) {
    tfm_fail(status, TFM_ERROR_NOT_FOUND, TFM_NO_IMAGE_PREPROCESSING,
             desc->name);
    return NULL;
  }
  return input;
}

tfm_status_code tfm_image_load_memory(const tfm_model *model,
                                      const uint8_t *data, size_t size,
                                      float *pixels, int64_t capacity,
                                      tfm_status *status) {
  if (!model || (!data && size) || !pixels)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_load: NULL %s",
                    !model    ? "model"
                    : !pixels ? "pixels"
                              : "data");
  const tfm_tensor_desc *input = tfm_image_input(model, status);
  if (!input)
    return status ? status->code : TFM_ERROR_NOT_FOUND;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  if (desc->image_preprocessing->num_grid_pinpoints > 0 ||
      desc->image_preprocessing->split_tiles)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' cuts an image into tiles (%s): "
                    "tfm_image_tiles makes them",
                    desc->name,
                    desc->image_preprocessing->split_tiles
                        ? "Idefics3's image splitting"
                        : "LLaVA-NeXT's grid pinpoints");
  int64_t height = input->shape[1], width = input->shape[2];
  if (capacity < 3 * height * width)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_load: %lld floats do not hold [3, %lld, %lld]",
                    (long long)capacity, (long long)height, (long long)width);
  char error[256];
  tfm_rgb_image image;
  if (!tfm_decode_image(data, size, &image, error, sizeof error))
    return tfm_fail(status, TFM_ERROR_IMAGE, "%s", error);
  tfm_status_code code = tfm_preprocess_longest_edge_first(
      desc, &image, pixels, height, width, status);
  free(image.pixels);
  return code;
}

uint8_t *tfm_read_image_file(const char *path, size_t *size,
                             tfm_status *status) {
  uint8_t *data = tfm_read_file(path, size);
  if (!data)
    tfm_fail(status, errno == ENOMEM ? TFM_ERROR_OUT_OF_MEMORY : TFM_ERROR_IO,
             "cannot read '%s': %s", path, strerror(errno));
  return data;
}

tfm_status_code tfm_image_load(const tfm_model *model, const char *path,
                               float *pixels, int64_t capacity,
                               tfm_status *status) {
  if (!model || !path || !pixels)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_load: NULL %s",
                    !model ? "model" : !path ? "path" : "pixels");
  size_t size;
  uint8_t *data = tfm_read_image_file(path, &size, status);
  if (!data)
    return status ? status->code : TFM_ERROR_IO;
  tfm_status_code code =
      tfm_image_load_memory(model, data, size, pixels, capacity, status);
  free(data);
  if (code != TFM_OK)
    tfm_name_file(status, path);
  return code;
}

void tfm_name_file(tfm_status *status, const char *path) {
  if (!status)
    return;
  char message[sizeof status->message];
  snprintf(message, sizeof message, "%s: %.400s", path, status->message);
  memcpy(status->message, message, sizeof message);
}

void tfm_own_f32(tfm_tensor *tensor, float *data, int32_t rank,
                 const int64_t *shape) {
  memset(tensor, 0, sizeof *tensor);
  tensor->data = data;
  tensor->owner = data;
  tensor->dtype = TFM_DTYPE_F32;
  tensor->rank = rank;
  memcpy(tensor->shape, shape, (size_t)rank * sizeof *shape);
}
