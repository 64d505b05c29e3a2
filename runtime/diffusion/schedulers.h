/*===- schedulers.h - diffusers' schedulers for Stable Diffusion -*- C -*-===*
 *
 * The sampling loop of a diffusion model asks a scheduler which timesteps
 * to run the UNet at, how to scale its input, and how to turn each UNet
 * output into the next latents. These are the schedulers the published
 * Stable Diffusion scheduler_config.json files name, transcribed from
 * diffusers 0.27.2 so that a run from the same latents gives diffusers'
 * image: float32 where diffusers computes with torch tensors, double where
 * it computes with NumPy (timestep spacing, sigma interpolation, Karras
 * sigmas), in the same order of operations.
 *
 *   kind             diffusers class                  user names
 *   DDIM             DDIMScheduler                    ddim
 *   PNDM             PNDMScheduler (PLMS)             pndm, plms
 *   EULER            EulerDiscreteScheduler           euler, euler_karras
 *   EULER_ANCESTRAL  EulerAncestralDiscreteScheduler  euler_a,
 *                                                     euler_ancestral
 *   DPMPP_2M         DPMSolverMultistepScheduler      dpm++2m,
 *                                                     dpm++2m_karras,
 *                                                     dpm++2m_sde,
 *                                                     dpm++2m_sde_karras
 *
 * Names are matched ignoring case, spaces, '-' and '_', and with "pp" for
 * "++", so stable-diffusion.cpp's "euler_a", "dpm++2m" and AUTOMATIC1111's
 * "Euler a", "DPM++ 2M Karras", "DPM++ 2M SDE" all work. A "_karras" name
 * turns Karras sigmas on and the plain name turns them off; "_sde" picks
 * algorithm_type sde-dpmsolver++ and the plain dpm++2m picks dpmsolver++.
 * Euler ancestral has no Karras sigmas in diffusers 0.27.2.
 *
 * How it is used, as diffusers' StableDiffusionPipeline does:
 *
 *   tfm_scheduler_config c = tfm_scheduler_config_defaults(kind);
 *   ...tfm_scheduler_config_set_*(&c, key, value) for each key of the json;
 *   tfm_scheduler_config_pipeline_fixups(&c, TFM_SD_PIPELINE_TEXT2IMG);
 *   [tfm_scheduler_config_for_name(&c, "euler_a", &c)  -- --scheduler,
 *    after the fix-ups: diffusers fixes the folder's config when it builds
 *    the pipeline, and a switch takes the fixed config]
 *   tfm_scheduler_new(&c, steps, &s);
 *   latents *= tfm_scheduler_init_noise_sigma(s);
 *   for (i = first; i < tfm_scheduler_count(s); ++i) {
 *     input = latents; tfm_scheduler_scale_model_input(s, i, input, n);
 *     eps = unet(input, tfm_scheduler_timestep(s, i), ...);
 *     tfm_scheduler_step(s, i, eps, latents, n, noise_or_NULL);
 *   }
 * with first = 0, or tfm_scheduler_img2img_start for image-to-image, whose
 * latents are tfm_scheduler_add_noise(image latents, noise, first).
 *
 * Errors are tfm_status (TFM_ERROR_INVALID_ARGUMENT) with a message that
 * names the key, value or index and what is allowed. A scheduler is used by
 * one thread at a time; tfm_scheduler_free(NULL) does nothing.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_DIFFUSION_SCHEDULERS_H
#define TFM_RUNTIME_DIFFUSION_SCHEDULERS_H

#include "tfm/tfm_runtime.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TFM_SCHEDULER_DDIM = 0,
  TFM_SCHEDULER_PNDM = 1,
  TFM_SCHEDULER_EULER = 2,
  TFM_SCHEDULER_EULER_ANCESTRAL = 3,
  TFM_SCHEDULER_DPMPP_2M = 4, /* DPMSolverMultistepScheduler */
  TFM_SCHEDULER_KIND_COUNT = 5
} tfm_scheduler_kind;

/* The values of the string-valued keys, in the order of the strings. */
typedef enum {
  TFM_PREDICTION_EPSILON = 0, /* "epsilon" */
  TFM_PREDICTION_V = 1,       /* "v_prediction" */
  TFM_PREDICTION_SAMPLE = 2   /* "sample": DDIM, Euler and DPM++ */
} tfm_prediction_type;

typedef enum {
  TFM_BETAS_LINEAR = 0,           /* "linear" */
  TFM_BETAS_SCALED_LINEAR = 1,    /* "scaled_linear" */
  TFM_BETAS_SQUAREDCOS_CAP_V2 = 2 /* "squaredcos_cap_v2" */
} tfm_beta_schedule;

typedef enum {
  TFM_SPACING_LEADING = 0,  /* "leading" */
  TFM_SPACING_TRAILING = 1, /* "trailing" */
  TFM_SPACING_LINSPACE = 2  /* "linspace" */
} tfm_timestep_spacing;

typedef enum {
  TFM_INTERPOLATION_LINEAR = 0,    /* "linear" */
  TFM_INTERPOLATION_LOG_LINEAR = 1 /* "log_linear" */
} tfm_interpolation_type;

typedef enum {
  TFM_TIMESTEPS_DISCRETE = 0,  /* "discrete" */
  TFM_TIMESTEPS_CONTINUOUS = 1 /* "continuous": 0.25 log(sigma), with v */
} tfm_timestep_type;

typedef enum {
  TFM_DPM_SOLVER_PP = 0,     /* "dpmsolver++" (also "deis", as diffusers) */
  TFM_DPM_SDE_SOLVER_PP = 1, /* "sde-dpmsolver++": needs noise each step */
  TFM_DPM_SOLVER = 2,        /* "dpmsolver": refused by tfm_scheduler_new */
  TFM_DPM_SDE_SOLVER = 3     /* "sde-dpmsolver": refused likewise */
} tfm_dpm_algorithm;

typedef enum {
  TFM_DPM_MIDPOINT = 0, /* "midpoint" (also "logrho", "bh1", "bh2") */
  TFM_DPM_HEUN = 1      /* "heun" */
} tfm_dpm_solver_type;

typedef enum {
  TFM_FINAL_SIGMA_ZERO = 0,     /* "zero" */
  TFM_FINAL_SIGMA_SIGMA_MIN = 1 /* "sigma_min" */
} tfm_final_sigmas_type;

/* A scheduler_config.json as diffusers reads it: every key any of the five
 * classes takes, whichever class the file names (diffusers keeps the keys
 * a class does not take, and a class switched to reads them). `present`
 * marks the keys the file had (bit k for the k-th key of the table in
 * scheduler_config.c, set by tfm_scheduler_config_set_*): a switch to
 * another class keeps only those, as diffusers' from_config does. */
typedef struct {
  tfm_scheduler_kind kind;
  uint64_t present;
  int32_t num_train_timesteps;
  double beta_start, beta_end;
  tfm_beta_schedule beta_schedule;
  /* Given betas instead of a schedule (null: none). Not copied: the array
   * must live until tfm_scheduler_new returns. */
  const double *trained_betas;
  int32_t num_trained_betas;
  tfm_prediction_type prediction_type;
  tfm_timestep_spacing timestep_spacing;
  int32_t steps_offset;
  bool rescale_betas_zero_snr;
  /* DDIM and PNDM */
  bool set_alpha_to_one;
  /* PNDM: false runs 12 Runge-Kutta calls before PLMS (SD sets true). */
  bool skip_prk_steps;
  /* DDIM: clamp the predicted x0 to +-clip_sample_range. */
  bool clip_sample;
  double clip_sample_range;
  /* DDIM and DPM++: dynamic thresholding, refused (pixel-space models). */
  bool thresholding;
  /* Euler and DPM++ */
  bool use_karras_sigmas;
  double sigma_min, sigma_max; /* NaN: null, the schedule's own ends */
  /* Euler */
  tfm_interpolation_type interpolation_type;
  tfm_timestep_type timestep_type;
  /* DPM++ */
  int32_t solver_order; /* 1 or 2 */
  tfm_dpm_algorithm algorithm_type;
  tfm_dpm_solver_type solver_type;
  bool lower_order_final;
  bool euler_at_final;
  bool use_lu_lambdas;
  tfm_final_sigmas_type final_sigmas_type;
  double lambda_min_clipped; /* -inf: none */
  bool learned_variance; /* variance_type "learned"/"learned_range": refused */
  /* Not in the file: DDIM's eta, an argument of the pipeline (0: DDIM is
   * deterministic; > 0 needs noise each step). Kept across switches. */
  double eta;
} tfm_scheduler_config;

/* The class's __init__ defaults (`kind`), nothing present. */
tfm_scheduler_config tfm_scheduler_config_defaults(tfm_scheduler_kind kind);

/* Set one key of a scheduler_config.json, marking it present. `key` is the
 * JSON name; keys no supported class takes (and "_class_name" and
 * "_diffusers_version") are ignored, as diffusers ignores them. A value of
 * the wrong JSON type, a string that is not one of the key's values, a
 * non-integer for an integer key, or a count that is not positive fails,
 * naming the key and what it allows. set_bool is for JSON true/false,
 * set_null for JSON null (trained_betas, sigma_min, sigma_max,
 * variance_type, final_sigmas_type), set_numbers for trained_betas (not
 * copied, see above). */
tfm_status_code tfm_scheduler_config_set_string(tfm_scheduler_config *c,
                                                const char *key,
                                                const char *value,
                                                tfm_status *status);
tfm_status_code tfm_scheduler_config_set_number(tfm_scheduler_config *c,
                                                const char *key, double value,
                                                tfm_status *status);
tfm_status_code tfm_scheduler_config_set_bool(tfm_scheduler_config *c,
                                              const char *key, bool value,
                                              tfm_status *status);
tfm_status_code tfm_scheduler_config_set_null(tfm_scheduler_config *c,
                                              const char *key,
                                              tfm_status *status);
tfm_status_code tfm_scheduler_config_set_numbers(tfm_scheduler_config *c,
                                                 const char *key,
                                                 const double *values,
                                                 int32_t count,
                                                 tfm_status *status);

/* `_class_name` to a kind. Another class (LMSDiscreteScheduler, ...) fails
 * with a message naming it and the supported classes. */
tfm_status_code tfm_scheduler_kind_from_class(const char *class_name,
                                              tfm_scheduler_kind *kind,
                                              tfm_status *status);
/* The diffusers class of a kind ("DDIMScheduler", ...), NULL if none. */
const char *tfm_scheduler_class_name(tfm_scheduler_kind kind);

/* A user's scheduler name (see the table above): its kind and what the
 * name sets (-1: the name leaves it). Unknown names fail, listing the
 * names. */
typedef struct {
  tfm_scheduler_kind kind;
  int karras;    /* use_karras_sigmas: 1, 0 or -1 */
  int algorithm; /* DPM++: a tfm_dpm_algorithm or -1 */
} tfm_scheduler_choice;
tfm_status_code tfm_scheduler_kind_from_name(const char *name,
                                             tfm_scheduler_choice *choice,
                                             tfm_status *status);
/* The user names, comma-separated, for help texts and messages. */
const char *tfm_scheduler_names(void);

/* `XScheduler.from_config(folder)` for X = kind: X's defaults, then every
 * key the folder's file had (beta settings, steps_offset, timestep_spacing,
 * prediction_type, clip_sample, ... whichever were in it). Keys the file
 * did not have take X's defaults, not the folder class's: a PNDM file
 * without timestep_spacing gives Euler its "linspace". eta is kept. */
tfm_scheduler_config
tfm_scheduler_config_from_config(const tfm_scheduler_config *folder,
                                 tfm_scheduler_kind kind);

/* The config a user's --scheduler NAME runs: from_config to the name's
 * kind, then what the name sets, as the keyword arguments of from_config
 * (`DPMSolverMultistepScheduler.from_config(cfg, use_karras_sigmas=True)`).
 * Fails for an unknown name. */
tfm_status_code
tfm_scheduler_config_for_name(const tfm_scheduler_config *folder,
                              const char *name, tfm_scheduler_config *out,
                              tfm_status *status);

/* What diffusers' pipelines change in the folder's scheduler config when
 * they are built (their deprecation fix-ups for old config files):
 * text-to-image and image-to-image set steps_offset to 1 and clip_sample
 * (where the config has it) to false; inpainting sets steps_offset to 1
 * and skip_prk_steps (where the config has it) to true; SDXL's pipelines
 * change nothing. As in diffusers the values change but not `present`, so
 * a later switch of scheduler does not carry a fixed-up default. */
typedef enum {
  TFM_SD_PIPELINE_TEXT2IMG = 0, /* StableDiffusionPipeline */
  TFM_SD_PIPELINE_IMG2IMG = 1,  /* StableDiffusionImg2ImgPipeline */
  TFM_SD_PIPELINE_INPAINT = 2,  /* StableDiffusionInpaintPipeline */
  TFM_SD_PIPELINE_XL = 3        /* the StableDiffusionXL* pipelines */
} tfm_sd_pipeline;
void tfm_scheduler_config_pipeline_fixups(tfm_scheduler_config *c,
                                          tfm_sd_pipeline pipeline);

typedef struct tfm_scheduler tfm_scheduler;

/* A scheduler set to `num_inference_steps` (set_timesteps). Fails for 0 or
 * negative steps, more steps than num_train_timesteps, a timestep outside
 * the training range (leading spacing with steps_offset at many steps),
 * PNDM's Runge-Kutta steps with fewer than 4 steps, and configurations
 * diffusers refuses or tfm does not run (sample prediction for PNDM and
 * Euler ancestral, thresholding, learned variance, dpmsolver and
 * sde-dpmsolver, solver_order 3), each named. */
tfm_status_code tfm_scheduler_new(const tfm_scheduler_config *config,
                                  int32_t num_inference_steps,
                                  tfm_scheduler **out, tfm_status *status);
void tfm_scheduler_free(tfm_scheduler *s);

/* Forget the steps taken (the history of PNDM and DPM++), as
 * set_timesteps does, to sample again with the same schedule. */
void tfm_scheduler_reset(tfm_scheduler *s);

/* The UNet calls: `count` of them (the steps, except PNDM: steps + 1 with
 * skip_prk_steps, steps + 9 without), and the timestep the UNet gets at
 * call i, as a float (integral except for Euler's Karras and linspace
 * schedules and Euler ancestral's linspace); NaN for an i outside
 * [0, count). */
int32_t tfm_scheduler_count(const tfm_scheduler *s);
float tfm_scheduler_timestep(const tfm_scheduler *s, int32_t i);

/* The schedule itself, for tests and diagnostics: alphas_cumprod
 * [num_train_timesteps], and the sigmas of Euler, Euler ancestral and
 * DPM++ (count + 1 or more, the last 0 or sigma_min; NULL and 0 for DDIM
 * and PNDM). The arrays live as long as the scheduler. */
const float *tfm_scheduler_alphas_cumprod(const tfm_scheduler *s,
                                          int32_t *length);
const float *tfm_scheduler_sigmas(const tfm_scheduler *s, int32_t *length);

/* The standard deviation of the initial noise: latents = noise * this. */
float tfm_scheduler_init_noise_sigma(const tfm_scheduler *s);

/* Whether tfm_scheduler_step needs `noise` (n standard Gaussians, drawn
 * from the pipeline's generator after the latents: torch_randn.h): Euler
 * ancestral, DDIM with eta > 0, sde-dpmsolver++. (diffusers' plain Euler
 * also draws noise each step and does not use it; no later draw depends
 * on it in diffusers' pipelines.) */
bool tfm_scheduler_needs_noise(const tfm_scheduler *s);

/* The UNet's input at call i, in place: Euler and Euler ancestral divide
 * by sqrt(sigma^2 + 1); the others leave it. i is not checked beyond
 * [0, count) (out of range does nothing). */
void tfm_scheduler_scale_model_input(const tfm_scheduler *s, int32_t i,
                                     float *sample, int64_t n);

/* One step after UNet call i: `sample` (n floats, in place) becomes the
 * latents for call i + 1. Calls are taken in order: the first at any i
 * (image-to-image starts late), each next one at i + 1, all with the same
 * n. Fails, naming the index, for an i out of order or out of range, a
 * changed n, `noise` NULL when the scheduler needs noise, or (PNDM) a
 * timestep outside the training range. */
tfm_status_code tfm_scheduler_step(tfm_scheduler *s, int32_t i,
                                   const float *model_output, float *sample,
                                   int64_t n, const float *noise,
                                   tfm_status *status);

/* Image-to-image: `out` = `original` noised to call i's noise level, as
 * the scheduler's add_noise does at the timestep of call i (out may be
 * original or noise). Fails for an i out of range. */
tfm_status_code tfm_scheduler_add_noise(const tfm_scheduler *s, int32_t i,
                                        const float *original,
                                        const float *noise, float *out,
                                        int64_t n, tfm_status *status);

/* Image-to-image's first call for `strength` in [0, 1], as
 * StableDiffusionImg2ImgPipeline.get_timesteps: the last
 * int(steps * strength) steps run (all for 1). Fails for a strength
 * outside [0, 1] or one that leaves no step. */
tfm_status_code tfm_scheduler_img2img_start(const tfm_scheduler *s,
                                            double strength, int32_t *first,
                                            tfm_status *status);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_DIFFUSION_SCHEDULERS_H */
