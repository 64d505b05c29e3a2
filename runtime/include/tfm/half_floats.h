/*===- half_floats.h - IEEE f16 and bfloat16 to and from f32 ----*- C -*-===//
 *
 * The one definition of tfmc's 16-bit float conversions, in C so that the
 * runtime (scalar row tails, block scales, plain-C paths, the CUDA
 * emulator), the packager (narrow weights, block scales) and the frontend
 * (F16/BF16 checkpoints, GGUF's block scales) all read and write the same
 * bits. Widening is exact; narrowing rounds to nearest even, as PyTorch's
 * .to(torch.float16 / torch.bfloat16) does. The kernels' vector conversions
 * live beside their loops.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_HALF_FLOATS_H
#define TFM_HALF_FLOATS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t tfm_float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static inline float tfm_bits_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* f32 from IEEE binary16, exactly. */
static inline float tfm_f16_to_float(uint16_t half) {
#if defined(__FLT16_MAX__) && !defined(__cplusplus)
  /* One vcvtph2ps where the compiler has _Float16 (C on x86-64). */
  _Float16 value;
  memcpy(&value, &half, sizeof value);
  return (float)value;
#else
  uint32_t sign = (uint32_t)(half & 0x8000) << 16;
  uint32_t exponent = (half >> 10) & 0x1F, mantissa = half & 0x3FF;
  if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24 */
    float magnitude = (float)mantissa / 16777216.0f;
    return sign ? -magnitude : magnitude;
  }
  return tfm_bits_float(exponent == 31
                            ? sign | 0x7F800000 | mantissa << 13
                            : sign | (exponent + 112) << 23 | mantissa << 13);
#endif
}

/* f32 from bfloat16, exactly: its bits are f32's upper half. */
static inline float tfm_bf16_to_float(uint16_t bits) {
  return tfm_bits_float((uint32_t)bits << 16);
}

/* IEEE binary16 from f32, rounding to nearest even; NaN stays NaN. */
static inline uint16_t tfm_float_to_f16(float value) {
  uint32_t bits = tfm_float_bits(value);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude >= 0x7F800000) /* infinity, NaN */
    return sign | (magnitude > 0x7F800000 ? 0x7E00 : 0x7C00);
  if (magnitude >= 0x477FF000) /* 65520 and up round to infinity */
    return sign | 0x7C00;
  if (magnitude < 0x38800000) /* below 2^-14: a subnormal half */
    return sign |
           (uint16_t)nearbyintf(tfm_bits_float(magnitude) * 16777216.0f);
  uint32_t half = ((magnitude >> 23) - 112) << 10 | (magnitude >> 13 & 0x3FF);
  uint32_t rest = magnitude & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; /* a carry into the exponent is still the right rounding */
  return sign | (uint16_t)half;
}

/* bfloat16 from f32, rounding to nearest even; a NaN stays a quiet NaN. */
static inline uint16_t tfm_float_to_bf16(float value) {
  uint32_t bits = tfm_float_bits(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000)
    return (uint16_t)((bits >> 16) | 0x40);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return (uint16_t)(bits >> 16);
}

#endif /* TFM_HALF_FLOATS_H */
