/*===- half_floats.h - 16-bit floats as f32, one at a time ------*- C -*-===//
 *
 * IEEE half (f16) and bfloat16 widened to f32, exactly: the scalar
 * conversions of row tails, block scales and plain-C paths, shared by the
 * kernels and the CUDA emulator (the vector ones live beside their loops).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_HALF_FLOATS_H
#define TFM_RUNTIME_HALF_FLOATS_H

#include <stdint.h>
#include <string.h>

static inline float tfm_f16_to_float(uint16_t bits) {
  _Float16 half;
  memcpy(&half, &bits, sizeof half);
  return (float)half;
}

static inline float tfm_bf16_to_float(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &wide, sizeof value);
  return value;
}

#endif /* TFM_RUNTIME_HALF_FLOATS_H */
