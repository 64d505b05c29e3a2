/*===- widen_rows_i8.c - an int8 KV cache's rows widened to f32 ----------===//
 *
 * See widen_rows_i8.h. The attention kernels score and weigh keys and
 * values as f32 rows; an int8 cache's rows (head_dim codes, then an f32
 * scale) are widened a tile or chunk of rows per call, into the caller's
 * buffer, where the kernels read them as unit-stride rows.
 *
 * GCC 12 turns a generic vector conversion of int8 to float
 * (__builtin_convertvector) into a byte at a time (sign extension,
 * vcvtsi2ss and inserts: about 40 instructions for 8 values) in every
 * target clone, which made the int8 cache's decode no faster than the f32
 * one although it reads a quarter of the bytes. vpmovsxbd + vcvtdq2ps
 * take two. Intrinsics need their target on the function that uses them,
 * so this is a function of its own, called a tile of rows at a time (not
 * a row), which tests the CPU's features at each call.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/widen_rows_i8.h"
#include "runtime/attention_internal.h" /* row_i8 */

#include <immintrin.h>

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
static void widen_tail(const int8_t *codes, int64_t stride, float scale,
                       int64_t from, int64_t n, int64_t np, float *out) {
  int64_t c = from;
  for (; c < n; ++c)
    out[c] = scale * (float)codes[c * stride];
  for (; c < np; ++c)
    out[c] = 0;
}

static void widen_rows_scalar(const tfm_memref3d_i8 *m, int64_t first,
                              int64_t count, int64_t h, int64_t n, int64_t np,
                              float *out) {
  int64_t stride = m->strides[2];
  for (int64_t r = 0; r < count; ++r) {
    const int8_t *codes = row_i8(m, first + r, h);
    widen_tail(codes, stride, row_scale(codes, n, stride), 0, n, np,
               out + r * np);
  }
}

__attribute__((target("avx2"))) static void
widen_rows_avx2(const tfm_memref3d_i8 *m, int64_t first, int64_t count,
                int64_t h, int64_t n, int64_t np, float *out) {
  for (int64_t r = 0; r < count; ++r) {
    const int8_t *codes = row_i8(m, first + r, h);
    float scale = row_scale(codes, n, 1);
    __m256 s = _mm256_set1_ps(scale);
    float *row_out = out + r * np;
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
      __m256i wide =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(codes + c)));
      _mm256_storeu_ps(row_out + c, _mm256_mul_ps(s, _mm256_cvtepi32_ps(wide)));
    }
    widen_tail(codes, 1, scale, c, n, np, row_out);
  }
}

void tfm_widen_rows_i8(const tfm_memref3d_i8 *m, int64_t first, int64_t count,
                       int64_t h, int64_t n, int64_t np, float *out) {
  if (m->strides[2] == 1 && __builtin_cpu_supports("avx2"))
    widen_rows_avx2(m, first, count, h, n, np, out);
  else
    widen_rows_scalar(m, first, count, h, n, np, out);
}
