/*===- blocks_avx2.c - the block kernels with AVX2 + FMA + F16C ---------===//
 *
 * kernels_blocks.c's AVX2 path, compiled with -mavx2 -mfma -mf16c (and
 * called only where the CPU has them): integer products with vpmaddubsw +
 * vpmaddwd, and for many rows the block panels widened into f32 panels for
 * the panel GEMM. kernels_blocks.c says how the products are formed.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/kernels/kernels_blocks_internal.h"

#include <immintrin.h>
#include <string.h>

#define TFM_AVX2
#define TFM_AVX2_INLINE static inline __attribute__((always_inline))

/* Eight f16 or uint8 values from `at`, as f32. */
TFM_AVX2_INLINE __m256 halves8_avx2(const uint16_t *at) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)at));
}
TFM_AVX2_INLINE __m256 bytes8_avx2(const uint8_t *at) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)at)));
}

/* Eight E8M0 exponents e from `at` as 2^(e - 128) (tfm_e8m0_half): the
 * exponent field e - 1, or for e < 2 a subnormal's bits. */
TFM_AVX2_INLINE __m256 e8m0_halves8_avx2(const uint8_t *at) {
  __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)at));
  __m256i normal =
      _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
}

/* Block b's scales, and the minimums added to its weights, of rows
 * 8·half .. 8·half + 7 of a panel (block_scale, block_min). */
TFM_AVX2_INLINE __m256 scales8_avx2(int format, const panel_parts *parts,
                                    int64_t b, int half) {
  if (format == TFM_FORMAT_MXFP4)
    return e8m0_halves8_avx2(parts->block_scales + b * kRows + half * 8);
  if (!is_k_with_min(format))
    return halves8_avx2(parts->scales + b * kRows + half * 8);
  return _mm256_mul_ps(
      halves8_avx2(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows + half * 8),
      bytes8_avx2(parts->block_scales + b * kRows + half * 8));
}
TFM_AVX2_INLINE __m256 mins8_avx2(int format, const panel_parts *parts,
                                  int64_t b, int half) {
  if (format == TFM_FORMAT_Q4_1)
    return halves8_avx2(parts->mins + b * kRows + half * 8);
  if (!is_k_with_min(format))
    return _mm256_setzero_ps();
  return _mm256_mul_ps(
      halves8_avx2(parts->mins + b / TFM_K_SUPER_BLOCKS * kRows + half * 8),
      _mm256_sub_ps(_mm256_setzero_ps(),
                    bytes8_avx2(parts->block_mins + b * kRows + half * 8)));
}

/* Row-half `half`'s q6_k scales of half `part` of block b (q6_scale). */
TFM_AVX2_INLINE __m256 q6_scales8_avx2(const panel_parts *parts, int64_t b,
                                       int part, int half) {
  return _mm256_mul_ps(
      halves8_avx2(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows + half * 8),
      _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(
          parts->block_scales + (2 * b + part) * kRows + half * 8)))));
}

/* Nibble vector v's 32 bytes of q6_k codes at `codes` (a block's, offset
 * to the rows wanted) as whole codes: its low nibbles' (elements 8v + i)
 * and its high nibbles' (8v + 4 + i), each with its two high bits. */
TFM_AVX2_INLINE void q6_codes_avx2(const uint8_t *codes, int v, __m256i *low,
                                   __m256i *high) {
  __m256i raw = _mm256_loadu_si256((const __m256i *)(codes + v * 64));
  __m256i bits =
      _mm256_loadu_si256((const __m256i *)(codes + 256 + v / 2 * 64));
  if (v % 2)
    bits = _mm256_srli_epi16(bits, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
  *low = _mm256_or_si256(_mm256_and_si256(raw, nibble),
                         _mm256_and_si256(_mm256_slli_epi16(bits, 4), top));
  *high = _mm256_or_si256(
      _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble),
      _mm256_and_si256(_mm256_slli_epi16(bits, 2), top));
}

/* Nibble vector v's 32 bytes of q5_k codes at `codes`, as q6_codes_avx2:
 * each nibble with its fifth bit (bits 2v and 2v + 1 of the bit vector,
 * brought down to bits 0 and 1 by one shift). */
TFM_AVX2_INLINE void q5_codes_avx2(const uint8_t *codes, int v, __m256i *low,
                                   __m256i *high) {
  __m256i raw = _mm256_loadu_si256((const __m256i *)(codes + v * 64));
  __m256i bits = _mm256_srli_epi16(
      _mm256_loadu_si256((const __m256i *)(codes + 256)), 2 * v);
  const __m256i nibble = _mm256_set1_epi8(0x0F), fifth = _mm256_set1_epi8(0x10);
  *low = _mm256_or_si256(_mm256_and_si256(raw, nibble),
                         _mm256_and_si256(_mm256_slli_epi16(bits, 4), fifth));
  *high = _mm256_or_si256(
      _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble),
      _mm256_and_si256(_mm256_slli_epi16(bits, 3), fifth));
}

/* Sums of four products of unsigned `w` and signed `x` bytes per lane;
 * products of pairs must fit int16 (codes of at most 127 by 127). */
TFM_AVX2_INLINE __m256i dot4_avx2(__m256i w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}

/* Nibble vector v's 32 bytes of a q4, q5_k, q6_k or mxfp4 block's codes
 * at `codes`, as the codes of its low nibbles' elements (8v + i) and its
 * high ones' (8v + 4 + i): the nibbles, q5_k's with their fifth bits,
 * q6_k's with their two high bits, mxfp4's through TFM_MXFP4_CODE_LIST. */
TFM_AVX2_INLINE void nibble_codes_avx2(int format, const uint8_t *codes, int v,
                                       __m256i *low, __m256i *high) {
  if (format == TFM_FORMAT_Q6_K) {
    q6_codes_avx2(codes, v, low, high);
    return;
  }
  if (format == TFM_FORMAT_Q5_K) {
    q5_codes_avx2(codes, v, low, high);
    return;
  }
  __m256i raw = _mm256_loadu_si256((const __m256i *)(codes + v * 64));
  *low = _mm256_and_si256(raw, _mm256_set1_epi8(0x0F));
  *high = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0F));
  if (format == TFM_FORMAT_MXFP4) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(TFM_MXFP4_CODE_LIST));
    *low = _mm256_shuffle_epi8(table, *low);
    *high = _mm256_shuffle_epi8(table, *high);
  }
}

/* Adds nibble vector v's products with `rows` rows of activations (x[r]:
 * each row's block) to dot[r]. */
TFM_AVX2_INLINE void add_nibble_products_avx2(int format, const uint8_t *codes,
                                              int v, const int8_t *const *x,
                                              int rows, __m256i *dot) {
  __m256i low, high;
  nibble_codes_avx2(format, codes, v, &low, &high);
  for (int r = 0; r < rows; ++r) {
    int32_t first, second;
    memcpy(&first, x[r] + 8 * v, 4);
    memcpy(&second, x[r] + 8 * v + 4, 4);
    dot[r] = _mm256_add_epi32(dot[r], dot4_avx2(low, _mm256_set1_epi32(first)));
    dot[r] = _mm256_add_epi32(dot[r], dot4_avx2(high, _mm256_set1_epi32(second)));
  }
}

/* One half (8 outputs) of a panel for up to 4 rows of A. q8_0's codes are
 * made signed again (the offset removed) so that the sign trick keeps
 * vpmaddubsw's pair sums inside int16. */
TFM_AVX2_INLINE void half_tile_avx2(const block_job *job, int format,
                                    int64_t p, int64_t i0, int rows, int half,
                                    float *tile) {
  panel_parts parts = parts_of(job->weights + p * job->panel_bytes,
                               format, job->blocks);
  const uint8_t *codes = parts.codes;
  int64_t code_bytes = tfm_block_code_bytes(format);
  int q8 = format == TFM_FORMAT_Q8_0;
  int with_min = has_min(format);
  int32_t offset = code_offset(format);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < job->blocks; ++b) {
    const uint8_t *block_codes = codes + b * code_bytes + half * 32;
    const int8_t *x[4];
    __m256i dot[4];
    for (int r = 0; r < rows; ++r) {
      x[r] = job->x.codes + ((i0 + r) * job->blocks + b) * kBlock;
      dot[r] = _mm256_setzero_si256();
    }
    if (format == TFM_FORMAT_Q6_K) {
      /* Each half of the block (nibble vectors 2·part, 2·part + 1) with
       * its own scale. Codes of at most 63 by 127: pair sums fit int16. */
      for (int part = 0; part < 2; ++part) {
        for (int r = 0; r < rows; ++r)
          dot[r] = _mm256_setzero_si256();
        for (int v = 2 * part; v < 2 * part + 2; ++v)
          add_nibble_products_avx2(format, block_codes, v, x, rows, dot);
        __m256 ws = q6_scales8_avx2(&parts, b, part, half);
        for (int r = 0; r < rows; ++r) {
          int64_t i = (i0 + r) * job->blocks + b;
          __m256i correction =
              _mm256_set1_epi32(offset * job->x.half_sums[2 * i + part]);
          acc[r] = _mm256_fmadd_ps(
              _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[r], correction)),
              _mm256_mul_ps(ws, _mm256_set1_ps(job->x.scales[i])), acc[r]);
        }
      }
      continue;
    }
    __m256 ws = scales8_avx2(format, &parts, b, half);
    if (q8) {
      for (int g = 0; g < kBlock / 4; ++g) {
        __m256i w = _mm256_xor_si256(
            _mm256_loadu_si256((const __m256i *)(block_codes + g * 64)),
            _mm256_set1_epi8((char)0x80));
        __m256i magnitude = _mm256_sign_epi8(w, w);
        for (int r = 0; r < rows; ++r) {
          int32_t four;
          memcpy(&four, x[r] + 4 * g, 4);
          dot[r] = _mm256_add_epi32(
              dot[r], dot4_avx2(magnitude, _mm256_sign_epi8(
                                               _mm256_set1_epi32(four), w)));
        }
      }
    } else {
      for (int v = 0; v < kBlock / 8; ++v)
        add_nibble_products_avx2(format, block_codes, v, x, rows, dot);
    }
    for (int r = 0; r < rows; ++r) {
      int64_t i = (i0 + r) * job->blocks + b;
      /* q8_0 codes are signed here: no offset to remove. */
      int32_t correction = q8 ? 0 : offset * job->x.sums[i];
      __m256 products = _mm256_cvtepi32_ps(
          _mm256_sub_epi32(dot[r], _mm256_set1_epi32(correction)));
      acc[r] = _mm256_fmadd_ps(
          products, _mm256_mul_ps(ws, _mm256_set1_ps(job->x.scales[i])),
          acc[r]);
      if (with_min)
        acc[r] = _mm256_fmadd_ps(
            mins8_avx2(format, &parts, b, half),
            _mm256_set1_ps(job->x.scales[i] * (float)job->x.sums[i]), acc[r]);
    }
  }
  for (int r = 0; r < rows; ++r)
    _mm256_storeu_ps(tile + r * kRows + half * 8, acc[r]);
}

TFM_AVX2 void tfm_blocks_tile_avx2(const block_job *job, int64_t p, int64_t i0,
                               int rows) {
  float tile[kTile * kRows];
  for (int r0 = 0; r0 < rows; r0 += 4) {
    int count = rows - r0 < 4 ? rows - r0 : 4;
    /* A constant row count at each call keeps the sums in registers (a
     * variable one left them on the stack: decode half as fast), and a
     * constant format keeps the others' branches out of the block loop
     * (as tile_vnni's: with TFM_BLOCKS_ISA=avx2 on an Intel Xeon, the
     * 124M LLaMA's Q4_0 file prefilled 40 tokens at 1039 tokens/s with
     * one instance for all formats, 1217 so; its Q4_K_M file 841 and
     * 1026). */
#define TFM_HALF_TILES(FORMAT)                                                 \
  for (int half = 0; half < 2; ++half)                                         \
    switch (count) {                                                           \
    case 4: half_tile_avx2(job, FORMAT, p, i0 + r0, 4, half, tile + r0 * kRows); break; \
    case 3: half_tile_avx2(job, FORMAT, p, i0 + r0, 3, half, tile + r0 * kRows); break; \
    case 2: half_tile_avx2(job, FORMAT, p, i0 + r0, 2, half, tile + r0 * kRows); break; \
    default: half_tile_avx2(job, FORMAT, p, i0 + r0, 1, half, tile + r0 * kRows); break; \
    }
    switch (job->format) {
    case TFM_FORMAT_Q8_0:
      TFM_HALF_TILES(TFM_FORMAT_Q8_0) break;
    case TFM_FORMAT_Q4_0:
      TFM_HALF_TILES(TFM_FORMAT_Q4_0) break;
    case TFM_FORMAT_Q4_1:
      TFM_HALF_TILES(TFM_FORMAT_Q4_1) break;
    case TFM_FORMAT_Q4_K:
      TFM_HALF_TILES(TFM_FORMAT_Q4_K) break;
    case TFM_FORMAT_Q5_K:
      TFM_HALF_TILES(TFM_FORMAT_Q5_K) break;
    case TFM_FORMAT_MXFP4:
      TFM_HALF_TILES(TFM_FORMAT_MXFP4) break;
    default:
      TFM_HALF_TILES(TFM_FORMAT_Q6_K) break;
    }
#undef TFM_HALF_TILES
  }
  store_tile(job, p, i0, rows, tile);
}

/* One row of A (a decode step) against `count` (<= kRowPanelsAvx2, a
 * constant at every call) consecutive panels, both halves of each in one
 * pass: every 64-byte line of codes is loaded once, and each block's
 * activation broadcasts serve all of them. Each panel's codes are
 * prefetched 512 bytes ahead (int8's next block, int4's second next) as
 * non-temporal (prefetchnta): the weights are read once a step, and the
 * hint keeps them out of the outer caches. On a Zen 2 (`bench/gemv_stream.c`,
 * read probe 31.2 GB/s) that streamed int8 at 31.3 GB/s and int4 at 31.1,
 * against 25.3 and 22.4 with prefetcht0 a block ahead; 1024 or 2048 bytes
 * ahead, or into L2 only, were slower. */
enum { kRowPanelsAvx2 = 2, kPrefetchBytes = 512 };
TFM_AVX2_INLINE void row_panels_avx2(const block_job *job, int format,
                                     int64_t p, int count, float *out) {
  int64_t code_bytes = tfm_block_code_bytes(format);
  int q8 = format == TFM_FORMAT_Q8_0;
  int32_t offset = code_offset(format);
  const uint8_t *panel[kRowPanelsAvx2];
  panel_parts parts[kRowPanelsAvx2];
  __m256 acc[kRowPanelsAvx2][2];
#pragma GCC unroll 2
  for (int j = 0; j < count; ++j) {
    panel[j] = job->weights + (p + j) * job->panel_bytes;
    parts[j] = parts_of(panel[j], format, job->blocks);
    acc[j][0] = acc[j][1] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t *x = job->x.codes;
  for (int64_t b = 0; b < job->blocks; ++b, x += kBlock) {
    int64_t codes = codes_start(format, job->blocks) + b * code_bytes;
    /* Past a panel's end this reaches into the next panel, or past the
     * matrix: a prefetch does not fault. */
#pragma GCC unroll 2
    for (int j = 0; j < count; ++j)
      for (int64_t line = 0; line < code_bytes; line += 64)
        __builtin_prefetch(panel[j] + codes + kPrefetchBytes + line, 0, 0);
    __m256i dot[kRowPanelsAvx2][2];
    if (format == TFM_FORMAT_Q6_K) {
      /* Each half of the block with its own scale (half_tile_avx2). */
      for (int part = 0; part < 2; ++part) {
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
          dot[j][0] = dot[j][1] = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int v = 2 * part; v < 2 * part + 2; ++v) {
          int32_t first, second;
          memcpy(&first, x + 8 * v, 4);
          memcpy(&second, x + 8 * v + 4, 4);
          __m256i x0 = _mm256_set1_epi32(first), x1 = _mm256_set1_epi32(second);
#pragma GCC unroll 2
          for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
              __m256i low, high;
              q6_codes_avx2(panel[j] + codes + h * 32, v, &low, &high);
              dot[j][h] = _mm256_add_epi32(
                  dot[j][h], _mm256_add_epi32(dot4_avx2(low, x0),
                                              dot4_avx2(high, x1)));
            }
        }
        __m256 xs = _mm256_set1_ps(job->x.scales[b]);
        __m256i correction =
            _mm256_set1_epi32(offset * job->x.half_sums[2 * b + part]);
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h)
            acc[j][h] = _mm256_fmadd_ps(
                _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[j][h], correction)),
                _mm256_mul_ps(q6_scales8_avx2(&parts[j], b, part, h), xs),
                acc[j][h]);
      }
      continue;
    }
    if (q8) {
#pragma GCC unroll 2
      for (int j = 0; j < count; ++j)
        dot[j][0] = dot[j][1] = _mm256_setzero_si256();
#pragma GCC unroll 1
      for (int g = 0; g < kBlock / 4; ++g) {
        int32_t four;
        memcpy(&four, x + 4 * g, 4);
        __m256i xg = _mm256_set1_epi32(four);
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            /* Signed again (the offset removed), and the sign moved onto
             * the activations: vpmaddubsw's pair sums stay in int16. */
            __m256i w = _mm256_xor_si256(
                _mm256_loadu_si256(
                    (const __m256i *)(panel[j] + codes + g * 64 + h * 32)),
                _mm256_set1_epi8((char)0x80));
            dot[j][h] = _mm256_add_epi32(
                dot[j][h], dot4_avx2(_mm256_sign_epi8(w, w),
                                     _mm256_sign_epi8(xg, w)));
          }
      }
    } else {
      /* Nibbles times codes of at most 127: a pair's sum is at most
       * 3810, so a block's eight vpmaddubsw results add up in int16
       * (30480) and widen once; q5_k's codes of at most 31 (7874 a pair)
       * and mxfp4's of at most 24 (6096) widen after every two nibble
       * vectors (31496, 24384). */
      const int widen_every =
          format == TFM_FORMAT_Q5_K || format == TFM_FORMAT_MXFP4 ? 2 : 4;
      __m256i sum16[kRowPanelsAvx2][2];
#pragma GCC unroll 2
      for (int j = 0; j < count; ++j)
        sum16[j][0] = sum16[j][1] = dot[j][0] = dot[j][1] =
            _mm256_setzero_si256();
#pragma GCC unroll 1
      for (int v = 0; v < kBlock / 8; ++v) {
        int32_t first, second;
        memcpy(&first, x + 8 * v, 4);
        memcpy(&second, x + 8 * v + 4, 4);
        __m256i x0 = _mm256_set1_epi32(first), x1 = _mm256_set1_epi32(second);
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            __m256i low, high;
            nibble_codes_avx2(format, panel[j] + codes + h * 32, v, &low,
                              &high);
            sum16[j][h] =
                _mm256_add_epi16(sum16[j][h], _mm256_maddubs_epi16(low, x0));
            sum16[j][h] =
                _mm256_add_epi16(sum16[j][h], _mm256_maddubs_epi16(high, x1));
          }
        if ((v + 1) % widen_every)
          continue;
#pragma GCC unroll 2
        for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            dot[j][h] =
                _mm256_add_epi32(dot[j][h], _mm256_madd_epi16(sum16[j][h], ones));
            sum16[j][h] = _mm256_setzero_si256();
          }
      }
    }
    __m256 xs = _mm256_set1_ps(job->x.scales[b]);
    __m256i correction = _mm256_set1_epi32(q8 ? 0 : offset * job->x.sums[b]);
#pragma GCC unroll 2
    for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m256 products =
            _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[j][h], correction));
        acc[j][h] = _mm256_fmadd_ps(
            products, _mm256_mul_ps(scales8_avx2(format, &parts[j], b, h), xs),
            acc[j][h]);
        if (has_min(format))
          acc[j][h] = _mm256_fmadd_ps(
              mins8_avx2(format, &parts[j], b, h),
              _mm256_set1_ps(job->x.scales[b] * (float)job->x.sums[b]),
              acc[j][h]);
      }
  }
#pragma GCC unroll 2
  for (int j = 0; j < count; ++j)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
      _mm256_storeu_ps(out + j * kRows + h * 8, acc[j][h]);
}

/* Panels [p0, p1) for one row of A, `format` a constant at each call:
 * the block loop then carries no test of the format (its branches, and
 * the accumulators they spilled, made the kernel 8% slower on weights in
 * cache). */
TFM_AVX2_INLINE void row_format_avx2(const block_job *job, int format,
                                     int64_t p0, int64_t p1) {
  float tile[kRowPanelsAvx2 * kRows];
  for (int64_t p = p0; p < p1; p += kRowPanelsAvx2) {
    int count = p1 - p < kRowPanelsAvx2 ? (int)(p1 - p) : kRowPanelsAvx2;
    if (count == 2)
      row_panels_avx2(job, format, p, 2, tile);
    else
      row_panels_avx2(job, format, p, 1, tile);
    for (int j = 0; j < count; ++j)
      store_tile(job, p + j, 0, 1, tile + j * kRows);
  }
}

TFM_AVX2 void tfm_blocks_row_avx2(const block_job *job, int64_t p0, int64_t p1) {
  switch (job->format) {
  case TFM_FORMAT_Q8_0:
    row_format_avx2(job, TFM_FORMAT_Q8_0, p0, p1);
    break;
  case TFM_FORMAT_Q4_0:
    row_format_avx2(job, TFM_FORMAT_Q4_0, p0, p1);
    break;
  case TFM_FORMAT_Q4_1:
    row_format_avx2(job, TFM_FORMAT_Q4_1, p0, p1);
    break;
  case TFM_FORMAT_Q4_K:
    row_format_avx2(job, TFM_FORMAT_Q4_K, p0, p1);
    break;
  case TFM_FORMAT_Q5_K:
    row_format_avx2(job, TFM_FORMAT_Q5_K, p0, p1);
    break;
  case TFM_FORMAT_MXFP4:
    row_format_avx2(job, TFM_FORMAT_MXFP4, p0, p1);
    break;
  default:
    row_format_avx2(job, TFM_FORMAT_Q6_K, p0, p1);
    break;
  }
}



/* Eight rows' four codes (32 bytes: row r's at 4r) as four vectors of
 * eight bytes, code i of every row in vector i (the low 8 bytes). */
TFM_AVX2_INLINE void transpose_codes_avx2(__m256i bytes, __m128i out[4]) {
  /* Within each 128-bit lane (four rows): code i of the four rows in
   * dword i; then dword i of both lanes side by side. */
  const __m256i by_code = _mm256_setr_epi8(
      0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
      0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m256i grouped = _mm256_shuffle_epi8(bytes, by_code);
  __m256i pairs = _mm256_permutevar8x32_epi32(
      grouped, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  out[0] = _mm256_castsi256_si128(pairs);
  out[1] = _mm_unpackhi_epi64(out[0], out[0]);
  out[2] = _mm256_extracti128_si256(pairs, 1);
  out[3] = _mm_unpackhi_epi64(out[2], out[2]);
}

/* Element e (if inside the row's `elements`) of eight rows, their codes
 * the low 8 bytes of `codes`, widened: (code - offset) · scale + minimum,
 * into row e of a widened panel's column. */
TFM_AVX2_INLINE void store_widened_avx2(float *column, int64_t e,
                                        int64_t elements, __m128i codes,
                                        __m256 offset, __m256 scale,
                                        __m256 minimum) {
  if (e < elements)
    _mm256_storeu_ps(
        column + e * kWidenedPanel,
        _mm256_fmadd_ps(
            _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes)), offset),
            scale, minimum));
}

/* Block panel p's rows as features [column0, column0 + 16) of `out`
 * ([k][kWidenedPanel]); past the matrix's last panel (the second of an
 * odd count's last pair, which is not stored), zeros. Eight rows at a
 * time: a 32-byte run of codes holds four elements of each
 * (weight_formats.h), transposed in registers. */
TFM_AVX2 void tfm_blocks_widen_panel_avx2(const block_job *job, int64_t p,
                                       int column0, float *out) {
  if (p * kRows >= job->n) {
    for (int64_t kk = 0; kk < job->k; ++kk)
      memset(out + kk * kWidenedPanel + column0, 0, kRows * sizeof(float));
    return;
  }
  panel_parts parts = parts_of(job->weights + p * job->panel_bytes,
                               job->format, job->blocks);
  const uint8_t *codes = parts.codes;
  int64_t code_bytes = tfm_block_code_bytes(job->format);
  int q8 = job->format == TFM_FORMAT_Q8_0;
  const __m256 offset = _mm256_set1_ps((float)code_offset(job->format));
  for (int64_t b = 0; b < job->blocks; ++b) {
    const uint8_t *block_codes = codes + b * code_bytes;
    /* Elements of this block inside the row (the last block may stop
     * short; the panel keeps room for a whole one). */
    int64_t elements = job->k - b * kBlock < kBlock ? job->k - b * kBlock : kBlock;
    for (int h = 0; h < 2; ++h) {
      float *column = out + b * kBlock * kWidenedPanel + column0 + h * 8;
      __m256 minimum = mins8_avx2(job->format, &parts, b, h);
      if (q8) {
        /* Eight runs, elements 4g + i. */
        __m256 scale = scales8_avx2(job->format, &parts, b, h);
        for (int g = 0; g < 8; ++g) {
          __m128i four[4];
          transpose_codes_avx2(
              _mm256_loadu_si256((const __m256i *)(block_codes + g * 64 + h * 32)),
              four);
          for (int i = 0; i < 4; ++i)
            store_widened_avx2(column, 4 * g + i, elements, four[i], offset,
                               scale, minimum);
        }
        continue;
      }
      /* Four nibble vectors, elements 8v + i (low) and 8v + 4 + i (high);
       * q6_k's halves of a block each with its own scale. */
      for (int v = 0; v < 4; ++v) {
        __m256 scale = job->format == TFM_FORMAT_Q6_K
                           ? q6_scales8_avx2(&parts, b, v / 2, h)
                           : scales8_avx2(job->format, &parts, b, h);
        __m256i low, high;
        nibble_codes_avx2(job->format, block_codes + h * 32, v, &low, &high);
        __m128i lows[4], highs[4];
        transpose_codes_avx2(low, lows);
        transpose_codes_avx2(high, highs);
        for (int i = 0; i < 4; ++i) {
          store_widened_avx2(column, 8 * v + i, elements, lows[i], offset,
                             scale, minimum);
          store_widened_avx2(column, 8 * v + 4 + i, elements, highs[i], offset,
                             scale, minimum);
        }
      }
    }
  }
}

/* Pairs of block panels [begin, end) for every row of A. */