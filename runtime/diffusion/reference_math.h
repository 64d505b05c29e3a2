/*===- reference_math.h - torch's and NumPy's float arithmetic -*- C -*-===*
 *
 * What the schedulers compute the way diffusers' torch and NumPy compute it
 * (reference_math.c says why and how). Runtime-internal.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_DIFFUSION_REFERENCE_MATH_H
#define TFM_RUNTIME_DIFFUSION_REFERENCE_MATH_H

#include <stdint.h>

/* torch.linspace(start, end, steps, dtype=torch.float32) into out[steps]. */
void tfm_torch_linspace(float start, float end, int64_t steps, float *out);

/* torch.log and torch.exp of a float32 tensor (SLEEF's u10 functions). */
float tfm_torch_logf(float x);
float tfm_torch_expf(float x);

/* np.log of a float32 array's (positive, normal) element. */
float tfm_numpy_logf(float x);

/* np.linspace(start, stop, num) in float64 into out[num]. */
void tfm_numpy_linspace(double start, double stop, int64_t num, double *out);

/* np.arange(start, stop, step) with a float step: its length, and its
 * values into out[length]. */
int64_t tfm_numpy_arange_length(double start, double stop, double step);
void tfm_numpy_arange(double start, double step, int64_t length, double *out);

/* np.interp(x, np.arange(count), values) for float32 values. */
double tfm_numpy_interp(double x, const float *values, int32_t count);

#endif /* TFM_RUNTIME_DIFFUSION_REFERENCE_MATH_H */
