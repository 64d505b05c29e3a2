/*===- main_image.c - a diffusion pipeline's command line ---------------===*
 *
 *   ./sd --prompt "..." [--negative-prompt "..."] --steps N --guidance G
 *        --seed S [--scheduler NAME] [--noise FILE] -o out.png
 *        [--output image.f32]
 * tfm_image_generate with a progress bar on stderr; the image as PNG
 * (tfm_image_write_png, libtfmrt_media) and/or raw f32 [H, W, 3].
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"
#include "runtime/cli/main_options.h"

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
  float *noise = NULL;
  if (o->noise_path) {
    /* Checked against @denoise's latents, whose shape is the noise's. */
    const tfm_entry_point *denoise = tfm_model_entry_point(model, "denoise");
    noise = tfm_main_read_features(argv0, denoise, o->noise_path);
    if (!noise)
      return 1;
    request.noise = noise;
  }
  size_t count = (size_t)(height * width * 3);
  float *image = malloc(count * sizeof *image);
  if (!image) {
    free(noise);
    return tfm_main_fail(argv0, "out of memory for the image");
  }
  tfm_status status;
  const char *notes = NULL;
  int code = 0;
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
  return code;
}
