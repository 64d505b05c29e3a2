/*===- schedulers.c - DDIM, PNDM, Euler, Euler ancestral, DPM++ 2M ------===//
 *
 * diffusers 0.27.2's schedulers, transcribed. What diffusers computes with
 * torch float32 tensors (betas, alphas_cumprod, sigmas once made tensors,
 * every coefficient of a step and every elementwise update) is float here,
 * in the same order of operations, so that a step gives the same bits;
 * what it computes with NumPy (the timestep spacings, np.interp of the
 * sigmas, Karras sigmas and their timesteps) is double, or float where
 * NumPy's casting rules keep float32. Where torch's and NumPy's arithmetic
 * is not plain IEEE it is theirs (reference_math.c): torch.linspace,
 * torch.log and torch.exp, np.log of float32. torch's cumprod accumulates
 * in double, `x ** 0.5` is a square root and `1 / x` a reciprocal. With
 * these every run of the goldens (SchedulersTest) gives diffusers' bits.
 * Compiled with -ffp-contract=off: no multiply-add is fused.
 *
 * The schedule (timesteps, sigmas) is made once by tfm_scheduler_new, as
 * set_timesteps makes it; a step reads it by call index. The history a
 * multistep method keeps (PNDM's last four outputs and its Runge-Kutta
 * accumulator, DPM++'s previous x0 prediction) lives in the scheduler.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/diffusion/schedulers.h"

#include "runtime/core/status.h"
#include "runtime/diffusion/reference_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tfm_scheduler {
  tfm_scheduler_config config;
  int32_t steps;         /* num_inference_steps */
  int32_t train;         /* num_train_timesteps */
  float *alphas_cumprod; /* [train] */
  float final_alpha_cumprod;
  int32_t count;     /* UNet calls */
  float *timesteps;  /* [count]: what the UNet gets */
  int64_t *discrete; /* [count]: DDIM, PNDM and DPM++'s integer ones */
  float *sigmas;     /* [num_sigmas]: Euler, Euler ancestral, DPM++ */
  int32_t num_sigmas;
  float init_noise_sigma;
  int32_t num_prk; /* PNDM's Runge-Kutta calls, first */
  int64_t *prk;    /* [num_prk] their timesteps */

  /* What the steps taken so far left. */
  int32_t last_index; /* -1: none yet */
  int64_t n;
  int32_t counter; /* PNDM */
  int32_t num_ets; /* PNDM: model outputs kept, oldest first */
  float *ets[4];
  float *prk_sum;    /* PNDM: the Runge-Kutta weighted sum */
  float *cur_sample; /* PNDM: the sample a multi-call step started from */
  bool has_cur_sample;
  float *x0[2]; /* DPM++: x0 predictions, [1] the latest */
  int32_t lower_order_nums;
};

/* _sigma_to_t: where log(sigma) falls among the training log sigmas. The
 * indices come out of NumPy as 1-element arrays, so legacy value-based
 * casting keeps the comparison and the weight in float32 (the double
 * log(sigma) rounded to float first); float32 times the int64 index is
 * float64. */
static double sigma_to_t(double sigma, const float *log_sigmas, int32_t train) {
  double log_sigma = log(sigma > 1e-10 ? sigma : 1e-10);
  float log_sigma32 = (float)log_sigma;
  int64_t cumulative = 0, best = -1;
  int32_t low_idx = 0;
  for (int32_t i = 0; i < train; ++i) {
    cumulative += log_sigma32 - log_sigmas[i] >= 0.0f;
    if (cumulative > best) {
      best = cumulative;
      low_idx = i;
    }
  }
  if (low_idx > train - 2)
    low_idx = train - 2;
  int32_t high_idx = low_idx + 1;
  float low = log_sigmas[low_idx], high = log_sigmas[high_idx];
  float w = (low - log_sigma32) / (low - high);
  w = w < 0 ? 0 : (w > 1 ? 1 : w);
  return (double)(1.0f - w) * (double)low_idx + (double)w * (double)high_idx;
}

/* _convert_to_karras: rho = 7 between sigma_max and sigma_min. */
static void karras_sigmas(double sigma_min, double sigma_max, int32_t count,
                          double *out) {
  const double rho = 7.0;
  double min_inv_rho = pow(sigma_min, 1 / rho);
  double max_inv_rho = pow(sigma_max, 1 / rho);
  tfm_numpy_linspace(0, 1, count, out);
  for (int32_t i = 0; i < count; ++i)
    out[i] = pow(max_inv_rho + out[i] * (min_inv_rho - max_inv_rho), rho);
}

/*===------------------------------ the schedule --------------------------===*/

/* rescale_zero_terminal_snr (Lin et al. 2023, algorithm 1), in float32. */
static void rescale_zero_terminal_snr(float *betas, int32_t train) {
  float *root = malloc((size_t)train * sizeof *root);
  if (!root)
    return;
  double product = 1;
  for (int32_t i = 0; i < train; ++i) {
    product *= (double)(1.0f - betas[i]);
    root[i] = sqrtf((float)product);
  }
  float first = root[0], last = root[train - 1];
  float scale = first / (first - last);
  for (int32_t i = 0; i < train; ++i) {
    root[i] = root[i] - last;
    root[i] = root[i] * scale;
  }
  float previous = root[0] * root[0];
  betas[0] = 1.0f - previous;
  for (int32_t i = 1; i < train; ++i) {
    float bar = root[i] * root[i];
    betas[i] = 1.0f - bar / previous;
    previous = bar;
  }
  free(root);
}

static tfm_status_code make_alphas_cumprod(tfm_scheduler *s,
                                           tfm_status *status) {
  const tfm_scheduler_config *c = &s->config;
  int32_t train = s->train;
  float *betas = malloc((size_t)train * sizeof *betas);
  if (!betas)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  if (c->trained_betas) {
    for (int32_t i = 0; i < train; ++i)
      betas[i] = (float)c->trained_betas[i];
  } else if (c->beta_schedule == TFM_BETAS_LINEAR) {
    tfm_torch_linspace((float)c->beta_start, (float)c->beta_end, train, betas);
  } else if (c->beta_schedule == TFM_BETAS_SCALED_LINEAR) {
    tfm_torch_linspace((float)pow(c->beta_start, 0.5),
                       (float)pow(c->beta_end, 0.5), train, betas);
    for (int32_t i = 0; i < train; ++i)
      betas[i] = betas[i] * betas[i];
  } else {
    /* betas_for_alpha_bar's cosine, in Python floats. */
    for (int32_t i = 0; i < train; ++i) {
      double t1 = (double)i / train, t2 = (double)(i + 1) / train;
      double a1 = cos((t1 + 0.008) / 1.008 * 3.141592653589793 / 2);
      double a2 = cos((t2 + 0.008) / 1.008 * 3.141592653589793 / 2);
      double beta = 1 - (a2 * a2) / (a1 * a1);
      betas[i] = (float)(beta < 0.999 ? beta : 0.999);
    }
  }
  bool rescale = c->rescale_betas_zero_snr && c->kind != TFM_SCHEDULER_PNDM;
  if (rescale)
    rescale_zero_terminal_snr(betas, train);
  double product = 1;
  for (int32_t i = 0; i < train; ++i) {
    product *= (double)(1.0f - betas[i]);
    s->alphas_cumprod[i] = (float)product;
  }
  free(betas);
  /* Euler, Euler ancestral and DPM++ keep the last sigma finite. */
  if (rescale && c->kind != TFM_SCHEDULER_DDIM)
    s->alphas_cumprod[train - 1] = 0x1p-24f;
  s->final_alpha_cumprod = c->set_alpha_to_one ? 1.0f : s->alphas_cumprod[0];
  return tfm_ok(status);
}

/* sqrt((1 - alphas_cumprod) / alphas_cumprod), float32. */
static void train_sigmas(const tfm_scheduler *s, float *sigmas) {
  for (int32_t t = 0; t < s->train; ++t)
    sigmas[t] = sqrtf((1.0f - s->alphas_cumprod[t]) / s->alphas_cumprod[t]);
}

static tfm_status_code allocate_schedule(tfm_scheduler *s, int32_t count,
                                         int32_t num_sigmas,
                                         tfm_status *status) {
  s->count = count;
  s->num_sigmas = num_sigmas;
  s->timesteps = calloc((size_t)count + 1, sizeof *s->timesteps);
  s->discrete = calloc((size_t)count + 1, sizeof *s->discrete);
  s->sigmas = calloc((size_t)num_sigmas + 1, sizeof *s->sigmas);
  if (!s->timesteps || !s->discrete || !s->sigmas)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  return tfm_ok(status);
}

/* The integer timesteps of DDIM's and PNDM's set_timesteps, descending
 * (PNDM's `_timesteps` are these reversed). Returns their number. */
static int32_t integer_timesteps(const tfm_scheduler *s, int64_t *out,
                                 double *scratch) {
  int32_t steps = s->steps, train = s->train;
  const tfm_scheduler_config *c = &s->config;
  switch (c->timestep_spacing) {
  case TFM_SPACING_LINSPACE:
    tfm_numpy_linspace(0, train - 1, steps, scratch);
    for (int32_t k = 0; k < steps; ++k)
      out[k] = (int64_t)rint(scratch[steps - 1 - k]);
    return steps;
  case TFM_SPACING_LEADING: {
    int64_t ratio = train / steps;
    for (int32_t k = 0; k < steps; ++k)
      out[k] = (int64_t)(steps - 1 - k) * ratio + c->steps_offset;
    return steps;
  }
  case TFM_SPACING_TRAILING: {
    double ratio = (double)train / steps;
    int64_t length = tfm_numpy_arange_length(train, 0, -ratio);
    tfm_numpy_arange(train, -ratio, length, scratch);
    for (int64_t k = 0; k < length; ++k)
      out[k] = (int64_t)rint(scratch[k]) - 1;
    return (int32_t)length;
  }
  }
  return 0;
}

/* Euler's and Euler ancestral's float32 timesteps, descending. */
static int32_t float_timesteps(const tfm_scheduler *s, float *out,
                               double *scratch) {
  int32_t steps = s->steps, train = s->train;
  const tfm_scheduler_config *c = &s->config;
  switch (c->timestep_spacing) {
  case TFM_SPACING_LINSPACE:
    tfm_numpy_linspace(0, train - 1, steps, scratch);
    for (int32_t k = 0; k < steps; ++k)
      out[k] = (float)scratch[steps - 1 - k];
    return steps;
  case TFM_SPACING_LEADING: {
    int64_t ratio = train / steps;
    for (int32_t k = 0; k < steps; ++k)
      out[k] = (float)((steps - 1 - k) * ratio) + (float)c->steps_offset;
    return steps;
  }
  case TFM_SPACING_TRAILING: {
    double ratio = (double)train / steps;
    int64_t length = tfm_numpy_arange_length(train, 0, -ratio);
    tfm_numpy_arange(train, -ratio, length, scratch);
    for (int64_t k = 0; k < length; ++k)
      out[k] = (float)rint(scratch[k]) - 1.0f;
    return (int32_t)length;
  }
  }
  return 0;
}

static tfm_status_code check_timesteps(const tfm_scheduler *s,
                                       const int64_t *timesteps, int32_t count,
                                       tfm_status *status) {
  for (int32_t k = 0; k < count; ++k)
    if (timesteps[k] < 0 || timesteps[k] >= s->train)
      return tfm_fail(
          status, TFM_ERROR_INVALID_ARGUMENT,
          "%s with %d steps: timestep %lld is outside the %d training "
          "timesteps (timestep_spacing and steps_offset %d)",
          tfm_scheduler_class_name(s->config.kind), s->steps,
          (long long)timesteps[k], s->train, s->config.steps_offset);
  return tfm_ok(status);
}

static tfm_status_code schedule_ddim(tfm_scheduler *s, double *scratch,
                                     tfm_status *status) {
  int64_t *ts = malloc((size_t)s->steps * 2 * sizeof *ts + 16);
  if (!ts)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  int32_t count = integer_timesteps(s, ts, scratch);
  tfm_status_code code = check_timesteps(s, ts, count, status);
  if (code == TFM_OK)
    code = allocate_schedule(s, count, 0, status);
  if (code == TFM_OK) {
    for (int32_t k = 0; k < count; ++k) {
      s->discrete[k] = ts[k];
      s->timesteps[k] = (float)ts[k];
    }
    s->init_noise_sigma = 1.0f;
  }
  free(ts);
  return code;
}

/* PNDM: with skip_prk_steps the PLMS calls only, the second timestep
 * twice (its first call is a step of Euler's method, the second that
 * step's correction); without, 12 Runge-Kutta calls over the last four
 * timesteps and their midpoints, then PLMS from the fourth. */
static tfm_status_code schedule_pndm(tfm_scheduler *s, double *scratch,
                                     tfm_status *status) {
  int32_t steps = s->steps;
  int64_t *descending = malloc((size_t)steps * 2 * sizeof *descending + 16);
  int64_t *calls = malloc(((size_t)steps + 16) * sizeof *calls);
  if (!descending || !calls) {
    free(descending);
    free(calls);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  int32_t length = integer_timesteps(s, descending, scratch);
  /* `_timesteps` ascending: trailing's are reversed, the others too. */
  int64_t *ascending = descending + steps + 1;
  for (int32_t k = 0; k < length; ++k)
    ascending[k] = descending[length - 1 - k];
  int32_t count = 0, num_prk = 0;
  tfm_status_code code = TFM_OK;
  if (s->config.skip_prk_steps) {
    /* concatenate([ts[:-1], ts[-2:-1], ts[-1:]])[::-1]: the last
     * timestep, the one before it twice, then the rest descending. */
    if (length >= 1)
      calls[count++] = ascending[length - 1];
    if (length >= 2)
      calls[count++] = ascending[length - 2];
    for (int32_t k = length - 2; k >= 0; --k)
      calls[count++] = ascending[k];
  } else {
    if (length < 4) {
      code =
          tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                   "PNDMScheduler with skip_prk_steps false needs at least 4 "
                   "steps; got %d",
                   steps);
    } else {
      /* _timesteps[-4:].repeat(2) + tile([0, T // N // 2], 4), then
       * [:-1].repeat(2)[1:-1], reversed. */
      int64_t half = s->train / steps / 2, eight[8], fourteen[14];
      for (int32_t k = 0; k < 8; ++k)
        eight[k] = ascending[length - 4 + k / 2] + (k % 2 ? half : 0);
      for (int32_t k = 0; k < 14; ++k)
        fourteen[k] = eight[k / 2];
      num_prk = 12;
      for (int32_t k = 0; k < 12; ++k)
        calls[k] = fourteen[12 - k];
      /* then _timesteps[:-3][::-1] */
      for (int32_t k = length - 4; k >= 0; --k)
        calls[num_prk + (length - 4 - k)] = ascending[k];
      count = num_prk + length - 3;
    }
  }
  if (code == TFM_OK)
    code = check_timesteps(s, calls, count, status);
  if (code == TFM_OK)
    code = allocate_schedule(s, count, 0, status);
  if (code == TFM_OK) {
    s->num_prk = num_prk;
    s->prk = malloc(((size_t)num_prk + 1) * sizeof *s->prk);
    if (!s->prk)
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  if (code == TFM_OK) {
    for (int32_t k = 0; k < count; ++k) {
      s->discrete[k] = calls[k];
      s->timesteps[k] = (float)calls[k];
    }
    for (int32_t k = 0; k < num_prk; ++k)
      s->prk[k] = calls[k];
    s->init_noise_sigma = 1.0f;
  }
  free(descending);
  free(calls);
  return code;
}

static float max_sigma_noise(const tfm_scheduler *s) {
  float max_sigma = 0;
  for (int32_t k = 0; k < s->num_sigmas; ++k)
    if (s->sigmas[k] > max_sigma)
      max_sigma = s->sigmas[k];
  if (s->config.timestep_spacing == TFM_SPACING_LINSPACE ||
      s->config.timestep_spacing == TFM_SPACING_TRAILING)
    return max_sigma;
  return sqrtf(max_sigma * max_sigma + 1.0f);
}

static tfm_status_code schedule_euler(tfm_scheduler *s, double *scratch,
                                      tfm_status *status) {
  const tfm_scheduler_config *c = &s->config;
  int32_t train = s->train, steps = s->steps;
  size_t room = (size_t)train + (size_t)steps + 16;
  float *full = malloc(room * sizeof *full);
  float *log_sigmas = malloc(room * sizeof *log_sigmas);
  float *ts = malloc(room * sizeof *ts);
  double *sig = malloc(room * sizeof *sig);
  tfm_status_code code = TFM_OK;
  if (!full || !log_sigmas || !ts || !sig) {
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  train_sigmas(s, full);
  for (int32_t t = 0; t < train; ++t)
    log_sigmas[t] = tfm_numpy_logf(full[t]);
  int32_t count = float_timesteps(s, ts, scratch);
  int32_t num = count;
  bool ancestral = c->kind == TFM_SCHEDULER_EULER_ANCESTRAL;
  if (!ancestral && c->interpolation_type == TFM_INTERPOLATION_LOG_LINEAR) {
    float *lin = malloc(((size_t)steps + 2) * sizeof *lin);
    if (!lin) {
      code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    tfm_torch_linspace(tfm_numpy_logf(full[train - 1]), tfm_numpy_logf(full[0]),
                       steps + 1, lin);
    num = steps + 1;
    for (int32_t k = 0; k < num; ++k)
      sig[k] = (double)tfm_torch_expf(lin[k]);
    free(lin);
  } else {
    for (int32_t k = 0; k < count; ++k)
      sig[k] = tfm_numpy_interp((double)ts[k], full, train);
  }
  if (!ancestral && c->use_karras_sigmas) {
    double sigma_min = isnan(c->sigma_min) ? sig[num - 1] : c->sigma_min;
    double sigma_max = isnan(c->sigma_max) ? sig[0] : c->sigma_max;
    karras_sigmas(sigma_min, sigma_max, steps, sig);
    num = steps;
    count = steps;
    for (int32_t k = 0; k < steps; ++k)
      ts[k] = (float)sigma_to_t(sig[k], log_sigmas, train);
  }
  bool continuous = !ancestral &&
                    c->timestep_type == TFM_TIMESTEPS_CONTINUOUS &&
                    c->prediction_type == TFM_PREDICTION_V;
  if (continuous)
    count = num;
  code = allocate_schedule(s, count, num + 1, status);
  if (code != TFM_OK)
    goto done;
  for (int32_t k = 0; k < num; ++k)
    s->sigmas[k] = (float)sig[k];
  s->sigmas[num] = 0.0f;
  for (int32_t k = 0; k < count; ++k)
    s->timesteps[k] = continuous ? 0.25f * tfm_torch_logf(s->sigmas[k]) : ts[k];
  s->init_noise_sigma = max_sigma_noise(s);
done:
  free(full);
  free(log_sigmas);
  free(ts);
  free(sig);
  return code;
}

static tfm_status_code schedule_dpm(tfm_scheduler *s, double *scratch,
                                    tfm_status *status) {
  const tfm_scheduler_config *c = &s->config;
  int32_t train = s->train, steps = s->steps;
  size_t room = (size_t)train + (size_t)steps + 16;
  float *full = malloc(room * sizeof *full);
  float *log_sigmas = malloc(room * sizeof *log_sigmas);
  int64_t *ts = malloc(room * sizeof *ts);
  double *sig = malloc(room * sizeof *sig);
  tfm_status_code code = TFM_OK;
  if (!full || !log_sigmas || !ts || !sig) {
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  train_sigmas(s, full);
  for (int32_t t = 0; t < train; ++t)
    log_sigmas[t] = tfm_numpy_logf(full[t]);
  /* searchsorted(flip(lambda_t), lambda_min_clipped): the training
   * timesteps whose log-SNR is below the clip are left out. */
  int32_t clipped = 0;
  for (int32_t t = 0; t < train; ++t) {
    float alpha = sqrtf(s->alphas_cumprod[t]);
    float sigma = sqrtf(1.0f - s->alphas_cumprod[t]);
    float lambda = tfm_torch_logf(alpha) - tfm_torch_logf(sigma);
    if ((double)lambda < c->lambda_min_clipped)
      ++clipped;
  }
  int32_t last = train - clipped;
  int32_t count = 0;
  switch (c->timestep_spacing) {
  case TFM_SPACING_LINSPACE:
    tfm_numpy_linspace(0, last - 1, steps + 1, scratch);
    for (int32_t k = 0; k < steps; ++k)
      ts[k] = (int64_t)rint(scratch[steps - k]);
    count = steps;
    break;
  case TFM_SPACING_LEADING: {
    int64_t ratio = last / (steps + 1);
    for (int32_t k = 0; k < steps; ++k)
      ts[k] = (int64_t)(steps - k) * ratio + c->steps_offset;
    count = steps;
    break;
  }
  case TFM_SPACING_TRAILING: {
    double ratio = (double)train / steps;
    int64_t length = tfm_numpy_arange_length(last, 0, -ratio);
    tfm_numpy_arange(last, -ratio, length, scratch);
    for (int64_t k = 0; k < length; ++k)
      ts[k] = (int64_t)rint(scratch[k]) - 1;
    count = (int32_t)length;
    break;
  }
  }
  if (c->use_karras_sigmas) {
    /* Over the whole training range, whatever the spacing. */
    double sigma_min = isnan(c->sigma_min) ? full[0] : c->sigma_min;
    double sigma_max = isnan(c->sigma_max) ? full[train - 1] : c->sigma_max;
    karras_sigmas(sigma_min, sigma_max, steps, sig);
    count = steps;
    for (int32_t k = 0; k < steps; ++k)
      ts[k] = (int64_t)rint(sigma_to_t(sig[k], log_sigmas, train));
  } else if (c->use_lu_lambdas) {
    double lambda_min = log_sigmas[0], lambda_max = log_sigmas[train - 1];
    tfm_numpy_linspace(0, 1, steps, scratch);
    count = steps;
    for (int32_t k = 0; k < steps; ++k) {
      sig[k] = exp(lambda_max + scratch[k] * (lambda_min - lambda_max));
      ts[k] = (int64_t)rint(sigma_to_t(sig[k], log_sigmas, train));
    }
  } else {
    /* np.interp holds the ends beyond the range; diffusers takes no
     * alphas_cumprod at these timesteps, so none is refused. */
    for (int32_t k = 0; k < count; ++k)
      sig[k] = tfm_numpy_interp((double)ts[k], full, train);
  }
  code = allocate_schedule(s, count, count + 1, status);
  if (code != TFM_OK)
    goto done;
  for (int32_t k = 0; k < count; ++k) {
    s->sigmas[k] = (float)sig[k];
    s->discrete[k] = ts[k];
    s->timesteps[k] = (float)ts[k];
  }
  s->sigmas[count] =
      c->final_sigmas_type == TFM_FINAL_SIGMA_SIGMA_MIN ? full[0] : 0.0f;
  s->init_noise_sigma = 1.0f;
done:
  free(full);
  free(log_sigmas);
  free(ts);
  free(sig);
  return code;
}

/*===------------------------------ the object ----------------------------===*/

static tfm_status_code check_config(const tfm_scheduler_config *c,
                                    int32_t steps, tfm_status *status) {
  const char *name = tfm_scheduler_class_name(c->kind);
  if (!name)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "scheduler kind %d is not one of the %d kinds",
                    (int)c->kind, TFM_SCHEDULER_KIND_COUNT);
  if (steps <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: the number of steps must be positive; got %d", name,
                    steps);
  if (c->num_train_timesteps < 2)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: num_train_timesteps must be at least 2; got %d", name,
                    c->num_train_timesteps);
  if (steps > c->num_train_timesteps)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: %d steps are more than the %d training timesteps "
                    "(num_train_timesteps)",
                    name, steps, c->num_train_timesteps);
  if (c->trained_betas && c->num_trained_betas != c->num_train_timesteps)
    return tfm_fail(
        status, TFM_ERROR_INVALID_ARGUMENT,
        "%s: trained_betas has %d values; num_train_timesteps is %d", name,
        c->num_trained_betas, c->num_train_timesteps);
  if (c->steps_offset < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: steps_offset must be >= 0; got %d", name,
                    c->steps_offset);
  if ((unsigned)c->prediction_type > TFM_PREDICTION_SAMPLE ||
      (unsigned)c->beta_schedule > TFM_BETAS_SQUAREDCOS_CAP_V2 ||
      (unsigned)c->timestep_spacing > TFM_SPACING_LINSPACE)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: prediction_type, beta_schedule or "
                    "timestep_spacing out of range",
                    name);
  if (c->prediction_type == TFM_PREDICTION_SAMPLE &&
      (c->kind == TFM_SCHEDULER_PNDM ||
       c->kind == TFM_SCHEDULER_EULER_ANCESTRAL))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s does not support prediction_type \"sample\" (diffusers "
                    "refuses it); use epsilon or v_prediction",
                    name);
  if (c->thresholding &&
      (c->kind == TFM_SCHEDULER_DDIM || c->kind == TFM_SCHEDULER_DPMPP_2M))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: thresholding (dynamic thresholding, for pixel-space "
                    "models) is not supported",
                    name);
  if (c->kind == TFM_SCHEDULER_DDIM && !(c->eta >= 0))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "DDIMScheduler: eta must be >= 0; got %g", c->eta);
  if (c->kind == TFM_SCHEDULER_DPMPP_2M) {
    if (c->solver_order != 1 && c->solver_order != 2)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "DPMSolverMultistepScheduler: solver_order %d is not "
                      "supported; 1 or 2 (DPM++ 2M) are",
                      c->solver_order);
    if (c->algorithm_type != TFM_DPM_SOLVER_PP &&
        c->algorithm_type != TFM_DPM_SDE_SOLVER_PP)
      return tfm_fail(
          status, TFM_ERROR_INVALID_ARGUMENT,
          "DPMSolverMultistepScheduler: algorithm_type \"%s\" is not "
          "supported; \"dpmsolver++\" and \"sde-dpmsolver++\" are",
          c->algorithm_type == TFM_DPM_SOLVER ? "dpmsolver" : "sde-dpmsolver");
    if (c->learned_variance)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "DPMSolverMultistepScheduler: variance_type "
                      "\"learned\" (a UNet that predicts its variance) "
                      "is not supported");
    if (c->use_karras_sigmas && c->use_lu_lambdas)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "DPMSolverMultistepScheduler: use_karras_sigmas "
                      "and use_lu_lambdas are both set");
  }
  if (c->kind == TFM_SCHEDULER_EULER && c->use_karras_sigmas &&
      c->interpolation_type == TFM_INTERPOLATION_LOG_LINEAR &&
      c->timestep_type == TFM_TIMESTEPS_CONTINUOUS)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "EulerDiscreteScheduler: log_linear with continuous "
                    "timesteps and Karras sigmas is not supported");
  return tfm_ok(status);
}

tfm_status_code tfm_scheduler_new(const tfm_scheduler_config *config,
                                  int32_t num_inference_steps,
                                  tfm_scheduler **out, tfm_status *status) {
  if (!config || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_scheduler_new: NULL argument");
  *out = NULL;
  tfm_status_code code = check_config(config, num_inference_steps, status);
  if (code != TFM_OK)
    return code;
  tfm_scheduler *s = calloc(1, sizeof *s);
  double *scratch =
      malloc(((size_t)config->num_train_timesteps + 16) * sizeof *scratch);
  if (s)
    s->alphas_cumprod =
        malloc((size_t)config->num_train_timesteps * sizeof *s->alphas_cumprod);
  if (!s || !scratch || !s->alphas_cumprod) {
    free(scratch);
    tfm_scheduler_free(s);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  s->config = *config;
  s->steps = num_inference_steps;
  s->train = config->num_train_timesteps;
  code = make_alphas_cumprod(s, status);
  s->config.trained_betas = NULL; /* not kept: the caller's */
  if (code == TFM_OK) {
    switch (config->kind) {
    case TFM_SCHEDULER_DDIM:
      code = schedule_ddim(s, scratch, status);
      break;
    case TFM_SCHEDULER_PNDM:
      code = schedule_pndm(s, scratch, status);
      break;
    case TFM_SCHEDULER_EULER:
    case TFM_SCHEDULER_EULER_ANCESTRAL:
      code = schedule_euler(s, scratch, status);
      break;
    default:
      code = schedule_dpm(s, scratch, status);
      break;
    }
  }
  free(scratch);
  if (code == TFM_OK && s->count <= 0)
    code = tfm_fail(
        status, TFM_ERROR_INVALID_ARGUMENT, "%s with %d steps has no timesteps",
        tfm_scheduler_class_name(config->kind), num_inference_steps);
  if (code != TFM_OK) {
    tfm_scheduler_free(s);
    return code;
  }
  tfm_scheduler_reset(s);
  *out = s;
  return tfm_ok(status);
}

static void free_history(tfm_scheduler *s) {
  for (int k = 0; k < 4; ++k) {
    free(s->ets[k]);
    s->ets[k] = NULL;
  }
  for (int k = 0; k < 2; ++k) {
    free(s->x0[k]);
    s->x0[k] = NULL;
  }
  free(s->prk_sum);
  free(s->cur_sample);
  s->prk_sum = s->cur_sample = NULL;
}

void tfm_scheduler_free(tfm_scheduler *s) {
  if (!s)
    return;
  free_history(s);
  free(s->alphas_cumprod);
  free(s->timesteps);
  free(s->discrete);
  free(s->sigmas);
  free(s->prk);
  free(s);
}

void tfm_scheduler_reset(tfm_scheduler *s) {
  if (!s)
    return;
  free_history(s);
  s->last_index = -1;
  s->n = 0;
  s->counter = 0;
  s->num_ets = 0;
  s->has_cur_sample = false;
  s->lower_order_nums = 0;
}

int32_t tfm_scheduler_count(const tfm_scheduler *s) { return s->count; }

float tfm_scheduler_timestep(const tfm_scheduler *s, int32_t i) {
  return i >= 0 && i < s->count ? s->timesteps[i] : NAN;
}

const float *tfm_scheduler_alphas_cumprod(const tfm_scheduler *s,
                                          int32_t *length) {
  *length = s->train;
  return s->alphas_cumprod;
}

const float *tfm_scheduler_sigmas(const tfm_scheduler *s, int32_t *length) {
  *length = s->num_sigmas;
  return s->num_sigmas ? s->sigmas : NULL;
}

float tfm_scheduler_init_noise_sigma(const tfm_scheduler *s) {
  return s->init_noise_sigma;
}

bool tfm_scheduler_needs_noise(const tfm_scheduler *s) {
  switch (s->config.kind) {
  case TFM_SCHEDULER_EULER_ANCESTRAL:
    return true;
  case TFM_SCHEDULER_DDIM:
    return s->config.eta > 0;
  case TFM_SCHEDULER_DPMPP_2M:
    return s->config.algorithm_type == TFM_DPM_SDE_SOLVER_PP;
  default:
    return false;
  }
}

void tfm_scheduler_scale_model_input(const tfm_scheduler *s, int32_t i,
                                     float *sample, int64_t n) {
  if (i < 0 || i >= s->count)
    return;
  if (s->config.kind != TFM_SCHEDULER_EULER &&
      s->config.kind != TFM_SCHEDULER_EULER_ANCESTRAL)
    return;
  float sigma = s->sigmas[i];
  float scale = sqrtf(sigma * sigma + 1.0f);
  for (int64_t k = 0; k < n; ++k)
    sample[k] = sample[k] / scale;
}

/*===------------------------------- the steps ----------------------------===*/

static float alpha_at(const tfm_scheduler *s, int64_t t) {
  return t >= 0 ? s->alphas_cumprod[t] : s->final_alpha_cumprod;
}

static void step_ddim(tfm_scheduler *s, int32_t i, const float *model_output,
                      float *sample, int64_t n, const float *noise) {
  const tfm_scheduler_config *c = &s->config;
  int64_t t = s->discrete[i];
  int64_t prev = t - s->train / s->steps;
  float alpha = s->alphas_cumprod[t];
  float alpha_prev = alpha_at(s, prev);
  float beta = 1.0f - alpha;
  float beta_prev = 1.0f - alpha_prev;
  float root_alpha = sqrtf(alpha), root_beta = sqrtf(beta);
  float variance = (beta_prev / beta) * (1.0f - alpha / alpha_prev);
  float std_dev = (float)c->eta * sqrtf(variance);
  float direction = sqrtf(1.0f - alpha_prev - std_dev * std_dev);
  float root_alpha_prev = sqrtf(alpha_prev);
  float range = (float)c->clip_sample_range;
  for (int64_t k = 0; k < n; ++k) {
    float x = sample[k], out = model_output[k], x0, eps;
    switch (c->prediction_type) {
    case TFM_PREDICTION_EPSILON:
      x0 = (x - root_beta * out) / root_alpha;
      eps = out;
      break;
    case TFM_PREDICTION_SAMPLE:
      x0 = out;
      eps = (x - root_alpha * x0) / root_beta;
      break;
    default:
      x0 = root_alpha * x - root_beta * out;
      eps = root_alpha * out + root_beta * x;
      break;
    }
    if (c->clip_sample)
      x0 = fminf(fmaxf(x0, -range), range);
    float next = root_alpha_prev * x0 + direction * eps;
    if (c->eta > 0)
      next = next + std_dev * noise[k];
    sample[k] = next;
  }
}

/* PNDM's _get_prev_sample: from `sample` at timestep t to prev_t, with
 * the (combined) model output. */
static void pndm_prev_sample(const tfm_scheduler *s, const float *sample,
                             int64_t t, int64_t prev_t, const float *output,
                             float *out, int64_t n) {
  float alpha = s->alphas_cumprod[t];
  float alpha_prev = alpha_at(s, prev_t);
  float beta = 1.0f - alpha;
  float beta_prev = 1.0f - alpha_prev;
  float root_alpha = sqrtf(alpha), root_beta = sqrtf(beta);
  float sample_coeff = sqrtf(alpha_prev / alpha);
  float denominator =
      alpha * sqrtf(beta_prev) + sqrtf(alpha * beta * alpha_prev);
  float difference = alpha_prev - alpha;
  bool v = s->config.prediction_type == TFM_PREDICTION_V;
  for (int64_t k = 0; k < n; ++k) {
    float eps = output[k];
    if (v)
      eps = root_alpha * eps + root_beta * sample[k];
    out[k] = sample_coeff * sample[k] - difference * eps / denominator;
  }
}

static tfm_status_code pndm_check(const tfm_scheduler *s, int32_t i, int64_t t,
                                  tfm_status *status) {
  if (t < 0 || t >= s->train)
    return tfm_fail(
        status, TFM_ERROR_INVALID_ARGUMENT,
        "PNDMScheduler: call %d steps from timestep %lld, outside the "
        "%d training timesteps",
        i, (long long)t, s->train);
  return tfm_ok(status);
}

static tfm_status_code step_pndm(tfm_scheduler *s, int32_t i,
                                 const float *model_output, float *sample,
                                 int64_t n, tfm_status *status) {
  int64_t ratio = s->train / s->steps;
  int64_t t = s->discrete[i];
  int32_t counter = s->counter;
  if (counter < s->num_prk && !s->config.skip_prk_steps) {
    /* Runge-Kutta: four calls per step, weighted 1/6, 1/3, 1/3, 1/6. */
    int64_t prev_t = t - (counter % 2 ? 0 : ratio / 2);
    t = s->prk[counter / 4 * 4];
    const float *output = model_output;
    switch (counter % 4) {
    case 0:
      for (int64_t k = 0; k < n; ++k)
        s->prk_sum[k] = (float)(1.0 / 6) * model_output[k];
      memcpy(s->ets[s->num_ets++], model_output, (size_t)n * sizeof *sample);
      memcpy(s->cur_sample, sample, (size_t)n * sizeof *sample);
      s->has_cur_sample = true;
      break;
    case 1:
    case 2:
      for (int64_t k = 0; k < n; ++k)
        s->prk_sum[k] = s->prk_sum[k] + (float)(1.0 / 3) * model_output[k];
      break;
    default:
      for (int64_t k = 0; k < n; ++k)
        s->prk_sum[k] = s->prk_sum[k] + (float)(1.0 / 6) * model_output[k];
      output = s->prk_sum;
      break;
    }
    tfm_status_code code = pndm_check(s, i, t, status);
    if (code != TFM_OK)
      return code;
    pndm_prev_sample(s, s->has_cur_sample ? s->cur_sample : sample, t, prev_t,
                     output, sample, n);
    s->counter++;
    return tfm_ok(status);
  }

  /* PLMS: linear multistep over the last four outputs. */
  int64_t prev_t = t - ratio;
  if (counter != 1) {
    if (s->num_ets == 4) {
      float *oldest = s->ets[0];
      memmove(s->ets, s->ets + 1, 3 * sizeof s->ets[0]);
      s->ets[3] = oldest;
      s->num_ets = 3;
    }
    memcpy(s->ets[s->num_ets++], model_output, (size_t)n * sizeof *sample);
  } else {
    prev_t = t;
    t = t + ratio;
  }
  tfm_status_code code = pndm_check(s, i, t, status);
  if (code != TFM_OK)
    return code;
  float *combined = s->prk_sum; /* free outside the Runge-Kutta calls */
  const float *from = sample;
  int32_t m = s->num_ets;
  const float *e1 = s->ets[m - 1];
  if (m == 1 && counter == 0) {
    memcpy(combined, model_output, (size_t)n * sizeof *sample);
    memcpy(s->cur_sample, sample, (size_t)n * sizeof *sample);
    s->has_cur_sample = true;
  } else if (m == 1 && counter == 1) {
    for (int64_t k = 0; k < n; ++k)
      combined[k] = (model_output[k] + e1[k]) / 2.0f;
    from = s->cur_sample;
    s->has_cur_sample = false;
  } else if (m == 2) {
    const float *e2 = s->ets[m - 2];
    for (int64_t k = 0; k < n; ++k)
      combined[k] = (3.0f * e1[k] - e2[k]) / 2.0f;
  } else if (m == 3) {
    const float *e2 = s->ets[m - 2], *e3 = s->ets[m - 3];
    for (int64_t k = 0; k < n; ++k)
      combined[k] = (23.0f * e1[k] - 16.0f * e2[k] + 5.0f * e3[k]) / 12.0f;
  } else {
    const float *e2 = s->ets[m - 2], *e3 = s->ets[m - 3], *e4 = s->ets[m - 4];
    for (int64_t k = 0; k < n; ++k)
      combined[k] = (float)(1.0 / 24) * (55.0f * e1[k] - 59.0f * e2[k] +
                                         37.0f * e3[k] - 9.0f * e4[k]);
  }
  pndm_prev_sample(s, from, t, prev_t, combined, sample, n);
  s->counter++;
  return tfm_ok(status);
}

static void step_euler(tfm_scheduler *s, int32_t i, const float *model_output,
                       float *sample, int64_t n) {
  /* s_churn is 0 in diffusers' pipelines: sigma_hat = sigma * (0 + 1). */
  float sigma = s->sigmas[i];
  float sigma_hat = sigma * 1.0f;
  float dt = s->sigmas[i + 1] - sigma_hat;
  float scale = sigma * sigma + 1.0f;
  float c_out = -sigma / sqrtf(scale);
  for (int64_t k = 0; k < n; ++k) {
    float x = sample[k], x0;
    switch (s->config.prediction_type) {
    case TFM_PREDICTION_EPSILON:
      x0 = x - sigma_hat * model_output[k];
      break;
    case TFM_PREDICTION_V:
      x0 = model_output[k] * c_out + x / scale;
      break;
    default:
      x0 = model_output[k];
      break;
    }
    float derivative = (x - x0) / sigma_hat;
    sample[k] = x + derivative * dt;
  }
}

static void step_euler_ancestral(tfm_scheduler *s, int32_t i,
                                 const float *model_output, float *sample,
                                 int64_t n, const float *noise) {
  float sigma = s->sigmas[i];
  float from = s->sigmas[i], to = s->sigmas[i + 1];
  float up = sqrtf(to * to * (from * from - to * to) / (from * from));
  float down = sqrtf(to * to - up * up);
  float dt = down - sigma;
  float scale = sigma * sigma + 1.0f;
  float c_out = -sigma / sqrtf(scale);
  bool v = s->config.prediction_type == TFM_PREDICTION_V;
  for (int64_t k = 0; k < n; ++k) {
    float x = sample[k];
    float x0 =
        v ? model_output[k] * c_out + x / scale : x - sigma * model_output[k];
    float derivative = (x - x0) / sigma;
    float next = x + derivative * dt;
    sample[k] = next + noise[k] * up;
  }
}

/* DPM-Solver's alpha_t and sigma_t of a sigma, and their log-SNR. */
typedef struct {
  float alpha, sigma, lambda;
} dpm_point;

static dpm_point dpm_at(float sigma) {
  dpm_point p;
  p.alpha = 1.0f / sqrtf(sigma * sigma + 1.0f);
  p.sigma = sigma * p.alpha;
  p.lambda = tfm_torch_logf(p.alpha) - tfm_torch_logf(p.sigma);
  return p;
}

static void step_dpm(tfm_scheduler *s, int32_t i, const float *model_output,
                     float *sample, int64_t n, const float *noise) {
  const tfm_scheduler_config *c = &s->config;
  int32_t count = s->count;
  bool final_first_order =
      i == count - 1 &&
      (c->euler_at_final || (c->lower_order_final && count < 15) ||
       c->final_sigmas_type == TFM_FINAL_SIGMA_ZERO);

  /* convert_model_output: the x0 prediction. */
  dpm_point now = dpm_at(s->sigmas[i]);
  float *x0 = s->x0[0];
  s->x0[0] = s->x0[1];
  s->x0[1] = x0;
  for (int64_t k = 0; k < n; ++k) {
    switch (c->prediction_type) {
    case TFM_PREDICTION_EPSILON:
      x0[k] = (sample[k] - now.sigma * model_output[k]) / now.alpha;
      break;
    case TFM_PREDICTION_V:
      x0[k] = now.alpha * sample[k] - now.sigma * model_output[k];
      break;
    default:
      x0[k] = model_output[k];
      break;
    }
  }

  bool sde = c->algorithm_type == TFM_DPM_SDE_SOLVER_PP;
  dpm_point next = dpm_at(s->sigmas[i + 1]);
  float h = next.lambda - now.lambda;
  if (c->solver_order == 1 || s->lower_order_nums < 1 || final_first_order) {
    if (!sde) {
      float a = next.sigma / now.sigma;
      float b = next.alpha * (tfm_torch_expf(-h) - 1.0f);
      for (int64_t k = 0; k < n; ++k)
        sample[k] = a * sample[k] - b * x0[k];
    } else {
      float a = next.sigma / now.sigma * tfm_torch_expf(-h);
      float b = next.alpha * (1.0f - tfm_torch_expf(-2.0f * h));
      float d = next.sigma * sqrtf(1.0f - tfm_torch_expf(-2.0f * h));
      for (int64_t k = 0; k < n; ++k)
        sample[k] = a * sample[k] + b * x0[k] + d * noise[k];
    }
  } else {
    /* Second order; diffusers' lower_order_second (the step before the
     * last with fewer than 15) only matters to third order. */
    dpm_point before = dpm_at(s->sigmas[i - 1]);
    const float *m0 = s->x0[1], *m1 = s->x0[0];
    float h0 = now.lambda - before.lambda;
    float r0 = h0 / h;
    float inverse_r0 = 1.0f / r0;
    if (!sde) {
      float a = next.sigma / now.sigma;
      float b = next.alpha * (tfm_torch_expf(-h) - 1.0f);
      if (c->solver_type == TFM_DPM_MIDPOINT) {
        float half_b = 0.5f * b;
        for (int64_t k = 0; k < n; ++k) {
          float d1 = inverse_r0 * (m0[k] - m1[k]);
          sample[k] = a * sample[k] - b * m0[k] - half_b * d1;
        }
      } else {
        float e = next.alpha * ((tfm_torch_expf(-h) - 1.0f) / h + 1.0f);
        for (int64_t k = 0; k < n; ++k) {
          float d1 = inverse_r0 * (m0[k] - m1[k]);
          sample[k] = a * sample[k] - b * m0[k] + e * d1;
        }
      }
    } else {
      float a = next.sigma / now.sigma * tfm_torch_expf(-h);
      float b = next.alpha * (1.0f - tfm_torch_expf(-2.0f * h));
      float d = next.sigma * sqrtf(1.0f - tfm_torch_expf(-2.0f * h));
      float e =
          c->solver_type == TFM_DPM_MIDPOINT
              ? 0.5f * b
              : next.alpha *
                    ((1.0f - tfm_torch_expf(-2.0f * h)) / (-2.0f * h) + 1.0f);
      for (int64_t k = 0; k < n; ++k) {
        float d1 = inverse_r0 * (m0[k] - m1[k]);
        sample[k] = a * sample[k] + b * m0[k] + e * d1 + d * noise[k];
      }
    }
  }
  if (s->lower_order_nums < c->solver_order)
    s->lower_order_nums++;
}

static tfm_status_code allocate_history(tfm_scheduler *s, int64_t n,
                                        tfm_status *status) {
  size_t bytes = (size_t)n * sizeof(float);
  bool ok = true;
  if (s->config.kind == TFM_SCHEDULER_PNDM) {
    for (int k = 0; k < 4; ++k)
      ok = ok && (s->ets[k] = malloc(bytes));
    ok = ok && (s->prk_sum = malloc(bytes)) && (s->cur_sample = malloc(bytes));
  } else if (s->config.kind == TFM_SCHEDULER_DPMPP_2M) {
    ok = (s->x0[0] = malloc(bytes)) && (s->x0[1] = malloc(bytes));
  }
  if (!ok) {
    free_history(s);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  s->n = n;
  return tfm_ok(status);
}

tfm_status_code tfm_scheduler_step(tfm_scheduler *s, int32_t i,
                                   const float *model_output, float *sample,
                                   int64_t n, const float *noise,
                                   tfm_status *status) {
  if (!s || !model_output || !sample || n <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_scheduler_step: NULL argument or no values");
  const char *name = tfm_scheduler_class_name(s->config.kind);
  if (i < 0 || i >= s->count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: step %d is outside the %d calls", name, i, s->count);
  if (s->last_index >= 0 && i != s->last_index + 1)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: step %d after step %d; steps go in order", name, i,
                    s->last_index);
  if (s->last_index >= 0 && n != s->n)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: step %d has %lld values; the steps before had "
                    "%lld",
                    name, i, (long long)n, (long long)s->n);
  if (tfm_scheduler_needs_noise(s) && !noise)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: step %d needs noise (%lld values); got none", name, i,
                    (long long)n);
  if (s->last_index < 0) {
    tfm_status_code code = allocate_history(s, n, status);
    if (code != TFM_OK)
      return code;
  }
  switch (s->config.kind) {
  case TFM_SCHEDULER_DDIM:
    step_ddim(s, i, model_output, sample, n, noise);
    break;
  case TFM_SCHEDULER_PNDM: {
    tfm_status_code code = step_pndm(s, i, model_output, sample, n, status);
    if (code != TFM_OK)
      return code;
    break;
  }
  case TFM_SCHEDULER_EULER:
    step_euler(s, i, model_output, sample, n);
    break;
  case TFM_SCHEDULER_EULER_ANCESTRAL:
    step_euler_ancestral(s, i, model_output, sample, n, noise);
    break;
  default:
    step_dpm(s, i, model_output, sample, n, noise);
    break;
  }
  s->last_index = i;
  return tfm_ok(status);
}

tfm_status_code tfm_scheduler_add_noise(const tfm_scheduler *s, int32_t i,
                                        const float *original,
                                        const float *noise, float *out,
                                        int64_t n, tfm_status *status) {
  if (!s || !original || !noise || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_scheduler_add_noise: NULL argument");
  if (i < 0 || i >= s->count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: add_noise at call %d, outside the %d calls",
                    tfm_scheduler_class_name(s->config.kind), i, s->count);
  switch (s->config.kind) {
  case TFM_SCHEDULER_DDIM:
  case TFM_SCHEDULER_PNDM: {
    float alpha = s->alphas_cumprod[s->discrete[i]];
    float a = sqrtf(alpha), b = sqrtf(1.0f - alpha);
    for (int64_t k = 0; k < n; ++k)
      out[k] = a * original[k] + b * noise[k];
    break;
  }
  case TFM_SCHEDULER_EULER:
  case TFM_SCHEDULER_EULER_ANCESTRAL: {
    float sigma = s->sigmas[i];
    for (int64_t k = 0; k < n; ++k)
      out[k] = original[k] + noise[k] * sigma;
    break;
  }
  default: {
    dpm_point p = dpm_at(s->sigmas[i]);
    for (int64_t k = 0; k < n; ++k)
      out[k] = p.alpha * original[k] + p.sigma * noise[k];
    break;
  }
  }
  return tfm_ok(status);
}

tfm_status_code tfm_scheduler_img2img_start(const tfm_scheduler *s,
                                            double strength, int32_t *first,
                                            tfm_status *status) {
  if (!(strength >= 0 && strength <= 1))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "strength must be in [0, 1]; got %g", strength);
  int64_t init = (int64_t)((double)s->steps * strength);
  if (init > s->steps)
    init = s->steps;
  int64_t start = s->steps - init > 0 ? s->steps - init : 0;
  if (init <= 0 || start >= s->count)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "strength %g with %d steps leaves no step to run "
                    "(int(steps * strength) is 0)",
                    strength, s->steps);
  *first = (int32_t)start; /* times the scheduler's order, 1 for all */
  return tfm_ok(status);
}
