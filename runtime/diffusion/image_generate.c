/*===- image_generate.c - Stable Diffusion's sampling loop ---------------===*
 *
 * tfm_image_generate: diffusers' StableDiffusionPipeline.__call__ over the
 * model's entry points. The prompt and the negative prompt are tokenized
 * as CLIPTokenizer(padding="max_length", truncation=True) does and encoded
 * once (@encode_text), and so are the keys and values every cross-attention
 * reads of it (@text_keys_values), which @denoise takes in its place.
 * SDXL's (StableDiffusionXLPipeline) @encode_text reads the ids twice,
 * padded with each tokenizer's pad token, and returns the pooled
 * text_embeds beside the states; its @denoise also takes them and the
 * add_time_ids (original size, crop origin, target size); a negative
 * prompt left out is zeros under force_zeros_for_empty_prompt. The
 * scheduler (schedulers.h) is built from the folder's
 * scheduler_config.json (tfm_diffusion_desc.scheduler_config) or the
 * requested name; each step calls @denoise once on a batch of two, the
 * negative text's half and the positive's (without guidance both are the
 * positive's, the second taken), and mixes them by the guidance scale;
 * @decode_latents turns latents / scaling_factor into the image, then
 * (x / 2 + 0.5) clamped to [0, 1], channels last.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/diffusion/schedulers.h"
#include "runtime/diffusion/torch_randn.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the "key=value" lines of a scheduler_config into `config`: the
 * class first (its defaults), then every key. */
static tfm_status_code read_scheduler_config(const char *lines,
                                             tfm_scheduler_config *config,
                                             tfm_status *status) {
  const char *class_line = strstr(lines, "_class_name=\"");
  if (!class_line)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the model's scheduler config names no _class_name");
  char class_name[128];
  const char *start = class_line + strlen("_class_name=\"");
  const char *end = strchr(start, '"');
  if (!end || (size_t)(end - start) >= sizeof class_name)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the model's scheduler config has a malformed "
                    "_class_name");
  memcpy(class_name, start, (size_t)(end - start));
  class_name[end - start] = '\0';
  tfm_scheduler_kind kind;
  tfm_status_code code =
      tfm_scheduler_kind_from_class(class_name, &kind, status);
  if (code != TFM_OK)
    return code;
  *config = tfm_scheduler_config_defaults(kind);
  for (const char *line = lines; *line;) {
    const char *newline = strchr(line, '\n');
    size_t length = newline ? (size_t)(newline - line) : strlen(line);
    char text[256];
    if (length >= sizeof text)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "the model's scheduler config has a line of %zu bytes",
                      length);
    memcpy(text, line, length);
    text[length] = '\0';
    line += length + (newline ? 1 : 0);
    char *equals = strchr(text, '=');
    if (!equals)
      continue;
    *equals = '\0';
    const char *key = text, *value = equals + 1;
    size_t size = strlen(value);
    if (size >= 2 && value[0] == '"' && value[size - 1] == '"') {
      equals[size] = '\0'; /* the closing quote */
      code = tfm_scheduler_config_set_string(config, key, value + 1, status);
    } else if (!strcmp(value, "true") || !strcmp(value, "false")) {
      code =
          tfm_scheduler_config_set_bool(config, key, value[0] == 't', status);
    } else {
      char *rest;
      errno = 0;
      double number = strtod(value, &rest);
      if (*rest || errno)
        return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                        "the model's scheduler config has '%s' = '%s', "
                        "neither a string, a number nor true/false",
                        key, value);
      code = tfm_scheduler_config_set_number(config, key, number, status);
    }
    if (code != TFM_OK)
      return code;
  }
  return TFM_OK;
}

/* CLIPTokenizer(text, padding="max_length", max_length=tokens,
 * truncation=True): <|startoftext|> text <|endoftext|>, cut to `tokens`
 * keeping the end of text, then padded with pad_token. Sets *cut when the
 * text did not fit and *used to the tokens before the padding. */
static tfm_status_code tokenize_prompt(tfm_model *model,
                                       const tfm_diffusion_desc *d,
                                       const char *text, int32_t *ids, int *cut,
                                       int64_t *used, tfm_status *status) {
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, status);
  if (!tokenizer)
    return status ? status->code : TFM_ERROR_TOKENIZER;
  int64_t tokens = d->text_tokens, count = 0;
  int32_t *all = NULL;
  tfm_status_code code = tfm_tokenizer_encode_text(
      tokenizer, text, NULL, ids, NULL, tokens, &count, status);
  if (code != TFM_OK)
    return code;
  *cut = count > tokens;
  *used = *cut ? tokens : count;
  if (*cut) {
    /* Encode in full to keep the end of text, as truncation does. */
    all = malloc((size_t)count * sizeof *all);
    if (!all)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                      "no memory for a prompt of %lld tokens",
                      (long long)count);
    int64_t again = 0;
    code = tfm_tokenizer_encode_text(tokenizer, text, NULL, all, NULL, count,
                                     &again, status);
    if (code == TFM_OK) {
      memcpy(ids, all, (size_t)(tokens - 1) * sizeof *ids);
      ids[tokens - 1] = all[count - 1];
    }
    free(all);
    return code;
  }
  for (int64_t i = count; i < tokens; ++i)
    ids[i] = (int32_t)d->pad_token;
  return TFM_OK;
}

/* SDXL's second tokenizer has the first's vocabulary and merges, but its
 * pad token ("!") is a special token of its own, split out of the text
 * before the BPE as CLIPTokenizer splits added tokens: "detailed!" is
 * "detailed</w>" then the pad id, where the first tokenizer has "!</w>".
 * `first` holds the first tokenizer's framed ids (their start and end of
 * text are the second's); the result is framed, cut and padded as
 * tokenize_prompt does. */
static tfm_status_code tokenize_second(tfm_model *model,
                                       const tfm_diffusion_desc *d,
                                       const char *text, const int32_t *first,
                                       int64_t first_used, int32_t *ids,
                                       tfm_status *status) {
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, status);
  if (!tokenizer)
    return status ? status->code : TFM_ERROR_TOKENIZER;
  int64_t tokens = d->text_tokens;
  int32_t pad = (int32_t)d->pad_token_2;
  size_t size = 0;
  const char *spelling = tfm_tokenizer_decode(tokenizer, -1, pad, -1, &size);
  char special[64];
  if (!spelling || size == 0 || size >= sizeof special)
    return tfm_fail(status, TFM_ERROR_TOKENIZER,
                    "the second tokenizer's pad token %d has no spelling to "
                    "split the prompt at", pad);
  memcpy(special, spelling, size);
  special[size] = '\0';
  /* <|startoftext|>, each segment's ids with a pad token between them,
   * <|endoftext|>: at most a token per byte, and the two. */
  size_t length = strlen(text);
  int64_t room = (int64_t)length + 2, count = 0;
  int32_t *all = malloc((size_t)room * sizeof *all);
  char *segment = malloc(length + 1);
  if (!all || !segment) {
    free(all);
    free(segment);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "no memory for a prompt of %zu bytes", length);
  }
  all[count++] = first[0];
  tfm_status_code code = TFM_OK;
  for (const char *at = text; code == TFM_OK;) {
    const char *next = strstr(at, special);
    size_t part = next ? (size_t)(next - at) : strlen(at);
    memcpy(segment, at, part);
    segment[part] = '\0';
    int64_t n = 0;
    code = tfm_tokenizer_encode(tokenizer, segment, -1, all + count,
                                room - 1 - count, &n, status);
    if (code == TFM_OK && n > room - 1 - count)
      code = tfm_fail(status, TFM_ERROR_TOKENIZER,
                      "a prompt segment of %zu bytes took %lld tokens", part,
                      (long long)n);
    if (code != TFM_OK)
      break;
    count += n;
    if (!next)
      break;
    if (count < room - 1)
      all[count++] = pad;
    at = next + size;
  }
  free(segment);
  if (code == TFM_OK) {
    all[count++] = first[first_used - 1]; /* <|endoftext|> */
    /* Cut as the first: keep the end of text; pad with the pad token. */
    int64_t kept = count > tokens ? tokens : count;
    memcpy(ids, all, (size_t)kept * sizeof *ids);
    if (count > tokens)
      ids[tokens - 1] = all[count - 1];
    for (int64_t i = kept; i < tokens; ++i)
      ids[i] = pad;
  }
  free(all);
  return code;
}

/* One call of entry point `name`, its `results` outputs copied into
 * outs[r] (sizes[r] floats each). */
static tfm_status_code call_results(tfm_model *model, const char *name,
                                    const tfm_tensor *inputs, int32_t count,
                                    float *const *outs, const int64_t *sizes,
                                    int32_t results, tfm_status *status) {
  tfm_tensor outputs[2];
  memset(outputs, 0, sizeof outputs);
  if (results < 1 || results > 2)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "@%s: %d results", name,
                    results);
  tfm_status_code code = tfm_model_call(model, name, inputs, count, NULL,
                                        outputs, results, status);
  if (code != TFM_OK)
    return code;
  for (int32_t r = 0; r < results && code == TFM_OK; ++r) {
    int64_t elements = 1;
    for (int32_t k = 0; k < outputs[r].rank; ++k)
      elements *= outputs[r].shape[k];
    if (elements != sizes[r])
      code = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "@%s returned %lld values, expected %lld", name,
                      (long long)elements, (long long)sizes[r]);
    else
      memcpy(outs[r], outputs[r].data, (size_t)sizes[r] * sizeof(float));
  }
  for (int32_t r = 0; r < results; ++r)
    tfm_tensor_release(&outputs[r]);
  return code;
}

/* One call of a one-output entry point into `out` (n floats). */
static tfm_status_code call_into(tfm_model *model, const char *name,
                                 const tfm_tensor *inputs, int32_t count,
                                 float *out, int64_t n, tfm_status *status) {
  return call_results(model, name, inputs, count, &out, &n, 1, status);
}

static tfm_tensor f32_tensor(const float *data, int32_t rank,
                             const int64_t *shape) {
  tfm_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = TFM_DTYPE_F32;
  t.rank = rank;
  for (int32_t k = 0; k < rank; ++k)
    t.shape[k] = shape[k];
  t.data = (void *)data;
  return t;
}

/* The text encoder's states of `text` ([text_tokens, hidden]) and, with
 * SDXL's second text encoder (pooled_n > 0), its pooled text_embeds. */
static tfm_status_code encode_prompt(tfm_model *model,
                                     const tfm_diffusion_desc *d,
                                     const char *text, float *states, int64_t n,
                                     float *pooled, int64_t pooled_n, int *cut,
                                     tfm_status *status) {
  int32_t ids[2][1024];
  int64_t used = 0;
  if (d->text_tokens > 1024)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a text encoder of %lld tokens", (long long)d->text_tokens);
  tfm_status_code code =
      tokenize_prompt(model, d, text, ids[0], cut, &used, status);
  if (code != TFM_OK)
    return code;
  tfm_tensor inputs[2];
  memset(inputs, 0, sizeof inputs);
  for (int k = 0; k < 2; ++k) {
    inputs[k].dtype = TFM_DTYPE_I32;
    inputs[k].rank = 1;
    inputs[k].shape[0] = d->text_tokens;
    inputs[k].data = ids[k];
  }
  if (pooled_n <= 0)
    return call_into(model, "encode_text", inputs, 1, states, n, status);
  code = tokenize_second(model, d, text, ids[0], used, ids[1], status);
  if (code != TFM_OK)
    return code;
  float *outs[2] = {states, pooled};
  int64_t sizes[2] = {n, pooled_n};
  return call_results(model, "encode_text", inputs, 2, outs, sizes, 2, status);
}

const char *tfm_image_scheduler_names(void) { return tfm_scheduler_names(); }

/* What one generation holds: freed together. */
typedef struct {
  /* input and prediction hold @denoise's batch of two: the negative
   * half, then the positive. cond is the guided prediction (and, before
   * the loop, image-to-image's encoded latents). */
  float *text, *negative, *latents, *input, *prediction, *cond, *noise,
      *pixels;
  /* The cross-attentions' keys and values of the negative prompt, then
   * the prompt (@text_keys_values), and SDXL's pooled text_embeds alike. */
  float *keys_values, *pooled;
  /* Image-to-image and inpainting: the image in [-1, 1], [3, H, W]; the
   * VAE's moments; inpainting's mask at the latents' size and the masked
   * image's latents. */
  float *start, *moments, *mask, *masked;
  tfm_scheduler *scheduler;
} buffers;

static void free_buffers(buffers *b) {
  float *all[] = {b->text,       b->negative, b->latents, b->input,
                  b->prediction, b->cond,     b->noise,   b->pixels,
                  b->start,      b->moments,  b->mask,    b->masked,
                  b->keys_values, b->pooled};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
    free(all[i]);
  tfm_scheduler_free(b->scheduler);
}

/* retrieve_latents(vae.encode(pixels), generator) * scaling_factor:
 * the latent distribution's sample mean + exp(0.5 * logvar) * randn, its
 * log-variance clamped to [-30, 20] (DiagonalGaussianDistribution), the
 * draw taken from `generator` as diffusers takes it. */
static tfm_status_code encode_latents(tfm_model *model,
                                      const tfm_diffusion_desc *d,
                                      const float *pixels, int64_t height,
                                      int64_t width, float *moments,
                                      tfm_torch_generator *generator,
                                      float *latents, tfm_status *status) {
  int64_t n = d->latent_channels * d->latent_height * d->latent_width;
  int64_t shape[3] = {3, height, width};
  tfm_tensor input = f32_tensor(pixels, 3, shape);
  tfm_status_code code =
      call_into(model, "encode_image", &input, 1, moments, 2 * n, status);
  if (code != TFM_OK)
    return code;
  tfm_torch_randn(generator, latents, n);
  for (int64_t k = 0; k < n; ++k) {
    float logvar = moments[n + k];
    logvar = logvar < -30.0f ? -30.0f : logvar > 20.0f ? 20.0f : logvar;
    float deviation = expf(0.5f * logvar);
    latents[k] = d->scaling_factor * (moments[k] + deviation * latents[k]);
  }
  return TFM_OK;
}

typedef enum { TEXT_TO_IMAGE, IMAGE_TO_IMAGE, INPAINTING } pipeline_kind;

/* Checks what the request asks for against the UNet: an inpainting UNet
 * (9 input channels: latents, mask, masked image's latents) needs an image
 * and a mask, and only it takes a mask. */
static tfm_status_code check_pipeline(const tfm_diffusion_desc *d,
                                      const tfm_image_request *request,
                                      pipeline_kind *kind,
                                      tfm_status *status) {
  int64_t c = d->latent_channels;
  bool inpainting_unet = d->unet_in_channels == 2 * c + 1;
  if (!inpainting_unet && d->unet_in_channels != c)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the UNet takes %lld channels: expected %lld (latents) or "
                    "%lld (inpainting)",
                    (long long)d->unet_in_channels, (long long)c,
                    (long long)(2 * c + 1));
  if (request->mask && !request->init_image)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a mask needs the image it masks (init_image)");
  if (inpainting_unet && !request->mask)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "this is an inpainting UNet (%lld input channels): give "
                    "an image and a mask",
                    (long long)d->unet_in_channels);
  if (!inpainting_unet && request->mask)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a mask needs an inpainting UNet (%lld input channels); "
                    "this one takes %lld",
                    (long long)(2 * c + 1), (long long)d->unet_in_channels);
  if (request->strength < 0.0f || request->strength > 1.0f ||
      request->strength != request->strength)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "strength %g: expected 0 to 1", request->strength);
  if (request->init_image && request->noise && !request->mask)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "initial latents (noise) are for text-to-image and "
                    "inpainting: image-to-image noises its image's latents");
  *kind = request->mask         ? INPAINTING
          : request->init_image ? IMAGE_TO_IMAGE
                                : TEXT_TO_IMAGE;
  return TFM_OK;
}

/* The first latents and, inpainting, the mask and the masked image's
 * latents, as diffusers' pipelines prepare them (and in the order they
 * draw from the generator). Returns the scheduler's first call. */
static tfm_status_code prepare_latents(tfm_model *model,
                                       const tfm_diffusion_desc *d,
                                       const tfm_image_request *request,
                                       pipeline_kind kind, buffers *b,
                                       tfm_torch_generator *generator,
                                       int32_t *first, tfm_status *status) {
  int64_t h = d->latent_height, w = d->latent_width, c = d->latent_channels;
  int64_t n = c * h * w, factor = d->vae_scale_factor;
  int64_t height = h * factor, width = w * factor, plane = height * width;
  float strength = request->strength > 0.0f ? request->strength
                   : kind == IMAGE_TO_IMAGE ? 0.8f
                                            : 1.0f;
  *first = 0;
  tfm_status_code code = TFM_OK;
  if (kind != TEXT_TO_IMAGE && strength < 1.0f) {
    code = tfm_scheduler_img2img_start(b->scheduler, strength, first, status);
    if (code != TFM_OK)
      return code;
  }
  float sigma = tfm_scheduler_init_noise_sigma(b->scheduler);
  if (kind == TEXT_TO_IMAGE) {
    if (request->noise)
      memcpy(b->latents, request->noise, (size_t)n * sizeof(float));
    else
      tfm_torch_randn(generator, b->latents, n);
    for (int64_t k = 0; k < n; ++k)
      b->latents[k] *= sigma;
    return TFM_OK;
  }
  /* The image: [H, W, 3] in [0, 1] to [3, H, W] in [-1, 1]. */
  for (int64_t p = 0; p < plane; ++p)
    for (int64_t ch = 0; ch < 3; ++ch)
      b->start[ch * plane + p] = 2.0f * request->init_image[p * 3 + ch] - 1.0f;
  if (kind == IMAGE_TO_IMAGE) {
    code = encode_latents(model, d, b->start, height, width, b->moments,
                          generator, b->cond, status);
    if (code != TFM_OK)
      return code;
    tfm_torch_randn(generator, b->noise, n);
    return tfm_scheduler_add_noise(b->scheduler, *first, b->cond, b->noise,
                                   b->latents, n, status);
  }
  /* Inpainting: the latents as text-to-image's (strength 1: pure noise),
   * or the image's noised; then the mask (>= 0.5 redrawn) at the latents'
   * size (nearest), and the latents of the image where it is kept. */
  if (request->noise) {
    memcpy(b->latents, request->noise, (size_t)n * sizeof(float));
    for (int64_t k = 0; k < n; ++k)
      b->latents[k] *= sigma;
  } else if (strength >= 1.0f) {
    tfm_torch_randn(generator, b->latents, n);
    for (int64_t k = 0; k < n; ++k)
      b->latents[k] *= sigma;
  } else {
    code = encode_latents(model, d, b->start, height, width, b->moments,
                          generator, b->cond, status);
    if (code != TFM_OK)
      return code;
    tfm_torch_randn(generator, b->noise, n);
    code = tfm_scheduler_add_noise(b->scheduler, *first, b->cond, b->noise,
                                   b->latents, n, status);
    if (code != TFM_OK)
      return code;
  }
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      b->mask[y * w + x] =
          request->mask[(y * factor) * width + x * factor] >= 0.5f ? 1.0f
                                                                   : 0.0f;
  for (int64_t p = 0; p < plane; ++p)
    if (request->mask[p] >= 0.5f)
      for (int64_t ch = 0; ch < 3; ++ch)
        b->start[ch * plane + p] = 0.0f;
  return encode_latents(model, d, b->start, height, width, b->moments,
                        generator, b->masked, status);
}

tfm_status_code tfm_image_generate(tfm_model *model,
                                   const tfm_image_request *request,
                                   float *image, int64_t capacity,
                                   const char **notes, tfm_status *status) {
  if (notes)
    *notes = NULL;
  if (!model || !request || !image)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_generate: NULL model, request or image");
  const tfm_diffusion_desc *d = tfm_model_get_desc(model)->diffusion;
  if (!d)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' is not a diffusion pipeline",
                    tfm_model_get_desc(model)->name);
  /* SDXL's text_time conditioning: @encode_text's second output is the
   * pooled text_embeds [P] @denoise takes with the add_time_ids. */
  const tfm_entry_point *text_entry =
      tfm_model_entry_point(model, "encode_text");
  bool text_time = d->pad_token_2 >= 0;
  int32_t text_outputs = text_time ? 2 : 1;
  if (!text_entry || text_entry->num_outputs != text_outputs ||
      text_entry->outputs[0].rank != 2 ||
      text_entry->outputs[0].shape[1] <= 0 ||
      (text_time && (text_entry->outputs[1].rank != 1 ||
                     text_entry->outputs[1].shape[0] <= 0)))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @encode_text of [tokens, hidden]%s",
                    tfm_model_get_desc(model)->name,
                    text_time ? " and the pooled [P]" : "");
  int64_t pooled_n = text_time ? text_entry->outputs[1].shape[0] : 0;
  const tfm_entry_point *kv_entry =
      tfm_model_entry_point(model, "text_keys_values");
  if (!kv_entry || kv_entry->num_outputs != 1 ||
      kv_entry->outputs[0].rank != 1 || kv_entry->outputs[0].shape[0] <= 0)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @text_keys_values of [N]",
                    tfm_model_get_desc(model)->name);
  int64_t kv_n = kv_entry->outputs[0].shape[0];
  const tfm_entry_point *unet_entry = tfm_model_entry_point(model, "denoise");
  if (!unet_entry || unet_entry->num_inputs < 3 ||
      unet_entry->inputs[0].rank != 4 || unet_entry->inputs[0].shape[0] != 2)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @denoise of a batch of two latents "
                    "(classifier-free guidance's halves)",
                    tfm_model_get_desc(model)->name);
  if (request->steps < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "steps %d: expected a positive number of steps",
                    request->steps);
  if (!request->prompt)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_image_generate: no prompt");
  pipeline_kind kind;
  tfm_status_code code = check_pipeline(d, request, &kind, status);
  if (code != TFM_OK)
    return code;
  int64_t hidden = text_entry->outputs[0].shape[1];
  int64_t text_n = d->text_tokens * hidden;
  int64_t h = d->latent_height, w = d->latent_width, c = d->latent_channels;
  int64_t n = c * h * w, unet_n = d->unet_in_channels * h * w;
  int64_t height = h * d->vae_scale_factor, width = w * d->vae_scale_factor;
  int64_t pixels = 3 * height * width;
  if (capacity < pixels)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "the image needs %lld floats ([%lld, %lld, 3]), the "
                    "buffer has %lld",
                    (long long)pixels, (long long)height, (long long)width,
                    (long long)capacity);

  /* The scheduler: the folder's as the pipeline fixes it up when it is
   * built, then switched to the one named (diffusers' order). */
  tfm_scheduler_config folder, config;
  code = read_scheduler_config(d->scheduler_config, &folder, status);
  if (code != TFM_OK)
    return code;
  static const tfm_sd_pipeline fixups[] = {TFM_SD_PIPELINE_TEXT2IMG,
                                           TFM_SD_PIPELINE_IMG2IMG,
                                           TFM_SD_PIPELINE_INPAINT};
  tfm_scheduler_config_pipeline_fixups(
      &folder, text_time ? TFM_SD_PIPELINE_XL : fixups[kind]);
  if (request->scheduler && *request->scheduler) {
    code = tfm_scheduler_config_for_name(&folder, request->scheduler, &config,
                                         status);
    if (code != TFM_OK)
      return code;
  } else {
    config = folder;
  }
  int32_t steps = request->steps ? request->steps : 50;
  bool guided = request->guidance > 1.0f;

  buffers b;
  memset(&b, 0, sizeof b);
  code = tfm_scheduler_new(&config, steps, &b.scheduler, status);
  if (code != TFM_OK)
    return code;
  size_t f = sizeof(float);
  bool images = kind != TEXT_TO_IMAGE;
  b.text = malloc((size_t)text_n * f);
  b.negative = guided ? malloc((size_t)text_n * f) : NULL;
  b.latents = malloc((size_t)n * f);
  b.input = malloc((size_t)(2 * unet_n) * f);
  b.prediction = malloc((size_t)(2 * n) * f);
  b.cond = malloc((size_t)n * f);
  b.noise = malloc((size_t)n * f);
  b.pixels = malloc((size_t)pixels * f);
  b.start = images ? malloc((size_t)pixels * f) : NULL;
  b.moments = images ? malloc((size_t)(2 * n) * f) : NULL;
  b.mask = kind == INPAINTING ? malloc((size_t)(h * w) * f) : NULL;
  b.masked = kind == INPAINTING ? malloc((size_t)n * f) : NULL;
  b.pooled = text_time ? malloc((size_t)(2 * pooled_n) * f) : NULL;
  b.keys_values = malloc((size_t)(2 * kv_n) * f);
  if (!b.text || (guided && !b.negative) || !b.latents || !b.prediction ||
      (text_time && !b.pooled) || !b.keys_values ||
      !b.input || !b.cond || !b.noise || !b.pixels ||
      (images && (!b.start || !b.moments)) ||
      (kind == INPAINTING && (!b.mask || !b.masked))) {
    free_buffers(&b);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "no memory for the latents and the image");
  }

  static _Thread_local char note[256];
  int cut = 0, negative_cut = 0;
  /* The batch's halves: [0] the negative prompt's, [1] the prompt's. */
  float *negative_pooled = b.pooled, *pooled = b.pooled ? b.pooled + pooled_n
                                                        : NULL;
  code = encode_prompt(model, d, request->prompt, b.text, text_n, pooled,
                       pooled_n, &cut, status);
  if (code == TFM_OK && guided && !request->negative_prompt &&
      d->force_zeros_for_empty_prompt) {
    /* SDXL: no negative prompt is zeros, not the empty prompt's states. */
    memset(b.negative, 0, (size_t)text_n * f);
    if (negative_pooled)
      memset(negative_pooled, 0, (size_t)pooled_n * f);
  } else if (code == TFM_OK && guided) {
    code = encode_prompt(
        model, d, request->negative_prompt ? request->negative_prompt : "",
        b.negative, text_n, negative_pooled, pooled_n, &negative_cut, status);
  } else if (code == TFM_OK && pooled) {
    memcpy(negative_pooled, pooled, (size_t)pooled_n * f);
  }
  /* Each prompt's keys and values for every cross-attention, once. */
  int64_t text_shape[2] = {d->text_tokens, hidden};
  tfm_tensor states = f32_tensor(b.text, 2, text_shape);
  if (code == TFM_OK)
    code = call_into(model, "text_keys_values", &states, 1,
                     b.keys_values + kv_n, kv_n, status);
  if (code == TFM_OK && guided) {
    states = f32_tensor(b.negative, 2, text_shape);
    code = call_into(model, "text_keys_values", &states, 1, b.keys_values,
                     kv_n, status);
  } else if (code == TFM_OK) { /* without guidance both halves: the prompt's */
    memcpy(b.keys_values, b.keys_values + kv_n, (size_t)kv_n * f);
  }
  if (code != TFM_OK) {
    free_buffers(&b);
    return code;
  }
  if ((cut || negative_cut) && notes) {
    snprintf(note, sizeof note,
             "the %s was cut to the text encoder's %lld tokens, as diffusers "
             "cuts it",
             cut ? "prompt" : "negative prompt", (long long)d->text_tokens);
    *notes = note;
  }

  /* One generator for every draw, in diffusers' order. */
  tfm_torch_generator generator;
  tfm_torch_generator_seed(&generator, request->seed, TFM_TORCH_NORMAL_AVX2);
  int32_t first = 0;
  code = prepare_latents(model, d, request, kind, &b, &generator, &first,
                         status);

  int64_t unet_shape[4] = {2, d->unet_in_channels, h, w};
  int64_t kv_shape[2] = {2, kv_n}, pooled_shape[2] = {2, pooled_n};
  int64_t one = 1, six = 6;
  /* add_time_ids: original_size, crops_coords_top_left, target_size. */
  float time_ids[6] = {(float)height, (float)width, 0.0f,
                       0.0f,          (float)height, (float)width};
  int32_t calls = tfm_scheduler_count(b.scheduler);
  float guidance = request->guidance;
  for (int32_t i = first; i < calls && code == TFM_OK; ++i) {
    /* The scaled latents, then (inpainting) the mask and the masked
     * image's latents, unscaled. */
    memcpy(b.input, b.latents, (size_t)n * f);
    tfm_scheduler_scale_model_input(b.scheduler, i, b.input, n);
    if (kind == INPAINTING) {
      memcpy(b.input + n, b.mask, (size_t)(h * w) * f);
      memcpy(b.input + n + h * w, b.masked, (size_t)n * f);
    }
    memcpy(b.input + unet_n, b.input, (size_t)unet_n * f); /* both halves */
    float t = tfm_scheduler_timestep(b.scheduler, i);
    tfm_tensor inputs[5] = {f32_tensor(b.input, 4, unet_shape),
                            f32_tensor(&t, 1, &one),
                            f32_tensor(b.keys_values, 2, kv_shape),
                            f32_tensor(b.pooled, 2, pooled_shape),
                            f32_tensor(time_ids, 1, &six)};
    code = call_into(model, "denoise", inputs, text_time ? 5 : 3,
                     b.prediction, 2 * n, status);
    const float *uncond = b.prediction, *cond = b.prediction + n;
    if (code == TFM_OK && guided) {
      /* uncond + g * (cond - uncond), in diffusers' order. */
      for (int64_t k = 0; k < n; ++k)
        b.cond[k] = uncond[k] + guidance * (cond[k] - uncond[k]);
    } else if (code == TFM_OK) {
      memcpy(b.cond, cond, (size_t)n * f);
    }
    const float *noise = NULL;
    if (code == TFM_OK && tfm_scheduler_needs_noise(b.scheduler)) {
      tfm_torch_randn(&generator, b.noise, n);
      noise = b.noise;
    }
    if (code == TFM_OK)
      code = tfm_scheduler_step(b.scheduler, i, b.cond, b.latents, n, noise,
                                status);
    if (code == TFM_OK && request->progress)
      request->progress(request->user, i + 1 - first, calls - first);
  }
  if (code == TFM_OK) {
    for (int64_t k = 0; k < n; ++k)
      b.latents[k] /= d->scaling_factor;
    int64_t latent_shape[3] = {c, h, w};
    tfm_tensor input = f32_tensor(b.latents, 3, latent_shape);
    code = call_into(model, "decode_latents", &input, 1, b.pixels, pixels,
                     status);
  }
  if (code == TFM_OK) {
    /* [3, H, W] in [-1, 1] -> [H, W, 3] in [0, 1]. */
    int64_t plane = height * width;
    for (int64_t p = 0; p < plane; ++p)
      for (int64_t ch = 0; ch < 3; ++ch) {
        float v = b.pixels[ch * plane + p] / 2.0f + 0.5f;
        image[p * 3 + ch] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
      }
  }
  free_buffers(&b);
  return code == TFM_OK ? tfm_ok(status) : code;
}
