/*===- torch_randn.c - PyTorch's CPU Gaussian draws, bit for bit --------===//
 *
 * A transcription of what torch 1.13 runs for `torch.randn(n, generator=g)`
 * on a float32 CPU tensor (torch_randn.h says why): at::mt19937, the
 * uniform_real_distribution draws, normal_fill with its 16-wide
 * Box-Muller and tail recomputation, and the scalar normal_distribution
 * with its cached second value. The AVX2 kernel's log and sincos are the
 * Cephes polynomials of avx_mathfun.h, evaluated here one lane at a time
 * with the same float operations in the same order, and with fmaf exactly
 * where GCC fused a multiply into the add that uses it when it built
 * torch's AVX2 kernels with -mfma (each multiply whose only use is an add;
 * unfused, 1% of the values differ in the last bit). This file is compiled
 * with -ffp-contract=off so that nothing else is fused.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/diffusion/torch_randn.h"

#include <math.h>
#include <string.h>

/* at::normal_distribution<double>(0, 1), as the scalar kernel casts it. */
static float normal_scalar(tfm_torch_generator *g) {
  if (g->has_cached_normal) {
    g->has_cached_normal = false;
    return (float)(g->cached_normal * 1.0 + 0.0);
  }
  double u1 = tfm_torch_uniform_double(g);
  double u2 = tfm_torch_uniform_double(g);
  double r = sqrt(-2.0 * log(1.0 - u2));
  double theta = 2.0 * 3.14159265358979323846 * u1;
  g->cached_normal = r * sin(theta);
  g->has_cached_normal = true;
  return (float)(r * cos(theta) * 1.0 + 0.0);
}

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

/* avx_mathfun's log256_ps on one lane: the exponent split off, the mantissa
 * moved to [sqrt(1/2), sqrt(2)), a degree-8 polynomial, the exponent's
 * log 2 added in two parts. */
static float cephes_logf(float x) {
  bool invalid = x <= 0.0f;
  float min_normal = bits_float(0x00800000u);
  x = x > min_normal ? x : min_normal; /* _mm256_max_ps(x, min) */
  int32_t exponent = (int32_t)(float_bits(x) >> 23);
  x = bits_float((float_bits(x) & ~0x7f800000u) | float_bits(0.5f));
  exponent -= 0x7f;
  float e = (float)exponent;
  e = e + 1.0f;
  bool below = x < 0.707106781186547524f;
  float tmp = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + tmp;
  float z = x * x;
  static const float p[9] = {
      7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
      -1.2420140846E-1f, +1.4249322787E-1f, -1.6668057665E-1f,
      +2.0000714765E-1f, -2.4999993993E-1f, +3.3333331174E-1f};
  float y = p[0];
  for (int k = 1; k < 9; ++k)
    y = fmaf(y, x, p[k]);
  y = y * x;
  y = fmaf(y, z, e * -2.12194440e-4f);
  y = fmaf(-z, 0.5f, y);
  x = x + y;
  x = fmaf(e, 0.693359375f, x);
  return invalid ? bits_float(0xffffffffu) : x;
}

/* avx_mathfun's sincos256_ps on one lane: reduction by multiples of pi/4
 * in three parts, both polynomials evaluated, each result picked by the
 * octant, signs applied as bit flips. */
static void cephes_sincosf(float x, float *sin_out, float *cos_out) {
  uint32_t sign_sin = float_bits(x) & 0x80000000u;
  x = bits_float(float_bits(x) & 0x7fffffffu);
  float y = x * 1.27323954473516f;
  int32_t j = (int32_t)y; /* _mm256_cvttps_epi32 */
  j = (j + 1) & ~1;
  y = (float)j;
  uint32_t swap_sign_sin = ((uint32_t)j & 4u) << 29;
  bool poly_mask = (j & 2) == 0;
  x = fmaf(y, -0.78515625f, x);
  x = fmaf(y, -2.4187564849853515625e-4f, x);
  x = fmaf(y, -3.77489497744594108e-8f, x);
  uint32_t sign_cos = (~(uint32_t)(j - 2) & 4u) << 29;
  sign_sin ^= swap_sign_sin;

  float z = x * x;
  y = fmaf(2.443315711809948E-005f, z, -1.388731625493765E-003f);
  y = fmaf(y, z, 4.166664568298827E-002f);
  y = y * z;
  y = fmaf(y, z, -(z * 0.5f));
  y = y + 1.0f;

  float y2 = fmaf(-1.9515295891E-4f, z, 8.3321608736E-3f);
  y2 = fmaf(y2, z, -1.6666654611E-1f);
  y2 = y2 * z;
  y2 = fmaf(y2, x, x);

  float ysin2 = poly_mask ? y2 : 0.0f;
  float ysin1 = poly_mask ? 0.0f : y;
  y2 = y2 - ysin2;
  y = y - ysin1;
  float s = ysin1 + ysin2;
  float c = y + y2;
  *sin_out = bits_float(float_bits(s) ^ sign_sin);
  *cos_out = bits_float(float_bits(c) ^ sign_cos);
}

static void normal_16_avx2(float *data) {
  const float two_pi = (float)(2.0f * 3.14159265358979323846);
  for (int j = 0; j < 8; ++j) {
    float u1 = 1.0f - data[j];
    float u2 = data[j + 8];
    float radius = sqrtf(-2.0f * cephes_logf(u1));
    float theta = two_pi * u2;
    float s, c;
    cephes_sincosf(theta, &s, &c);
    /* _mm256_fmadd_ps(n, std = 1, mean = 0): exact, -0 becomes +0. */
    data[j] = radius * c + 0.0f;
    data[j + 8] = radius * s + 0.0f;
  }
}

static void normal_16_portable(float *data) {
  for (int j = 0; j < 8; ++j) {
    float u1 = 1.0f - data[j];
    float u2 = data[j + 8];
    float radius = sqrtf(-2.0f * logf(u1));
    float theta = (float)((double)(2.0f * 3.14159265358979323846) * u2);
    data[j] = radius * cosf(theta) * 1.0f + 0.0f;
    data[j + 8] = radius * sinf(theta) * 1.0f + 0.0f;
  }
}

void tfm_torch_randn(tfm_torch_generator *g, float *out, int64_t n) {
  if (n <= 0)
    return;
  if (n < 16) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = normal_scalar(g);
    return;
  }
  void (*transform)(float *) = g->kernel == TFM_TORCH_NORMAL_PORTABLE
                                   ? normal_16_portable
                                   : normal_16_avx2;
  for (int64_t i = 0; i < n; ++i)
    out[i] = tfm_torch_uniform_float(g);
  for (int64_t i = 0; i + 16 <= n; i += 16)
    transform(out + i);
  if (n % 16 != 0) {
    float *tail = out + n - 16;
    for (int i = 0; i < 16; ++i)
      tail[i] = tfm_torch_uniform_float(g);
    transform(tail);
  }
}
