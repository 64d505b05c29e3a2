/*===- reference_math.c - torch's and NumPy's float arithmetic, in C -----===//
 *
 * diffusers computes its schedules with torch float32 tensors and NumPy
 * arrays; where their results are not what plain IEEE arithmetic in C
 * gives, the operations are reproduced here as torch 1.13 and NumPy 1.24
 * run them on x86 with AVX2 (the CPU diffusers' references run on), so
 * that the schedulers get the same bits (schedulers.c). Compiled with
 * -ffp-contract=off: a multiply-add is fused only where the source says
 * fmaf.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/diffusion/reference_math.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* torch.linspace(start, end, steps, dtype=float32) on the CPU, as its
 * AVX2 kernel computes it: the first half counted up from start, the
 * second down from end (a multiply-add, fused by the compiler), in pairs
 * of 8-wide vectors, each its first value plus k steps (not fused), then
 * the remaining values one by one. */
void tfm_torch_linspace(float start, float end, int64_t steps, float *out) {
  if (steps == 1) {
    out[0] = start;
    return;
  }
  float step = (end - start) / (float)(steps - 1);
  int64_t halfway = steps / 2;
  int64_t i = 0;
  for (; i + 16 <= steps; i += 16) {
    for (int64_t v = i; v < i + 16; v += 8) {
      float base = v < halfway ? fmaf(step, (float)v, start)
                               : fmaf(-step, (float)(steps - v - 1), end);
      out[v] = base;
      for (int k = 1; k < 8; ++k)
        out[v + k] = base + (float)k * step;
    }
  }
  for (; i < steps; ++i)
    out[i] = i < halfway ? fmaf(step, (float)i, start)
                         : fmaf(-step, (float)(steps - i - 1), end);
}

/* torch.log and torch.exp of float32: SLEEF's Sleef_logf8_u10 and
 * Sleef_expf8_u10 as they run on x86 with AVX2 (SLEEF 3.5; torch calls them
 * for every float tensor, 0-d ones included), one lane at a time, fmaf
 * where SLEEF multiplies and adds in one instruction. They are within an
 * ulp of libm's logf and expf, but not the same bits. */
static uint32_t float_bits(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

static float bits_float(uint32_t b) {
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}

/* A float and its rounding error: SLEEF's double-float arithmetic. */
typedef struct {
  float x, y;
} float2;

static float2 float2_sum(float x, float y) {
  float s = x + y, v = s - x;
  float2 r = {s, (x - (s - v)) + (y - v)};
  return r;
}

static float2 float2_add(float2 x, float2 y) {
  float s = x.x + y.x;
  float2 r = {s, (((x.x - s) + y.x) + x.y) + y.y};
  return r;
}

static float2 float2_add_float(float2 x, float y) {
  float s = x.x + y;
  float2 r = {s, ((x.x - s) + y) + x.y};
  return r;
}

static float2 float2_mul_float(float2 x, float y) {
  float s = x.x * y;
  float2 r = {s, fmaf(x.y, y, fmaf(x.x, y, -s))};
  return r;
}

static float2 float2_div(float2 n, float2 d) {
  float t = 1.0f / d.x;
  float s = n.x * t;
  float u = fmaf(t, n.x, -s);
  float v = fmaf(-d.y, t, fmaf(-d.x, t, 1.0f));
  float2 r = {s, fmaf(s, v, fmaf(n.y, t, u))};
  return r;
}

float tfm_torch_logf(float d) {
  bool tiny = d < FLT_MIN;
  if (tiny)
    d = d * ((float)(INT64_C(1) << 32) * (float)(INT64_C(1) << 32));
  int32_t e = (int32_t)((float_bits(d * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;
  float m = bits_float(float_bits(d) - ((uint32_t)e << 23));
  if (tiny)
    e -= 64;
  float2 log2 = {0.69314718246459960938f, -1.904654323148236017e-09f};
  float2 s = float2_mul_float(log2, (float)e);
  float2 x = float2_div(float2_sum(-1.0f, m), float2_sum(1.0f, m));
  float x2 = x.x * x.x;
  float t = 0.3027294874e+0f;
  t = fmaf(t, x2, 0.3996108174e+0f);
  t = fmaf(t, x2, 0.6666694880e+0f);
  float2 twice = {x.x * 2.0f, x.y * 2.0f};
  s = float2_add(s, twice);
  s = float2_add_float(s, (x2 * x.x) * t);
  float r = s.x + s.y;
  if (isinf(d) && d > 0)
    r = INFINITY;
  if (d < 0 || isnan(d))
    r = NAN;
  if (d == 0)
    r = -INFINITY;
  return r;
}

float tfm_torch_expf(float d) {
  if (isnan(d))
    return d;
  if (d < -104)
    return 0;
  if (100 < d)
    return INFINITY;
  int32_t q = (int32_t)rintf(d * 1.442695040888963407359924681001892137f);
  float s = fmaf((float)q, -0.693145751953125f, d);
  s = fmaf((float)q, -1.428606765330187045e-06f, s);
  float u = 0.000198527617612853646278381f;
  u = fmaf(u, s, 0.00139304355252534151077271f);
  u = fmaf(u, s, 0.00833336077630519866943359f);
  u = fmaf(u, s, 0.0416664853692054748535156f);
  u = fmaf(u, s, 0.166666671633720397949219f);
  u = fmaf(u, s, 0.5f);
  u = 1.0f + fmaf(s * s, u, s);
  int32_t half = q >> 1; /* 2^q in two factors, each a normal float */
  u = u * bits_float((uint32_t)(half + 0x7f) << 23);
  u = u * bits_float((uint32_t)(q - half + 0x7f) << 23);
  return u;
}

/* np.log of a float32 array (NumPy 1.2x on x86 with AVX2 or AVX-512: a
 * rational approximation of log(1 + x) on the mantissa, fused
 * multiply-adds), for positive normal floats, the sigmas it is taken of.
 * Up to 4 ulp from logf. */
float tfm_numpy_logf(float x) {
  uint32_t bits = float_bits(x);
  float exponent = (float)((int32_t)(bits >> 23) - 0x7e);
  float m = bits_float((bits & 0x7fffffu) | (126u << 23));
  if (m <= 0.707106781186547524400844362104849039f) {
    m = m + m;
    exponent = exponent - 1.0f;
  }
  m = m - 1.0f;
  float num =
      fmaf(2.589979117907922693523e-02f, m, 3.808837741388407920751e-01f);
  num = fmaf(num, m, 1.480000633576506585156e+00f);
  num = fmaf(num, m, 2.112677543073053063722e+00f);
  num = fmaf(num, m, 9.999999999999998702752e-01f);
  num = fmaf(num, m, 0.0f);
  float den =
      fmaf(5.875095403124574342950e-03f, m, 1.546476374983906719538e-01f);
  den = fmaf(den, m, 9.864942958519418960339e-01f);
  den = fmaf(den, m, 2.453006071784736363091e+00f);
  den = fmaf(den, m, 2.612677543073109236779e+00f);
  den = fmaf(den, m, 1.0f);
  return fmaf(exponent, 0.693147180559945309417232121458176568f, num / den);
}

/* np.linspace(start, stop, num) in double. */
void tfm_numpy_linspace(double start, double stop, int64_t num, double *out) {
  int64_t div = num - 1;
  double delta = stop - start;
  for (int64_t i = 0; i < num; ++i) {
    double y = (double)i;
    if (div > 0) {
      double step = delta / (double)div;
      y = step == 0 ? y / (double)div * delta : y * step;
    } else {
      y = y * delta;
    }
    out[i] = y + start;
  }
  if (num > 1)
    out[num - 1] = stop;
}

/* The length of np.arange(start, stop, step) with a float step. */
int64_t tfm_numpy_arange_length(double start, double stop, double step) {
  double length = ceil((stop - start) / step);
  return length > 0 ? (int64_t)length : 0;
}

/* np.arange(start, stop, step) in double: the second value is start + step,
 * and the rest start + i * (second - start), as NumPy's fill makes them. */
void tfm_numpy_arange(double start, double step, int64_t length, double *out) {
  if (length > 0)
    out[0] = start;
  if (length > 1)
    out[1] = start + step;
  double delta = length > 1 ? out[1] - start : step;
  for (int64_t i = 2; i < length; ++i)
    out[i] = start + (double)i * delta;
}

/* np.interp(x, arange(count), values) for x in [0, count - 1]. */
double tfm_numpy_interp(double x, const float *values, int32_t count) {
  if (x < 0)
    return values[0];
  if (x >= count - 1)
    return values[count - 1];
  int32_t j = (int32_t)floor(x);
  if ((double)j == x)
    return values[j];
  double slope = ((double)values[j + 1] - (double)values[j]) /
                 ((double)(j + 1) - (double)j);
  return slope * (x - (double)j) + (double)values[j];
}
