/*===- main_vlm.c - images in a vision-language model's prompt ---------===//
 *
 * `./llava --prompt "USER: <image>\nWhat is this? ASSISTANT:" cat.png`:
 * each image's rows (a file's: tfm_image_tokens, LLaVA-NeXT's tiles
 * laid out; --pixels' raw f32 through @encode_image) given to the session
 * for the prompt's placeholders, in order. A prompt may hold one
 * placeholder per image, as chat templates write them (each replaced here
 * by its image's ids: its rows' placeholders, with Idefics3's tokens
 * around its tiles), or every row's, as later processors write them.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tfm_main_takes_images(tfm_model *model) {
  return tfm_model_entry_point(model, "prefill_embeddings") &&
         tfm_model_entry_point(model, "encode_image");
}

/* --pixels' rows: @encode_image of the raw f32 input into `out`, which a
 * model that tiles its images (LLaVA-NeXT, Idefics3) cannot lay out; 1
 * after reporting. */
static int pixels_rows(const char *argv0, tfm_model *model, const char *path,
                       tfm_tensor *out) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  if (desc->image_preprocessing &&
      (desc->image_preprocessing->num_grid_pinpoints > 0 ||
       desc->image_preprocessing->split_tiles)) {
    fprintf(stderr,
            "%s: error: --pixels: model '%s' cuts an image into tiles and "
            "lays out their rows by its size: give the image file\n",
            argv0, desc->name);
    return 1;
  }
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode_image");
  float *pixels = tfm_main_read_features(argv0, encode, path);
  if (!pixels)
    return 1;
  const tfm_tensor_desc *input = &encode->inputs[0];
  tfm_tensor in = {0};
  in.data = pixels;
  in.dtype = TFM_DTYPE_F32;
  in.rank = input->rank;
  memcpy(in.shape, input->shape, sizeof in.shape);
  tfm_status status;
  tfm_status_code code =
      tfm_model_call(model, "encode_image", &in, 1, NULL, out, 1, &status);
  free(pixels);
  return code == TFM_OK ? 0 : tfm_main_fail(argv0, status.message);
}

/* Image `i`'s rows (the files, then --pixels) given to the session, and
 * the ids that stand for it in the prompt (tfm_image_prompt_ids: its rows'
 * placeholders, with Idefics3's tokens around its tiles) in *ids, *count
 * of them. */
static int add_image(const char *argv0, tfm_model *model, tfm_session *session,
                     const tfm_call_options *call, int i, int32_t **ids,
                     int64_t *count) {
  tfm_tensor out = {0};
  tfm_status status;
  int64_t grid[2] = {0, 0};
  if (i == call->image_count) {
    if (pixels_rows(argv0, model, call->pixels, &out))
      return 1;
  } else if (!tfm_image_tokens) {
    fprintf(stderr, "%s: error: %s: " TFM_NO_IMAGE_PREPROCESSING "\n", argv0,
            call->images[i], tfm_model_get_desc(model)->name);
    return 1;
  } else if (tfm_image_tokens(model, call->images[i], &out, grid, &status) !=
             TFM_OK) {
    return tfm_main_fail(argv0, status.message); /* the file named */
  }
  int64_t rows = out.shape[0];
  tfm_status_code code =
      tfm_session_add_image(session, out.data, rows, &status);
  tfm_tensor_release(&out);
  if (code != TFM_OK)
    return tfm_main_fail(argv0, status.message);
  if (tfm_image_prompt_ids(model, grid, rows, NULL, 0, count, &status) !=
      TFM_OK)
    return tfm_main_fail(argv0, status.message);
  *ids = malloc((size_t)*count * sizeof **ids);
  if (!*ids)
    return tfm_main_fail(argv0, "out of memory");
  if (tfm_image_prompt_ids(model, grid, rows, *ids, *count, count, &status) !=
      TFM_OK)
    return tfm_main_fail(argv0, status.message);
  return 0;
}

/* Frees `images` arrays of ids and the lists that hold them. */
static void free_image_ids(int32_t **image_ids, int64_t *lengths, int images) {
  for (int i = 0; image_ids && i < images; ++i)
    free(image_ids[i]);
  free(image_ids);
  free(lengths);
}

int tfm_main_prompt_images(const char *argv0, tfm_model *model,
                           tfm_session *session, const tfm_call_options *call,
                           int32_t **ids, int64_t *n) {
  int images = call->image_count + (call->pixels != NULL);
  int32_t placeholder = tfm_model_get_desc(model)->image_token;
  int64_t given = 0;
  for (int64_t i = 0; i < *n; ++i)
    given += (*ids)[i] == placeholder;
  if (!images && !given)
    return 0;
  if (!images) {
    char message[256];
    snprintf(message, sizeof message,
             "the prompt holds %lld image placeholders (token %d) and no "
             "image is given (image files after the flags, --image, or "
             "--pixels)",
             (long long)given, placeholder);
    return tfm_main_fail(argv0, message);
  }
  int32_t **image_ids = calloc((size_t)images, sizeof *image_ids);
  int64_t *lengths = calloc((size_t)images, sizeof *lengths);
  if (!image_ids || !lengths) {
    free_image_ids(image_ids, lengths, 0);
    return tfm_main_fail(argv0, "out of memory");
  }
  int64_t room = *n;
  for (int i = 0; i < images; ++i) {
    if (add_image(argv0, model, session, call, i, &image_ids[i], &lengths[i])) {
      free_image_ids(image_ids, lengths, images);
      return 1;
    }
    room += lengths[i];
  }
  /* One placeholder an image becomes the image's ids. */
  int32_t *out = malloc((size_t)room * sizeof *out);
  if (!out) {
    free_image_ids(image_ids, lengths, images);
    return tfm_main_fail(argv0, "out of memory");
  }
  tfm_status status;
  int64_t spliced = 0;
  tfm_status_code code = tfm_splice_image_ids(
      placeholder, *ids, *n, (const int32_t *const *)image_ids, lengths, images,
      out, room, &spliced, &status);
  free_image_ids(image_ids, lengths, images);
  if (code != TFM_OK) {
    free(out);
    return tfm_main_fail(argv0, status.message);
  }
  free(*ids);
  *ids = out;
  *n = spliced;
  return 0;
}
