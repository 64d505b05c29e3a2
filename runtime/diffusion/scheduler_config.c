/*===- scheduler_config.c - scheduler_config.json as diffusers reads it --===//
 *
 * The keys of a scheduler config, one table row each (its JSON name, type,
 * field, the classes whose __init__ takes it, its string values); the
 * classes' defaults; the user-facing names; and diffusers' two ways of
 * changing a config: `from_config` (a switch of scheduler keeps the keys
 * the file had and nothing the old class defaulted, through
 * `_use_default_values`) and the pipelines' fix-ups of old config files.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/diffusion/schedulers.h"

#include "runtime/core/status.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define K_DDIM (1u << TFM_SCHEDULER_DDIM)
#define K_PNDM (1u << TFM_SCHEDULER_PNDM)
#define K_EULER (1u << TFM_SCHEDULER_EULER)
#define K_EULER_A (1u << TFM_SCHEDULER_EULER_ANCESTRAL)
#define K_DPM (1u << TFM_SCHEDULER_DPMPP_2M)
#define K_ALL (K_DDIM | K_PNDM | K_EULER | K_EULER_A | K_DPM)

static const char *const kClassNames[TFM_SCHEDULER_KIND_COUNT] = {
    [TFM_SCHEDULER_DDIM] = "DDIMScheduler",
    [TFM_SCHEDULER_PNDM] = "PNDMScheduler",
    [TFM_SCHEDULER_EULER] = "EulerDiscreteScheduler",
    [TFM_SCHEDULER_EULER_ANCESTRAL] = "EulerAncestralDiscreteScheduler",
    [TFM_SCHEDULER_DPMPP_2M] = "DPMSolverMultistepScheduler",
};

typedef enum {
  KEY_INT,
  KEY_NUMBER,
  KEY_OPTIONAL_NUMBER, /* a number or null (NaN) */
  KEY_BOOL,
  KEY_CHOICE,  /* one of `choices` */
  KEY_BETAS,   /* an array or null */
  KEY_VARIANCE /* a string or null: learned or not */
} key_type;

typedef struct {
  const char *name;
  int value;
} choice;

typedef struct {
  const char *name;
  key_type type;
  size_t offset;
  unsigned kinds;        /* the classes whose __init__ takes the key */
  const choice *choices; /* KEY_CHOICE: NULL-terminated */
  int min;               /* KEY_INT: the smallest value allowed */
} key_row;

static const choice kPredictions[] = {{"epsilon", TFM_PREDICTION_EPSILON},
                                      {"v_prediction", TFM_PREDICTION_V},
                                      {"sample", TFM_PREDICTION_SAMPLE},
                                      {NULL, 0}};
static const choice kBetaSchedules[] = {
    {"linear", TFM_BETAS_LINEAR},
    {"scaled_linear", TFM_BETAS_SCALED_LINEAR},
    {"squaredcos_cap_v2", TFM_BETAS_SQUAREDCOS_CAP_V2},
    {NULL, 0}};
static const choice kSpacings[] = {{"leading", TFM_SPACING_LEADING},
                                   {"trailing", TFM_SPACING_TRAILING},
                                   {"linspace", TFM_SPACING_LINSPACE},
                                   {NULL, 0}};
static const choice kInterpolations[] = {
    {"linear", TFM_INTERPOLATION_LINEAR},
    {"log_linear", TFM_INTERPOLATION_LOG_LINEAR},
    {NULL, 0}};
static const choice kTimestepTypes[] = {
    {"discrete", TFM_TIMESTEPS_DISCRETE},
    {"continuous", TFM_TIMESTEPS_CONTINUOUS},
    {NULL, 0}};
/* "deis" and the UniPC solver types are what DPMSolverMultistepScheduler's
 * __init__ turns into dpmsolver++ and midpoint. */
static const choice kAlgorithms[] = {{"dpmsolver++", TFM_DPM_SOLVER_PP},
                                     {"sde-dpmsolver++", TFM_DPM_SDE_SOLVER_PP},
                                     {"dpmsolver", TFM_DPM_SOLVER},
                                     {"sde-dpmsolver", TFM_DPM_SDE_SOLVER},
                                     {"deis", TFM_DPM_SOLVER_PP},
                                     {NULL, 0}};
static const choice kSolverTypes[] = {
    {"midpoint", TFM_DPM_MIDPOINT}, {"heun", TFM_DPM_HEUN},
    {"logrho", TFM_DPM_MIDPOINT},   {"bh1", TFM_DPM_MIDPOINT},
    {"bh2", TFM_DPM_MIDPOINT},      {NULL, 0}};
static const choice kFinalSigmas[] = {{"zero", TFM_FINAL_SIGMA_ZERO},
                                      {"sigma_min", TFM_FINAL_SIGMA_SIGMA_MIN},
                                      {NULL, 0}};

#define FIELD(f) offsetof(tfm_scheduler_config, f)

/* Bit k of `present` is row k: append rows, never reorder them. */
static const key_row kKeys[] = {
    {"num_train_timesteps", KEY_INT, FIELD(num_train_timesteps), K_ALL, NULL,
     1},
    {"beta_start", KEY_NUMBER, FIELD(beta_start), K_ALL, NULL, 0},
    {"beta_end", KEY_NUMBER, FIELD(beta_end), K_ALL, NULL, 0},
    {"beta_schedule", KEY_CHOICE, FIELD(beta_schedule), K_ALL, kBetaSchedules,
     0},
    {"trained_betas", KEY_BETAS, FIELD(trained_betas), K_ALL, NULL, 0},
    {"prediction_type", KEY_CHOICE, FIELD(prediction_type), K_ALL, kPredictions,
     0},
    {"timestep_spacing", KEY_CHOICE, FIELD(timestep_spacing), K_ALL, kSpacings,
     0},
    {"steps_offset", KEY_INT, FIELD(steps_offset), K_ALL, NULL, 0},
    {"rescale_betas_zero_snr", KEY_BOOL, FIELD(rescale_betas_zero_snr),
     K_DDIM | K_EULER | K_EULER_A | K_DPM, NULL, 0},
    {"set_alpha_to_one", KEY_BOOL, FIELD(set_alpha_to_one), K_DDIM | K_PNDM,
     NULL, 0},
    {"skip_prk_steps", KEY_BOOL, FIELD(skip_prk_steps), K_PNDM, NULL, 0},
    {"clip_sample", KEY_BOOL, FIELD(clip_sample), K_DDIM, NULL, 0},
    {"clip_sample_range", KEY_NUMBER, FIELD(clip_sample_range), K_DDIM, NULL,
     0},
    {"thresholding", KEY_BOOL, FIELD(thresholding), K_DDIM | K_DPM, NULL, 0},
    {"use_karras_sigmas", KEY_BOOL, FIELD(use_karras_sigmas), K_EULER | K_DPM,
     NULL, 0},
    {"sigma_min", KEY_OPTIONAL_NUMBER, FIELD(sigma_min), K_EULER, NULL, 0},
    {"sigma_max", KEY_OPTIONAL_NUMBER, FIELD(sigma_max), K_EULER, NULL, 0},
    {"interpolation_type", KEY_CHOICE, FIELD(interpolation_type), K_EULER,
     kInterpolations, 0},
    {"timestep_type", KEY_CHOICE, FIELD(timestep_type), K_EULER, kTimestepTypes,
     0},
    {"solver_order", KEY_INT, FIELD(solver_order), K_DPM, NULL, 1},
    {"algorithm_type", KEY_CHOICE, FIELD(algorithm_type), K_DPM, kAlgorithms,
     0},
    {"solver_type", KEY_CHOICE, FIELD(solver_type), K_DPM, kSolverTypes, 0},
    {"lower_order_final", KEY_BOOL, FIELD(lower_order_final), K_DPM, NULL, 0},
    {"euler_at_final", KEY_BOOL, FIELD(euler_at_final), K_DPM, NULL, 0},
    {"use_lu_lambdas", KEY_BOOL, FIELD(use_lu_lambdas), K_DPM, NULL, 0},
    {"final_sigmas_type", KEY_CHOICE, FIELD(final_sigmas_type), K_DPM,
     kFinalSigmas, 0},
    {"lambda_min_clipped", KEY_NUMBER, FIELD(lambda_min_clipped), K_DPM, NULL,
     0},
    {"variance_type", KEY_VARIANCE, FIELD(learned_variance), K_DPM, NULL, 0},
};
enum { kKeyCount = sizeof kKeys / sizeof kKeys[0] };
_Static_assert(kKeyCount <= 64, "`present` has a bit per key");

static int key_index(const char *name) {
  for (int k = 0; k < kKeyCount; ++k)
    if (strcmp(kKeys[k].name, name) == 0)
      return k;
  return -1;
}

static void *field(tfm_scheduler_config *c, const key_row *row) {
  return (char *)c + row->offset;
}

tfm_scheduler_config tfm_scheduler_config_defaults(tfm_scheduler_kind kind) {
  tfm_scheduler_config c = {
      .kind = kind,
      .present = 0,
      .num_train_timesteps = 1000,
      .beta_start = 0.0001,
      .beta_end = 0.02,
      .beta_schedule = TFM_BETAS_LINEAR,
      .trained_betas = NULL,
      .num_trained_betas = 0,
      .prediction_type = TFM_PREDICTION_EPSILON,
      .timestep_spacing =
          (kind == TFM_SCHEDULER_DDIM || kind == TFM_SCHEDULER_PNDM)
              ? TFM_SPACING_LEADING
              : TFM_SPACING_LINSPACE,
      .steps_offset = 0,
      .rescale_betas_zero_snr = false,
      .set_alpha_to_one = kind == TFM_SCHEDULER_DDIM,
      .skip_prk_steps = false,
      .clip_sample = true,
      .clip_sample_range = 1.0,
      .thresholding = false,
      .use_karras_sigmas = false,
      .sigma_min = NAN,
      .sigma_max = NAN,
      .interpolation_type = TFM_INTERPOLATION_LINEAR,
      .timestep_type = TFM_TIMESTEPS_DISCRETE,
      .solver_order = 2,
      .algorithm_type = TFM_DPM_SOLVER_PP,
      .solver_type = TFM_DPM_MIDPOINT,
      .lower_order_final = true,
      .euler_at_final = false,
      .use_lu_lambdas = false,
      .final_sigmas_type = TFM_FINAL_SIGMA_ZERO,
      .lambda_min_clipped = -INFINITY,
      .learned_variance = false,
      .eta = 0.0,
  };
  return c;
}

static tfm_status_code unknown_key(const char *key, tfm_status *status) {
  (void)key; /* diffusers ignores keys no class takes; so does tfm */
  return tfm_ok(status);
}

static tfm_status_code wrong_type(const key_row *row, const char *given,
                                  tfm_status *status) {
  static const char *const kExpected[] = {
      [KEY_INT] = "an integer",
      [KEY_NUMBER] = "a number",
      [KEY_OPTIONAL_NUMBER] = "a number or null",
      [KEY_BOOL] = "true or false",
      [KEY_CHOICE] = "a string",
      [KEY_BETAS] = "an array of numbers or null",
      [KEY_VARIANCE] = "a string or null",
  };
  return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                  "scheduler config: \"%s\" is %s; expected %s", row->name,
                  given, kExpected[row->type]);
}

tfm_status_code tfm_scheduler_config_set_string(tfm_scheduler_config *c,
                                                const char *key,
                                                const char *value,
                                                tfm_status *status) {
  int k = key_index(key);
  if (k < 0)
    return unknown_key(key, status);
  const key_row *row = &kKeys[k];
  if (row->type == KEY_VARIANCE) {
    c->learned_variance =
        strcmp(value, "learned") == 0 || strcmp(value, "learned_range") == 0;
    c->present |= UINT64_C(1) << k;
    return tfm_ok(status);
  }
  if (row->type != KEY_CHOICE)
    return wrong_type(row, "a string", status);
  for (const choice *ch = row->choices; ch->name; ++ch) {
    if (strcmp(ch->name, value) == 0) {
      *(int *)field(c, row) = ch->value;
      c->present |= UINT64_C(1) << k;
      return tfm_ok(status);
    }
  }
  char allowed[256] = "";
  for (const choice *ch = row->choices; ch->name; ++ch) {
    size_t used = strlen(allowed);
    snprintf(allowed + used, sizeof allowed - used, "%s\"%s\"",
             used ? ", " : "", ch->name);
  }
  return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                  "scheduler config: \"%s\" is \"%s\"; expected one of %s", key,
                  value, allowed);
}

tfm_status_code tfm_scheduler_config_set_number(tfm_scheduler_config *c,
                                                const char *key, double value,
                                                tfm_status *status) {
  int k = key_index(key);
  if (k < 0)
    return unknown_key(key, status);
  const key_row *row = &kKeys[k];
  switch (row->type) {
  case KEY_INT:
    if (!(value == floor(value)) || value < row->min || value > INT32_MAX)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "scheduler config: \"%s\" is %g; expected an integer "
                      ">= %d",
                      key, value, row->min);
    *(int32_t *)field(c, row) = (int32_t)value;
    break;
  case KEY_NUMBER:
  case KEY_OPTIONAL_NUMBER:
    if (isnan(value))
      return wrong_type(row, "NaN", status);
    *(double *)field(c, row) = value;
    break;
  default:
    return wrong_type(row, "a number", status);
  }
  c->present |= UINT64_C(1) << k;
  return tfm_ok(status);
}

tfm_status_code tfm_scheduler_config_set_bool(tfm_scheduler_config *c,
                                              const char *key, bool value,
                                              tfm_status *status) {
  int k = key_index(key);
  if (k < 0)
    return unknown_key(key, status);
  const key_row *row = &kKeys[k];
  if (row->type != KEY_BOOL)
    return wrong_type(row, value ? "true" : "false", status);
  *(bool *)field(c, row) = value;
  c->present |= UINT64_C(1) << k;
  return tfm_ok(status);
}

tfm_status_code tfm_scheduler_config_set_null(tfm_scheduler_config *c,
                                              const char *key,
                                              tfm_status *status) {
  int k = key_index(key);
  if (k < 0)
    return unknown_key(key, status);
  const key_row *row = &kKeys[k];
  switch (row->type) {
  case KEY_OPTIONAL_NUMBER:
    *(double *)field(c, row) = NAN;
    break;
  case KEY_BETAS:
    c->trained_betas = NULL;
    c->num_trained_betas = 0;
    break;
  case KEY_VARIANCE:
    c->learned_variance = false;
    break;
  default:
    return wrong_type(row, "null", status);
  }
  c->present |= UINT64_C(1) << k;
  return tfm_ok(status);
}

tfm_status_code tfm_scheduler_config_set_numbers(tfm_scheduler_config *c,
                                                 const char *key,
                                                 const double *values,
                                                 int32_t count,
                                                 tfm_status *status) {
  int k = key_index(key);
  if (k < 0)
    return unknown_key(key, status);
  const key_row *row = &kKeys[k];
  if (row->type != KEY_BETAS)
    return wrong_type(row, "an array", status);
  if (count <= 0 || !values)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "scheduler config: \"%s\" is an empty array", key);
  c->trained_betas = values;
  c->num_trained_betas = count;
  c->present |= UINT64_C(1) << k;
  return tfm_ok(status);
}

const char *tfm_scheduler_class_name(tfm_scheduler_kind kind) {
  return (unsigned)kind < TFM_SCHEDULER_KIND_COUNT ? kClassNames[kind] : NULL;
}

tfm_status_code tfm_scheduler_kind_from_class(const char *class_name,
                                              tfm_scheduler_kind *kind,
                                              tfm_status *status) {
  for (int k = 0; k < TFM_SCHEDULER_KIND_COUNT; ++k) {
    if (class_name && strcmp(class_name, kClassNames[k]) == 0) {
      *kind = (tfm_scheduler_kind)k;
      return tfm_ok(status);
    }
  }
  return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                  "scheduler class \"%s\" is not supported; supported: "
                  "DDIMScheduler, PNDMScheduler, EulerDiscreteScheduler, "
                  "EulerAncestralDiscreteScheduler, "
                  "DPMSolverMultistepScheduler",
                  class_name ? class_name : "(none)");
}

/* A user's name, in the form names are compared in: lower case, without
 * spaces, '-' and '_', "++" as "pp". */
static void normalize_name(const char *name, char *out, size_t size) {
  size_t used = 0;
  for (const char *p = name; *p && used + 2 < size; ++p) {
    if (*p == ' ' || *p == '-' || *p == '_')
      continue;
    if (*p == '+') {
      out[used++] = 'p';
      continue;
    }
    out[used++] = (char)tolower((unsigned char)*p);
  }
  out[used] = '\0';
}

typedef struct {
  const char *name; /* normalized */
  tfm_scheduler_kind kind;
  int karras;
  int algorithm;
} name_row;

static const name_row kNames[] = {
    {"ddim", TFM_SCHEDULER_DDIM, -1, -1},
    {"pndm", TFM_SCHEDULER_PNDM, -1, -1},
    {"plms", TFM_SCHEDULER_PNDM, -1, -1},
    {"euler", TFM_SCHEDULER_EULER, 0, -1},
    {"eulerkarras", TFM_SCHEDULER_EULER, 1, -1},
    {"eulera", TFM_SCHEDULER_EULER_ANCESTRAL, -1, -1},
    {"eulerancestral", TFM_SCHEDULER_EULER_ANCESTRAL, -1, -1},
    {"dpmpp2m", TFM_SCHEDULER_DPMPP_2M, 0, TFM_DPM_SOLVER_PP},
    {"dpmpp2mkarras", TFM_SCHEDULER_DPMPP_2M, 1, TFM_DPM_SOLVER_PP},
    {"dpmpp2msde", TFM_SCHEDULER_DPMPP_2M, 0, TFM_DPM_SDE_SOLVER_PP},
    {"dpmpp2msdekarras", TFM_SCHEDULER_DPMPP_2M, 1, TFM_DPM_SDE_SOLVER_PP},
};

const char *tfm_scheduler_names(void) {
  return "ddim, pndm (plms), euler, euler_karras, euler_a (euler_ancestral), "
         "dpm++2m, dpm++2m_karras, dpm++2m_sde, dpm++2m_sde_karras";
}

tfm_status_code tfm_scheduler_kind_from_name(const char *name,
                                             tfm_scheduler_choice *out,
                                             tfm_status *status) {
  char normal[64];
  normalize_name(name ? name : "", normal, sizeof normal);
  for (size_t k = 0; k < sizeof kNames / sizeof kNames[0]; ++k) {
    if (strcmp(kNames[k].name, normal) == 0) {
      out->kind = kNames[k].kind;
      out->karras = kNames[k].karras;
      out->algorithm = kNames[k].algorithm;
      return tfm_ok(status);
    }
  }
  return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                  "unknown scheduler \"%s\"; the schedulers are %s",
                  name ? name : "", tfm_scheduler_names());
}

tfm_scheduler_config
tfm_scheduler_config_from_config(const tfm_scheduler_config *folder,
                                 tfm_scheduler_kind kind) {
  tfm_scheduler_config c = tfm_scheduler_config_defaults(kind);
  for (int k = 0; k < kKeyCount; ++k) {
    if (!(folder->present & (UINT64_C(1) << k)))
      continue;
    const key_row *row = &kKeys[k];
    switch (row->type) {
    case KEY_INT:
      *(int32_t *)field(&c, row) =
          *(const int32_t *)((const char *)folder + row->offset);
      break;
    case KEY_NUMBER:
    case KEY_OPTIONAL_NUMBER:
      *(double *)field(&c, row) =
          *(const double *)((const char *)folder + row->offset);
      break;
    case KEY_BOOL:
    case KEY_VARIANCE:
      *(bool *)field(&c, row) =
          *(const bool *)((const char *)folder + row->offset);
      break;
    case KEY_CHOICE:
      *(int *)field(&c, row) =
          *(const int *)((const char *)folder + row->offset);
      break;
    case KEY_BETAS:
      c.trained_betas = folder->trained_betas;
      c.num_trained_betas = folder->num_trained_betas;
      break;
    }
  }
  c.present = folder->present;
  c.eta = folder->eta;
  return c;
}

tfm_status_code
tfm_scheduler_config_for_name(const tfm_scheduler_config *folder,
                              const char *name, tfm_scheduler_config *out,
                              tfm_status *status) {
  tfm_scheduler_choice choice;
  tfm_status_code code = tfm_scheduler_kind_from_name(name, &choice, status);
  if (code != TFM_OK)
    return code;
  tfm_scheduler_config c =
      tfm_scheduler_config_from_config(folder, choice.kind);
  if (choice.karras >= 0) {
    c.use_karras_sigmas = choice.karras != 0;
    c.present |= UINT64_C(1) << key_index("use_karras_sigmas");
  }
  if (choice.algorithm >= 0) {
    c.algorithm_type = (tfm_dpm_algorithm)choice.algorithm;
    c.present |= UINT64_C(1) << key_index("algorithm_type");
  }
  *out = c;
  return tfm_ok(status);
}

/* hasattr(scheduler.config, key): the class takes it, or the file had it. */
static bool config_has(const tfm_scheduler_config *c, const char *key) {
  int k = key_index(key);
  return (kKeys[k].kinds & (1u << c->kind)) ||
         (c->present & (UINT64_C(1) << k));
}

void tfm_scheduler_config_pipeline_fixups(tfm_scheduler_config *c,
                                          tfm_sd_pipeline pipeline) {
  if (pipeline == TFM_SD_PIPELINE_XL)
    return;
  if (c->steps_offset != 1)
    c->steps_offset = 1;
  if (pipeline == TFM_SD_PIPELINE_INPAINT) {
    if (config_has(c, "skip_prk_steps") && !c->skip_prk_steps)
      c->skip_prk_steps = true;
  } else if (config_has(c, "clip_sample") && c->clip_sample) {
    c->clip_sample = false;
  }
}
