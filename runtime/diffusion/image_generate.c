/*===- image_generate.c - Stable Diffusion's sampling loop ---------------===*
 *
 * tfm_image_generate: diffusers' StableDiffusionPipeline.__call__ over the
 * model's entry points. The prompt and the negative prompt are tokenized
 * as CLIPTokenizer(padding="max_length", truncation=True) does and encoded
 * once (@encode_text); the scheduler (schedulers.h) is built from the
 * folder's scheduler_config.json (tfm_diffusion_desc.scheduler_config) or
 * the requested name; each step calls @denoise on the negative and the
 * positive text and mixes them by the guidance scale; @decode_latents
 * turns latents / scaling_factor into the image, then (x / 2 + 0.5)
 * clamped to [0, 1], channels last.
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
 * text did not fit. */
static tfm_status_code tokenize_prompt(tfm_model *model,
                                       const tfm_diffusion_desc *d,
                                       const char *text, int32_t *ids, int *cut,
                                       tfm_status *status) {
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

/* One call of a one-input, one-output entry point into `out` (n floats). */
static tfm_status_code call_into(tfm_model *model, const char *name,
                                 const tfm_tensor *inputs, int32_t count,
                                 float *out, int64_t n, tfm_status *status) {
  tfm_tensor output;
  memset(&output, 0, sizeof output);
  tfm_status_code code =
      tfm_model_call(model, name, inputs, count, NULL, &output, 1, status);
  if (code != TFM_OK)
    return code;
  int64_t elements = 1;
  for (int32_t k = 0; k < output.rank; ++k)
    elements *= output.shape[k];
  if (elements != n) {
    tfm_tensor_release(&output);
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@%s returned %lld values, expected %lld", name,
                    (long long)elements, (long long)n);
  }
  memcpy(out, output.data, (size_t)n * sizeof *out);
  tfm_tensor_release(&output);
  return TFM_OK;
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

/* The text encoder's states of `text` ([text_tokens, hidden]). */
static tfm_status_code encode_prompt(tfm_model *model,
                                     const tfm_diffusion_desc *d,
                                     const char *text, float *states, int64_t n,
                                     int *cut, tfm_status *status) {
  int32_t ids[1024];
  if (d->text_tokens > 1024)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a text encoder of %lld tokens", (long long)d->text_tokens);
  tfm_status_code code = tokenize_prompt(model, d, text, ids, cut, status);
  if (code != TFM_OK)
    return code;
  tfm_tensor input;
  memset(&input, 0, sizeof input);
  input.dtype = TFM_DTYPE_I32;
  input.rank = 1;
  input.shape[0] = d->text_tokens;
  input.data = ids;
  return call_into(model, "encode_text", &input, 1, states, n, status);
}

const char *tfm_image_scheduler_names(void) { return tfm_scheduler_names(); }

/* What one generation holds: freed together. */
typedef struct {
  float *text, *negative, *latents, *input, *uncond, *cond, *noise, *pixels;
  /* Image-to-image and inpainting: the image in [-1, 1], [3, H, W]; the
   * VAE's moments; inpainting's mask at the latents' size and the masked
   * image's latents. */
  float *start, *moments, *mask, *masked;
  tfm_scheduler *scheduler;
} buffers;

static void free_buffers(buffers *b) {
  float *all[] = {b->text,  b->negative, b->latents, b->input,
                  b->uncond, b->cond,    b->noise,   b->pixels,
                  b->start, b->moments,  b->mask,    b->masked};
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
  const tfm_entry_point *text_entry =
      tfm_model_entry_point(model, "encode_text");
  if (!text_entry || text_entry->num_outputs != 1 ||
      text_entry->outputs[0].rank != 2 || text_entry->outputs[0].shape[1] <= 0)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @encode_text of [tokens, hidden]",
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
  tfm_scheduler_config_pipeline_fixups(&folder, fixups[kind]);
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
  b.input = malloc((size_t)unet_n * f);
  b.uncond = guided ? malloc((size_t)n * f) : NULL;
  b.cond = malloc((size_t)n * f);
  b.noise = malloc((size_t)n * f);
  b.pixels = malloc((size_t)pixels * f);
  b.start = images ? malloc((size_t)pixels * f) : NULL;
  b.moments = images ? malloc((size_t)(2 * n) * f) : NULL;
  b.mask = kind == INPAINTING ? malloc((size_t)(h * w) * f) : NULL;
  b.masked = kind == INPAINTING ? malloc((size_t)n * f) : NULL;
  if (!b.text || (guided && (!b.negative || !b.uncond)) || !b.latents ||
      !b.input || !b.cond || !b.noise || !b.pixels ||
      (images && (!b.start || !b.moments)) ||
      (kind == INPAINTING && (!b.mask || !b.masked))) {
    free_buffers(&b);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "no memory for the latents and the image");
  }

  static _Thread_local char note[256];
  int cut = 0, negative_cut = 0;
  code = encode_prompt(model, d, request->prompt, b.text, text_n, &cut, status);
  if (code == TFM_OK && guided)
    code = encode_prompt(
        model, d, request->negative_prompt ? request->negative_prompt : "",
        b.negative, text_n, &negative_cut, status);
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

  int64_t unet_shape[3] = {d->unet_in_channels, h, w};
  int64_t text_shape[2] = {d->text_tokens, hidden};
  int64_t one = 1;
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
    float t = tfm_scheduler_timestep(b.scheduler, i);
    tfm_tensor inputs[3] = {f32_tensor(b.input, 3, unet_shape),
                            f32_tensor(&t, 1, &one),
                            f32_tensor(b.text, 2, text_shape)};
    code = call_into(model, "denoise", inputs, 3, b.cond, n, status);
    if (code == TFM_OK && guided) {
      inputs[2] = f32_tensor(b.negative, 2, text_shape);
      code = call_into(model, "denoise", inputs, 3, b.uncond, n, status);
      /* uncond + g * (cond - uncond), in diffusers' order. */
      for (int64_t k = 0; code == TFM_OK && k < n; ++k)
        b.cond[k] = b.uncond[k] + guidance * (b.cond[k] - b.uncond[k]);
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
