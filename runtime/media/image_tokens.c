/*===- image_tokens.c - an image's rows for a vision-language prompt ------===//
 *
 * tfm_image_tokens: an image file's tiles (image_tiles.c) through the
 * model's @encode_image. One tile's rows are the image's. LLaVA-NeXT's
 * tiles are laid out as transformers 4.40's LlavaNextForConditionalGeneration
 * lays them out (modeling_llava_next.py):
 *   - the whole image's rows first;
 *   - the tiles' s x s patch rows as one [grid_h * s, grid_w * s] grid;
 *   - the grid cut back to the image's aspect (unpad_image: the rows, or
 *     the columns, that the tiles' padding filled, as many each side);
 *   - @encode_image's second output, image_newline, after each row of the
 *     grid.
 * Each tile's rows go straight to their places, so no tile's rows are kept
 * past its call. Idefics3's (SmolVLM's) tiles' rows follow one another in
 * the tiles' order, as Idefics3ForConditionalGeneration's inputs_merger
 * takes them: the tiles row by row, the whole image last.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/status.h"
#include "runtime/media/image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The grid's rows [bounds[0], bounds[1]) and columns [bounds[2],
 * bounds[3]) that hold the image: unpad_image. 4.40 computes it on the
 * processor's image_sizes as torch tensors, so its ratios are float32; so
 * are these (later releases compute in doubles and round, which can differ
 * by a row where a product lands within float32's rounding of an
 * integer). */
static void unpadded(int64_t grid_height, int64_t grid_width,
                     const int64_t image_size[2], int64_t bounds[4]) {
  float image_h = (float)image_size[0], image_w = (float)image_size[1];
  bounds[0] = 0;
  bounds[1] = grid_height;
  bounds[2] = 0;
  bounds[3] = grid_width;
  float grid_aspect = (float)((double)grid_width / (double)grid_height);
  if (image_w / image_h > grid_aspect) {
    float scale = (float)grid_width / image_w;
    int64_t kept = (int64_t)(image_h * scale);
    int64_t padding = (grid_height - kept) / 2;
    bounds[0] = padding;
    bounds[1] = grid_height - padding;
  } else {
    float scale = (float)grid_height / image_h;
    int64_t kept = (int64_t)(image_w * scale);
    int64_t padding = (grid_width - kept) / 2;
    bounds[2] = padding;
    bounds[3] = grid_width - padding;
  }
}

/* Tile k's [side * side, hidden] rows into their places in `out`, whose
 * grid holds bounds' rows and columns, each row of it `stride` rows apart
 * after the whole image's `base` rows. */
static void place_tile(const float *rows, int64_t k, int64_t grid_width,
                       int64_t side, int64_t hidden, const int64_t bounds[4],
                       int64_t base, float *out) {
  int64_t tile_y = (k - 1) / grid_width * side;
  int64_t tile_x = (k - 1) % grid_width * side;
  int64_t stride = bounds[3] - bounds[2] + 1;
  for (int64_t a = 0; a < side; ++a) {
    int64_t y = tile_y + a;
    if (y < bounds[0] || y >= bounds[1])
      continue;
    for (int64_t b = 0; b < side; ++b) {
      int64_t x = tile_x + b;
      if (x < bounds[2] || x >= bounds[3])
        continue;
      int64_t at = base + (y - bounds[0]) * stride + (x - bounds[2]);
      memcpy(out + at * hidden, rows + (a * side + b) * hidden,
             (size_t)hidden * sizeof *out);
    }
  }
}

/* Runs tile `k` of `tiles` through @encode_image into `out` (its outputs,
 * `outputs` of them). */
static tfm_status_code encode_tile(tfm_model *model, const tfm_tensor *tiles,
                                   int64_t k, tfm_tensor *out, int32_t outputs,
                                   tfm_status *status) {
  int64_t floats = tiles->shape[1] * tiles->shape[2] * tiles->shape[3];
  tfm_tensor in = {0};
  in.data = (float *)tiles->data + k * floats;
  in.dtype = TFM_DTYPE_F32;
  in.rank = 3;
  memcpy(in.shape, tiles->shape + 1, 3 * sizeof *in.shape);
  return tfm_model_call(model, "encode_image", &in, 1, NULL, out, outputs,
                        status);
}

/* LLaVA-NeXT's layout of the tiles' rows (this file's comment). */
static tfm_status_code lay_out(tfm_model *model, const tfm_tensor *tiles,
                               const int64_t grid[2],
                               const int64_t image_size[2], tfm_tensor *rows,
                               tfm_status *status) {
  tfm_tensor first[2] = {{0}};
  tfm_status_code code = encode_tile(model, tiles, 0, first, 2, status);
  if (code != TFM_OK)
    return code;
  int64_t base = first[0].shape[0], hidden = first[0].shape[1];
  int64_t side = (int64_t)llround(sqrt((double)base));
  if (side * side != base || first[1].rank != 1 ||
      first[1].shape[0] != hidden) {
    tfm_tensor_release(&first[0]);
    tfm_tensor_release(&first[1]);
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@encode_image's %lld rows are not a square grid of "
                    "patches with a newline row beside them: its tiles "
                    "cannot be laid out",
                    (long long)base);
  }
  int64_t bounds[4];
  unpadded(grid[0] * side, grid[1] * side, image_size, bounds);
  int64_t kept_h = bounds[1] - bounds[0], kept_w = bounds[3] - bounds[2];
  int64_t count = base + kept_h * (kept_w + 1);
  float *out = _mlir_memref_to_llvm_alloc((size_t)count * hidden * sizeof *out);
  if (!out) {
    tfm_tensor_release(&first[0]);
    tfm_tensor_release(&first[1]);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for the image's %lld rows",
                    (long long)count);
  }
  memcpy(out, first[0].data, (size_t)base * hidden * sizeof *out);
  for (int64_t y = 0; y < kept_h; ++y)
    memcpy(out + (base + y * (kept_w + 1) + kept_w) * hidden, first[1].data,
           (size_t)hidden * sizeof *out);
  tfm_tensor_release(&first[0]);
  tfm_tensor_release(&first[1]);
  for (int64_t k = 1; k < tiles->shape[0] && code == TFM_OK; ++k) {
    tfm_tensor encoded[2] = {{0}};
    code = encode_tile(model, tiles, k, encoded, 2, status);
    if (code != TFM_OK)
      break;
    place_tile(encoded[0].data, k, grid[1], side, hidden, bounds, base, out);
    tfm_tensor_release(&encoded[0]);
    tfm_tensor_release(&encoded[1]);
  }
  if (code != TFM_OK) {
    _mlir_memref_to_llvm_free(out);
    return code;
  }
  tfm_own_f32(rows, out, 2, (const int64_t[]){count, hidden});
  return tfm_ok(status);
}

/* Idefics3's tiles' rows, one tile's after another's. */
static tfm_status_code concatenate(tfm_model *model, const tfm_tensor *tiles,
                                   tfm_tensor *rows, tfm_status *status) {
  float *out = NULL;
  int64_t per_tile = 0, hidden = 0, count = tiles->shape[0];
  tfm_status_code code = TFM_OK;
  for (int64_t k = 0; k < count && code == TFM_OK; ++k) {
    tfm_tensor encoded = {0};
    code = encode_tile(model, tiles, k, &encoded, 1, status);
    if (code != TFM_OK)
      break;
    if (!out) {
      per_tile = encoded.shape[0];
      hidden = encoded.shape[1];
      out = _mlir_memref_to_llvm_alloc((size_t)(count * per_tile * hidden) *
                                       sizeof *out);
      if (!out)
        code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                        "out of memory for the image's %lld rows",
                        (long long)(count * per_tile));
    }
    if (out)
      memcpy(out + k * per_tile * hidden, encoded.data,
             (size_t)(per_tile * hidden) * sizeof *out);
    tfm_tensor_release(&encoded);
  }
  if (code != TFM_OK) {
    if (out)
      _mlir_memref_to_llvm_free(out);
    return code;
  }
  tfm_own_f32(rows, out, 2, (const int64_t[]){count * per_tile, hidden});
  return tfm_ok(status);
}

tfm_status_code tfm_image_tokens_memory(tfm_model *model, const uint8_t *data,
                                        size_t size, tfm_tensor *rows,
                                        int64_t grid[2], tfm_status *status) {
  if (!model || (!data && size) || !rows)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_tokens: NULL %s",
                    !model  ? "model"
                    : !rows ? "rows"
                            : "data");
  int64_t unused[2];
  if (!grid)
    grid = unused;
  memset(rows, 0, sizeof *rows);
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode_image");
  if (!encode)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @encode_image: it takes no images",
                    tfm_model_get_desc(model)->name);
  tfm_tensor tiles;
  int64_t image_size[2];
  tfm_status_code code =
      tfm_image_tiles(model, data, size, &tiles, grid, image_size, status);
  if (code != TFM_OK)
    return code;
  if (tiles.shape[0] == 1) {
    tfm_tensor out[2] = {{0}};
    code = encode_tile(model, &tiles, 0, out, encode->num_outputs, status);
    tfm_tensor_release(&out[1]);
    *rows = out[0];
  } else if (tfm_model_get_desc(model)->image_preprocessing->split_tiles) {
    code = concatenate(model, &tiles, rows, status);
  } else if (encode->num_outputs != 2) {
    code = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' tiles its images but its @encode_image "
                    "gives no newline row to lay them out with",
                    tfm_model_get_desc(model)->name);
  } else {
    code = lay_out(model, &tiles, grid, image_size, rows, status);
  }
  tfm_tensor_release(&tiles);
  return code;
}

tfm_status_code tfm_image_tokens(tfm_model *model, const char *path,
                                 tfm_tensor *rows, int64_t grid[2],
                                 tfm_status *status) {
  if (!path)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_tokens: NULL path");
  size_t size;
  uint8_t *data = tfm_read_image_file(path, &size, status);
  if (!data)
    return status ? status->code : TFM_ERROR_IO;
  tfm_status_code code =
      tfm_image_tokens_memory(model, data, size, rows, grid, status);
  free(data);
  if (code != TFM_OK)
    tfm_name_file(status, path);
  return code;
}
