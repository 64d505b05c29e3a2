/*===- main_image.c - a diffusion pipeline's command line ---------------===*
 *
 *   ./sd --prompt "..." [--negative-prompt "..."] --steps N --guidance G
 *        --seed S [--scheduler NAME] [--noise FILE] -o out.png
 *        [--output image.f32] [--init-image IMG [--strength F] [--mask M]]
 * tfm_image_generate with a progress bar on stderr; the image as PNG
 * (tfm_image_write_png, libtfmrt_media) and/or raw f32 [H, W, 3].
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"
#include "runtime/cli/main_options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The bar: "step 12/30 [=========>          ]". */
static void show_progress(void *user, int32_t step, int32_t steps) {
  (void)user;
  int width = 30, done = steps ? (int)((int64_t)step * width / steps) : width;
  fprintf(stderr, "\rstep %d/%d [", step, steps);
  for (int i = 0; i < width; ++i)
    fputc(i < done ? '=' : i == done ? '>' : ' ', stderr);
  fputc(']', stderr);
  if (step == steps)
    fputc('\n', stderr);
  fflush(stderr);
}

/* An init image or mask file as [height, width, 3] floats in [0, 1], of
 * the compiled size. Returns the exit status (0: read). */
static int read_image(const char *argv0, const char *path, int64_t height,
                      int64_t width, float **rgb) {
  char message[512];
  if (!tfm_image_read)
    return tfm_main_fail(argv0, "this executable was linked without image "
                                "reading (libtfmrt_media)");
  tfm_status status;
  int64_t h = 0, w = 0;
  if (tfm_image_read(path, rgb, &h, &w, &status) != TFM_OK)
    return tfm_main_fail(argv0, status.message);
  if (h != height || w != width) {
    free(*rgb);
    *rgb = NULL;
    snprintf(message, sizeof message,
             "'%s' is %lldx%lld; this pipeline draws %lldx%lld images "
             "(resize it, or compile with tfmc --image-size)",
             path, (long long)w, (long long)h, (long long)width,
             (long long)height);
    return tfm_main_fail(argv0, message);
  }
  return 0;
}

/* A mask's RGB as Pillow's convert("L") gray (ITU-R 601 weights in 16-bit
 * fixed point, on the 8-bit values), in place into the first `pixels`
 * floats, / 255 as diffusers' mask processor. */
static void to_gray(float *rgb, int64_t pixels) {
  for (int64_t p = 0; p < pixels; ++p) {
    uint32_t r = (uint32_t)lrintf(rgb[3 * p] * 255.0f),
             g = (uint32_t)lrintf(rgb[3 * p + 1] * 255.0f),
             b = (uint32_t)lrintf(rgb[3 * p + 2] * 255.0f);
    uint32_t gray = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16;
    rgb[p] = (float)gray / 255.0f;
  }
}

int tfm_main_image(const char *argv0, tfm_model *model,
                   const tfm_main_options *o) {
  const tfm_diffusion_desc *d = tfm_model_get_desc(model)->diffusion;
  int64_t height = d->latent_height * d->vae_scale_factor,
          width = d->latent_width * d->vae_scale_factor;
  char message[256];
  if (!o->prompt)
    return tfm_main_fail(argv0, "give the image's --prompt TEXT");
  if (!o->png_path && !o->call.output_path)
    return tfm_main_fail(argv0, "give -o OUT.png (or --output FILE for raw "
                                "f32)");
  if ((o->width && o->width % 8) || (o->height && o->height % 8)) {
    snprintf(message, sizeof message,
             "--width %ld --height %ld: sizes are multiples of 8", o->width,
             o->height);
    return tfm_main_fail(argv0, message);
  }
  if ((o->width && o->width != width) || (o->height && o->height != height)) {
    snprintf(message, sizeof message,
             "this pipeline was compiled for %lldx%lld images, not %ldx%ld "
             "(tfmc --image-size WxH compiles another size)",
             (long long)width, (long long)height,
             o->width ? o->width : (long)width,
             o->height ? o->height : (long)height);
    return tfm_main_fail(argv0, message);
  }
  tfm_image_request request = {0};
  request.prompt = o->prompt;
  request.negative_prompt = o->negative_prompt;
  request.steps = (int32_t)o->steps;
  request.guidance = o->guidance;
  request.seed = o->sampler.seed;
  request.scheduler = o->scheduler;
  request.progress = show_progress;
  float *noise = NULL, *init = NULL, *mask = NULL;
  int code = 0;
  if (o->init_image)
    code = read_image(argv0, o->init_image, height, width, &init);
  if (!code && o->mask) {
    code = read_image(argv0, o->mask, height, width, &mask);
    if (!code)
      to_gray(mask, height * width);
  }
  if (code) {
    free(init);
    free(mask);
    return code;
  }
  request.init_image = init;
  request.mask = mask;
  request.strength = o->strength;
  if (o->noise_path) {
    int64_t latents[3] = {d->latent_channels, d->latent_height,
                          d->latent_width};
    noise = tfm_main_read_f32_file(argv0, o->noise_path, latents, 3,
                                   "the initial latents are");
    if (!noise) {
      free(init);
      free(mask);
      return 1;
    }
    request.noise = noise;
  }
  size_t count = (size_t)(height * width * 3);
  float *image = malloc(count * sizeof *image);
  if (!image) {
    free(noise);
    free(init);
    free(mask);
    return tfm_main_fail(argv0, "out of memory for the image");
  }
  tfm_status status;
  const char *notes = NULL;
  if (tfm_image_generate(model, &request, image, (int64_t)count, &notes,
                         &status) != TFM_OK)
    code = tfm_main_fail(argv0, status.message);
  if (!code && notes)
    fprintf(stderr, "%s: note: %s\n", argv0, notes);
  if (!code && o->call.output_path &&
      !tfm_main_write_floats(o->call.output_path, image, count)) {
    snprintf(message, sizeof message, "cannot write '%s'",
             o->call.output_path);
    code = tfm_main_fail(argv0, message);
  }
  if (!code && o->png_path) {
    if (!tfm_image_write_png)
      code = tfm_main_fail(argv0, "this executable was linked without PNG "
                                  "writing (libtfmrt_media)");
    else if (tfm_image_write_png(o->png_path, image, height, width,
                                 &status) != TFM_OK)
      code = tfm_main_fail(argv0, status.message);
  }
  free(image);
  free(noise);
  free(init);
  free(mask);
  return code;
}
