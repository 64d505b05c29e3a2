/*===- widen_rows.c - a narrow KV cache's rows widened to f32 ------------===//
 *
 * See widen_rows.h. The attention kernels score and weigh keys and values
 * as f32 rows; a narrow cache's rows (int8 codes and their scale, bf16 or
 * f16 values) are widened a tile or chunk of rows per call, into the
 * caller's buffer, where the kernels read them as unit-stride rows.
 *
 * GCC 12 turns a generic vector conversion of int8 to float
 * (__builtin_convertvector) into a byte at a time (sign extension,
 * vcvtsi2ss and inserts: about 40 instructions for 8 values) in every
 * target clone, which made the int8 cache's decode no faster than the f32
 * one although it reads a quarter of the bytes. vpmovsxbd + vcvtdq2ps
 * take two; bf16 is a zero extension and a shift, f16 F16C's vcvtph2ps.
 * Intrinsics need their target on the function that uses them, so this is
 * a function of its own, called a tile of rows at a time (not a row),
 * which tests the CPU's features at each call.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/kernels/widen_rows.h"
#include "tfm/half_floats.h"

#include <immintrin.h>
#include <string.h>

/*===--- int8 rows: codes, then an f32 scale ---------------------------===*/

/* Row i's scale: the 4 bytes after its n codes, little-endian as written
 * (strided, as a transposed view may be). */
static float row_scale(const int8_t *codes, int64_t n, int64_t stride) {
  uint8_t bytes[4];
  for (int b = 0; b < 4; ++b)
    bytes[b] = (uint8_t)codes[(n + b) * stride];
  float scale;
  memcpy(&scale, bytes, sizeof scale);
  return scale;
}

/* Values [from, n) of a row and its zero padding to np, a value at a time. */
static void widen_tail_i8(const int8_t *codes, int64_t stride, float scale,
                          int64_t from, int64_t n, int64_t np, float *out) {
  int64_t c = from;
  for (; c < n; ++c)
    out[c] = scale * (float)codes[c * stride];
  for (; c < np; ++c)
    out[c] = 0;
}

static void widen_i8_scalar(const tfm_memref3d_i8 *m, int64_t first,
                            int64_t count, int64_t h, int64_t n, int64_t np,
                            float *out) {
  int64_t stride = m->strides[2];
  for (int64_t r = 0; r < count; ++r) {
    const int8_t *codes = tfm_stored_row(m, 1, first + r, h);
    widen_tail_i8(codes, stride, row_scale(codes, n, stride), 0, n, np,
                  out + r * np);
  }
}

__attribute__((target("avx2"))) static void
widen_i8_avx2(const tfm_memref3d_i8 *m, int64_t first, int64_t count,
              int64_t h, int64_t n, int64_t np, float *out) {
  for (int64_t r = 0; r < count; ++r) {
    const int8_t *codes = tfm_stored_row(m, 1, first + r, h);
    float scale = row_scale(codes, n, 1);
    __m256 s = _mm256_set1_ps(scale);
    float *row_out = out + r * np;
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
      __m256i wide =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(codes + c)));
      _mm256_storeu_ps(row_out + c, _mm256_mul_ps(s, _mm256_cvtepi32_ps(wide)));
    }
    widen_tail_i8(codes, 1, scale, c, n, np, row_out);
  }
}

/*===--- bf16 and f16 rows ---------------------------------------------===*/

/* Values [from, n) of a bf16 or f16 row and its zero padding to np. */
static void widen_tail_16(int bf16, const uint16_t *values, int64_t stride,
                          int64_t from, int64_t n, int64_t np, float *out) {
  int64_t c = from;
  for (; c < n; ++c)
    out[c] = bf16 ? tfm_bf16_to_float(values[c * stride])
                  : tfm_f16_to_float(values[c * stride]);
  for (; c < np; ++c)
    out[c] = 0;
}

static void widen_16_scalar(int bf16, const tfm_memref3d_i8 *m, int64_t first,
                            int64_t count, int64_t h, int64_t n, int64_t np,
                            float *out) {
  for (int64_t r = 0; r < count; ++r)
    widen_tail_16(bf16, tfm_stored_row(m, 2, first + r, h), m->strides[2], 0, n,
                  np, out + r * np);
}

__attribute__((target("avx2,f16c"))) static void
widen_16_avx2(int bf16, const tfm_memref3d_i8 *m, int64_t first, int64_t count,
              int64_t h, int64_t n, int64_t np, float *out) {
  for (int64_t r = 0; r < count; ++r) {
    const uint16_t *values = tfm_stored_row(m, 2, first + r, h);
    float *row_out = out + r * np;
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
      __m128i half = _mm_loadu_si128((const __m128i *)(values + c));
      __m256 wide =
          bf16 ? _mm256_castsi256_ps(
                     _mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16))
               : _mm256_cvtph_ps(half);
      _mm256_storeu_ps(row_out + c, wide);
    }
    widen_tail_16(bf16, values, 1, c, n, np, row_out);
  }
}

void tfm_widen_rows(tfm_row_storage storage, const void *rows, int64_t first,
                    int64_t count, int64_t h, int64_t n, int64_t np,
                    float *out) {
  /* Every 3-D memref descriptor has the same layout; the element size
   * comes from the storage. */
  const tfm_memref3d_i8 *m = rows;
  int unit = m->strides[2] == 1 && __builtin_cpu_supports("avx2");
  if (storage == TFM_ROWS_I8) {
    if (unit)
      widen_i8_avx2(m, first, count, h, n, np, out);
    else
      widen_i8_scalar(m, first, count, h, n, np, out);
    return;
  }
  int bf16 = storage == TFM_ROWS_BF16;
  if (unit && (bf16 || __builtin_cpu_supports("f16c")))
    widen_16_avx2(bf16, m, first, count, h, n, np, out);
  else
    widen_16_scalar(bf16, m, first, count, h, n, np, out);
}
