/*===- blocks_vnni.c - the block kernels with AVX-512 VNNI --------------===//
 *
 * kernels_blocks.c's fastest path, compiled with -mavx512f -mavx512bw
 * -mavx512vl -mavx512vnni -mfma -mf16c (and called only where the CPU has
 * them): vpdpbusd multiplies four weight codes of each of a panel's 16 rows
 * by four broadcast activation codes in one instruction.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/kernels/kernels_blocks_internal.h"

#include <immintrin.h>
#include <string.h>

#define TFM_VNNI
#define TFM_VNNI_INLINE static inline __attribute__((always_inline))

/* Sixteen f16 or uint8 values from `at`, as f32. */
TFM_VNNI_INLINE __m512 halves16_vnni(const uint16_t *at) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)at));
}
TFM_VNNI_INLINE __m512 bytes16_vnni(const uint8_t *at) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)at)));
}
TFM_VNNI_INLINE __m512 signed_bytes16_vnni(const uint8_t *at) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)at)));
}

/* Sixteen E8M0 exponents e from `at` as 2^(e - 128) (tfm_e8m0_half): the
 * exponent field e - 1, or for e < 2 a subnormal's bits. */
TFM_VNNI_INLINE __m512 e8m0_halves16_vnni(const uint8_t *at) {
  __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)at));
  __m512i normal =
      _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
  __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
  __mmask16 small = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2));
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal));
}

/* Block b's scales, and the minimums added to its weights, of a panel's
 * 16 rows (block_scale, block_min). */
TFM_VNNI_INLINE __m512 scales16_vnni(int format, const panel_parts *parts,
                                     int64_t b) {
  if (format == TFM_FORMAT_MXFP4)
    return e8m0_halves16_vnni(parts->block_scales + b * kRows);
  if (!is_k_with_min(format))
    return halves16_vnni(parts->scales + b * kRows);
  return _mm512_mul_ps(
      halves16_vnni(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows),
      bytes16_vnni(parts->block_scales + b * kRows));
}
TFM_VNNI_INLINE __m512 mins16_vnni(int format, const panel_parts *parts,
                                   int64_t b) {
  if (format == TFM_FORMAT_Q4_1)
    return halves16_vnni(parts->mins + b * kRows);
  if (!is_k_with_min(format))
    return _mm512_setzero_ps();
  return _mm512_mul_ps(
      halves16_vnni(parts->mins + b / TFM_K_SUPER_BLOCKS * kRows),
      _mm512_sub_ps(_mm512_setzero_ps(),
                    bytes16_vnni(parts->block_mins + b * kRows)));
}

/* A panel's q6_k scales of half `part` of block b (q6_scale). */
TFM_VNNI_INLINE __m512 q6_scales16_vnni(const panel_parts *parts, int64_t b,
                                        int part) {
  return _mm512_mul_ps(
      halves16_vnni(parts->scales + b / TFM_K_SUPER_BLOCKS * kRows),
      signed_bytes16_vnni(parts->block_scales + (2 * b + part) * kRows));
}

/* Nibble vector v of a block's q6_k codes at `codes` as whole codes, as
 * q6_codes_avx2 for a panel's 16 rows. */
TFM_VNNI_INLINE void q6_codes_vnni(const uint8_t *codes, int v, __m512i *low,
                                   __m512i *high) {
  __m512i raw = _mm512_loadu_si512(codes + v * 64);
  __m512i bits = _mm512_loadu_si512(codes + 256 + v / 2 * 64);
  if (v % 2)
    bits = _mm512_srli_epi16(bits, 4);
  const __m512i nibble = _mm512_set1_epi8(0x0F), top = _mm512_set1_epi8(0x30);
  *low = _mm512_or_si512(_mm512_and_si512(raw, nibble),
                         _mm512_and_si512(_mm512_slli_epi16(bits, 4), top));
  *high = _mm512_or_si512(
      _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble),
      _mm512_and_si512(_mm512_slli_epi16(bits, 2), top));
}

/* Nibble vector v of a block's q5_k codes at `codes` as whole codes: its
 * low and high nibbles, each with its fifth bit (bits 2v and 2v + 1 of
 * the block's bit vector, brought down to bits 0 and 1 by one shift). */
TFM_VNNI_INLINE void q5_codes_vnni(const uint8_t *codes, int v, __m512i *low,
                                   __m512i *high) {
  __m512i raw = _mm512_loadu_si512(codes + v * 64);
  __m512i bits = _mm512_srli_epi16(_mm512_loadu_si512(codes + 256), 2 * v);
  const __m512i nibble = _mm512_set1_epi8(0x0F), fifth = _mm512_set1_epi8(0x10);
  *low = _mm512_or_si512(_mm512_and_si512(raw, nibble),
                         _mm512_and_si512(_mm512_slli_epi16(bits, 4), fifth));
  *high = _mm512_or_si512(
      _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble),
      _mm512_and_si512(_mm512_slli_epi16(bits, 3), fifth));
}

/* Four activation codes of a row, broadcast to every lane. */
TFM_VNNI_INLINE __m512i broadcast4(const int8_t *x) {
  int32_t four;
  memcpy(&four, x, 4);
  return _mm512_set1_epi32(four);
}

/* Nibble vector v of a q4, q5_k, q6_k or mxfp4 block's codes at `codes`
 * for a panel's 16 rows, as nibble_codes_avx2. */
TFM_VNNI_INLINE void nibble_codes_vnni(int format, const uint8_t *codes, int v,
                                       __m512i *low, __m512i *high) {
  if (format == TFM_FORMAT_Q6_K) {
    q6_codes_vnni(codes, v, low, high);
    return;
  }
  if (format == TFM_FORMAT_Q5_K) {
    q5_codes_vnni(codes, v, low, high);
    return;
  }
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512i raw = _mm512_loadu_si512(codes + v * 64);
  *low = _mm512_and_si512(raw, nibble);
  *high = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
  if (format == TFM_FORMAT_MXFP4) {
    const __m512i table =
        _mm512_broadcast_i32x4(_mm_setr_epi8(TFM_MXFP4_CODE_LIST));
    *low = _mm512_shuffle_epi8(table, *low);
    *high = _mm512_shuffle_epi8(table, *high);
  }
}

/* Adds nibble vector v's products (block codes at `codes` in each of `np`
 * panels) with `rows` rows of activations (x: the first row's block, rows
 * row_stride apart) to dot[r][j]: each code vector serves every row, each
 * broadcast every panel. */
TFM_VNNI_INLINE void add_nibble_products_vnni(int format,
                                              const uint8_t *const *panel,
                                              int64_t codes, const int8_t *x,
                                              int64_t row_stride, int v,
                                              int rows, int np,
                                              __m512i dot[][2]) {
  __m512i low[2], high[2];
#pragma GCC unroll 2
  for (int j = 0; j < np; ++j)
    nibble_codes_vnni(format, panel[j] + codes, v, &low[j], &high[j]);
#pragma GCC unroll 6
  for (int r = 0; r < rows; ++r) {
    __m512i x0 = broadcast4(x + r * row_stride + 8 * v);
    __m512i x1 = broadcast4(x + r * row_stride + 8 * v + 4);
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j) {
      dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], low[j], x0);
      dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], high[j], x1);
    }
  }
}

/* Adds a q8_0 block's products (its codes at byte `codes` of each of `np`
 * panels) with `rows` rows of activations (x: the first row's block, rows
 * row_stride apart) to dot[r][j]: each weight vector serves every row,
 * each broadcast every panel. */
TFM_VNNI_INLINE void add_q8_products_vnni(const uint8_t *const *panel,
                                          int64_t codes, const int8_t *x,
                                          int64_t row_stride, int rows, int np,
                                          __m512i dot[][2]) {
#pragma GCC unroll 8
  for (int g = 0; g < kBlock / 4; ++g) {
    __m512i w[2];
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      w[j] = _mm512_loadu_si512(panel[j] + codes + g * 64);
#pragma GCC unroll 8
    for (int r = 0; r < rows; ++r) {
      __m512i xr = broadcast4(x + r * row_stride + 4 * g);
#pragma GCC unroll 2
      for (int j = 0; j < np; ++j)
        dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], w[j], xr);
    }
  }
}

/* `np` (1 or 2) whole panels (16 outputs each) for `rows` (2 to 6) rows
 * of A, both constants at every call so that the accumulators stay in
 * registers: one int32 chain and one f32 accumulator per row and panel
 * (2 x 6 x 2 = 24 of the 32 vector registers); each weight vector loaded
 * serves every row, each activation broadcast both panels. One row goes
 * to row_vnni. `format`: a constant at each call, as the row count. */
TFM_VNNI_INLINE void panel_tile_vnni(const block_job *job, int format,
                                     int64_t p, int64_t i0, int rows, int np,
                                     float tile[2][kTile * kRows]) {
  int64_t code_bytes = tfm_block_code_bytes(format);
  int q8 = format == TFM_FORMAT_Q8_0;
  int with_min = has_min(format);
  int32_t offset = code_offset(format);
  int64_t row_stride = job->blocks * kBlock;
  const uint8_t *panel[2] = {job->weights + p * job->panel_bytes,
                             job->weights + (p + np - 1) * job->panel_bytes};
  panel_parts parts[2] = {parts_of(panel[0], format, job->blocks),
                          parts_of(panel[1], format, job->blocks)};
  __m512 acc[kTile][2];
#pragma GCC unroll 6
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      acc[r][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < job->blocks; ++b) {
    int64_t codes = codes_start(format, job->blocks) + b * code_bytes;
    const int8_t *x = job->x.codes + i0 * row_stride + b * kBlock;
    __m512i dot[kTile][2];
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 2
      for (int j = 0; j < np; ++j)
        dot[r][j] = _mm512_setzero_si512();
    if (format == TFM_FORMAT_Q6_K) {
      /* Each half of the block with its own scale, folded into the f32
       * accumulators before the next: the same registers as the others. */
      for (int part = 0; part < 2; ++part) {
#pragma GCC unroll 2
        for (int v = 2 * part; v < 2 * part + 2; ++v)
          add_nibble_products_vnni(format, panel, codes, x, row_stride, v,
                                   rows, np, dot);
        __m512 ws[2];
#pragma GCC unroll 2
        for (int j = 0; j < np; ++j)
          ws[j] = q6_scales16_vnni(&parts[j], b, part);
#pragma GCC unroll 6
        for (int r = 0; r < rows; ++r) {
          int64_t i = (i0 + r) * job->blocks + b;
          __m512i correction =
              _mm512_set1_epi32(offset * job->x.half_sums[2 * i + part]);
          __m512 xs = _mm512_set1_ps(job->x.scales[i]);
#pragma GCC unroll 2
          for (int j = 0; j < np; ++j) {
            acc[r][j] = _mm512_fmadd_ps(
                _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[r][j], correction)),
                _mm512_mul_ps(ws[j], xs), acc[r][j]);
            dot[r][j] = _mm512_setzero_si512();
          }
        }
      }
      continue;
    }
    if (q8) {
      add_q8_products_vnni(panel, codes, x, row_stride, rows, np, dot);
    } else {
#pragma GCC unroll 4
      for (int v = 0; v < kBlock / 8; ++v)
        add_nibble_products_vnni(format, panel, codes, x, row_stride, v, rows,
                                 np, dot);
    }
    __m512 ws[2];
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      ws[j] = scales16_vnni(format, &parts[j], b);
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r) {
      int64_t i = (i0 + r) * job->blocks + b;
      __m512i correction = _mm512_set1_epi32(offset * job->x.sums[i]);
      __m512 xs = _mm512_set1_ps(job->x.scales[i]);
#pragma GCC unroll 2
      for (int j = 0; j < np; ++j)
        acc[r][j] = _mm512_fmadd_ps(
            _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[r][j], correction)),
            _mm512_mul_ps(ws[j], xs), acc[r][j]);
    }
    if (with_min) {
      __m512 wm[2];
#pragma GCC unroll 2
      for (int j = 0; j < np; ++j)
        wm[j] = mins16_vnni(format, &parts[j], b);
#pragma GCC unroll 6
      for (int r = 0; r < rows; ++r) {
        int64_t i = (i0 + r) * job->blocks + b;
        __m512 xsum = _mm512_set1_ps(job->x.scales[i] * (float)job->x.sums[i]);
#pragma GCC unroll 2
        for (int j = 0; j < np; ++j)
          acc[r][j] = _mm512_fmadd_ps(wm[j], xsum, acc[r][j]);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      _mm512_storeu_ps(tile[j] + r * kRows, acc[r][j]);
}

/* q8_channel's tile (job->channel): as panel_tile_vnni's q8_0 products,
 * but each row's int32 sums run across all its blocks, and the rows'
 * scales (every block's, so block 0's) and the code offset's correction
 * (128 times the activation row's code sum) apply once at the end: no
 * conversion or f32 multiply-add per block, and registers for
 * kChannelTile rows (16 chains). */
TFM_VNNI_INLINE void channel_tile_vnni(const block_job *job, int64_t p,
                                       int64_t i0, int rows, int np,
                                       float tile[2][kChannelTile * kRows]) {
  enum { kCodeBytes = kBlock * kRows }; /* q8_0's 512 a block */
  int64_t row_stride = job->blocks * kBlock;
  const uint8_t *panel[2] = {job->weights + p * job->panel_bytes,
                             job->weights + (p + np - 1) * job->panel_bytes};
  int64_t codes = codes_start(TFM_FORMAT_Q8_0, job->blocks);
  __m512i dot[kChannelTile][2];
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      dot[r][j] = _mm512_setzero_si512();
  for (int64_t b = 0; b < job->blocks; ++b)
    add_q8_products_vnni(panel, codes + b * kCodeBytes,
                         job->x.codes + i0 * row_stride + b * kBlock,
                         row_stride, rows, np, dot);
  __m512 ws[2];
#pragma GCC unroll 2
  for (int j = 0; j < np; ++j)
    ws[j] = halves16_vnni((const uint16_t *)panel[j]);
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    int64_t i = i0 + r;
    __m512i correction = _mm512_set1_epi32(128 * job->x.row_sums[i]);
    __m512 xs = _mm512_set1_ps(job->x.scales[i * job->blocks]);
#pragma GCC unroll 2
    for (int j = 0; j < np; ++j)
      _mm512_storeu_ps(tile[j] + r * kRows,
                       _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(
                                         dot[r][j], correction)),
                                     _mm512_mul_ps(ws[j], xs)));
  }
}

/* Bytes ahead of the codes it reads that the VNNI row kernel prefetches
 * each panel, into L1 (prefetcht0). Measured on an Intel Xeon (family 6,
 * model 207; `bench/gemv_stream.c tinyllama`, read probe 29.5 GB/s): int8
 * blocks streamed at 31.2 GB/s unprefetched and 33.3 1 KiB ahead, int4
 * 27.2 and 30.9 (512 bytes: 32.7 and 29.1; 4 KiB: 31.9 and 29.1). */
enum { kVnniRowPrefetchBytes = 1024 };

/* After block b, the K-quant row kernel's step at the end of a
 * super-block: its sums by scale times d (and, q4_k and q5_k, its sums by
 * minimum times dmin, subtracted) into the accumulators, and the sums
 * restarted. */
TFM_VNNI_INLINE void end_super_block_vnni(int format, const panel_parts *parts,
                                          int count, int64_t b, __m512 *acc,
                                          __m512 *by_scale, __m512 *by_min) {
  if (b % TFM_K_SUPER_BLOCKS != TFM_K_SUPER_BLOCKS - 1)
    return;
  int64_t super = b / TFM_K_SUPER_BLOCKS * kRows;
#pragma GCC unroll 4
  for (int j = 0; j < count; ++j) {
    acc[j] = _mm512_fmadd_ps(by_scale[j], halves16_vnni(parts[j].scales + super),
                             acc[j]);
    if (is_k_with_min(format))
      acc[j] = _mm512_fnmadd_ps(by_min[j], halves16_vnni(parts[j].mins + super),
                                acc[j]);
    by_scale[j] = by_min[j] = _mm512_setzero_ps();
  }
}

enum { kRowPanels = 4 };

/* The row kernel's products of a q5_k, q6_k or mxfp4 block (codes at
 * `codes` in each of `count` panels) with one row's block x, its codes
 * whole (nibble_codes_vnni): q5_k's and mxfp4's low nibbles' codes in
 * `even`, high ones' in `odd`; q6_k's first half (nibble vectors 0 and 1)
 * in `even`, its second in `odd`, as each half has its scale. Each panel's
 * code and high-bit vectors are prefetched as they go. */
TFM_VNNI_INLINE void add_whole_code_products_vnni(int format,
                                                const uint8_t *const *panel,
                                                int64_t codes, const int8_t *x,
                                                int count, __m512i *even,
                                                __m512i *odd) {
#pragma GCC unroll 4
  for (int v = 0; v < kBlock / 8; ++v) {
    __m512i x0 = broadcast4(x + 8 * v), x1 = broadcast4(x + 8 * v + 4);
    /* The high-bit vector(s) this nibble vector is the first to read. */
    int bits = format == TFM_FORMAT_Q6_K   ? v < 2
               : format == TFM_FORMAT_Q5_K ? v == 0
                                           : 0;
#pragma GCC unroll 4
    for (int j = 0; j < count; ++j) {
      const uint8_t *at = panel[j] + codes;
      __builtin_prefetch(at + v * 64 + kVnniRowPrefetchBytes, 0, 3);
      if (bits)
        __builtin_prefetch(at + 256 + v * 64 + kVnniRowPrefetchBytes, 0, 3);
      __m512i low, high;
      nibble_codes_vnni(format, at, v, &low, &high);
      if (format != TFM_FORMAT_Q6_K) {
        even[j] = _mm512_dpbusd_epi32(even[j], low, x0);
        odd[j] = _mm512_dpbusd_epi32(odd[j], high, x1);
      } else if (v < 2) {
        even[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(even[j], low, x0),
                                      high, x1);
      } else {
        odd[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(odd[j], low, x0),
                                     high, x1);
      }
    }
  }
}

/* One row of A (a decode step) against `count` (<= kRowPanels) consecutive
 * panels in `format`, both constants at every call: each block's
 * activation broadcasts serve all of them, and the panels' independent
 * chains and streams keep the memory system busy. */
TFM_VNNI_INLINE void row_panels_vnni(const block_job *job, int format,
                                     int64_t p, int count, float *out) {
  int64_t code_bytes = tfm_block_code_bytes(format);
  int q8 = format == TFM_FORMAT_Q8_0;
  int with_min = has_min(format);
  int32_t offset = code_offset(format);
  const uint8_t *panel[kRowPanels];
  panel_parts parts[kRowPanels];
  /* K-quants: the current super-block's sums by scale and by minimum. */
  __m512 acc[kRowPanels], by_scale[kRowPanels], by_min[kRowPanels];
#pragma GCC unroll 4
  for (int j = 0; j < count; ++j) {
    panel[j] = job->weights + (p + j) * job->panel_bytes;
    parts[j] = parts_of(panel[j], format, job->blocks);
    acc[j] = by_scale[j] = by_min[j] = _mm512_setzero_ps();
  }
  const int8_t *x = job->x.codes;
  for (int64_t b = 0; b < job->blocks; ++b, x += kBlock) {
    __m512i even[kRowPanels], odd[kRowPanels];
#pragma GCC unroll 4
    for (int j = 0; j < count; ++j)
      even[j] = odd[j] = _mm512_setzero_si512();
    /* Where block b's codes start in each panel. */
    int64_t codes = codes_start(format, job->blocks) + b * code_bytes;
    if (format == TFM_FORMAT_Q6_K) {
      /* The block's halves in `even` and `odd`, each with its scale. */
      add_whole_code_products_vnni(format, panel, codes, x, count, even, odd);
      /* As q4_k's below: the super-block's d scales its sums once. */
      __m512 xs = _mm512_set1_ps(job->x.scales[b]);
      __m512i first = _mm512_set1_epi32(offset * job->x.half_sums[2 * b]);
      __m512i second = _mm512_set1_epi32(offset * job->x.half_sums[2 * b + 1]);
#pragma GCC unroll 4
      for (int j = 0; j < count; ++j) {
        const uint8_t *half_scales = parts[j].block_scales + 2 * b * kRows;
        by_scale[j] = _mm512_fmadd_ps(
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(even[j], first)), xs),
            signed_bytes16_vnni(half_scales), by_scale[j]);
        by_scale[j] = _mm512_fmadd_ps(
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(odd[j], second)), xs),
            signed_bytes16_vnni(half_scales + kRows), by_scale[j]);
      }
      end_super_block_vnni(format, parts, count, b, acc, by_scale, by_min);
      continue;
    }
    if (q8) {
#pragma GCC unroll 4
      for (int g = 0; g < kBlock / 4; g += 2) {
        __m512i x0 = broadcast4(x + 4 * g), x1 = broadcast4(x + 4 * g + 4);
#pragma GCC unroll 4
        for (int j = 0; j < count; ++j) {
          const uint8_t *at = panel[j] + codes + g * 64;
          __builtin_prefetch(at + kVnniRowPrefetchBytes, 0, 3);
          __builtin_prefetch(at + 64 + kVnniRowPrefetchBytes, 0, 3);
          even[j] = _mm512_dpbusd_epi32(even[j], _mm512_loadu_si512(at), x0);
          odd[j] = _mm512_dpbusd_epi32(odd[j], _mm512_loadu_si512(at + 64), x1);
        }
      }
    } else if (format == TFM_FORMAT_Q5_K || format == TFM_FORMAT_MXFP4) {
      /* Whole codes: a high nibble with its fifth bit, kept in place,
       * would overflow the byte, and mxfp4's are looked up. */
      add_whole_code_products_vnni(format, panel, codes, x, count, even, odd);
    } else {
      /* The high nibbles stay in place (16 times their value: no shift
       * per vector); their sum, a multiple of 16, is shifted once. */
      const __m512i low_nibble = _mm512_set1_epi8(0x0F);
      const __m512i high_nibble = _mm512_set1_epi8((char)0xF0);
#pragma GCC unroll 4
      for (int v = 0; v < kBlock / 8; ++v) {
        __m512i x0 = broadcast4(x + 8 * v), x1 = broadcast4(x + 8 * v + 4);
#pragma GCC unroll 4
        for (int j = 0; j < count; ++j) {
          const uint8_t *at = panel[j] + codes + v * 64;
          __builtin_prefetch(at + kVnniRowPrefetchBytes, 0, 3);
          __m512i raw = _mm512_loadu_si512(at);
          even[j] = _mm512_dpbusd_epi32(
              even[j], _mm512_and_si512(raw, low_nibble), x0);
          odd[j] = _mm512_dpbusd_epi32(
              odd[j], _mm512_and_si512(raw, high_nibble), x1);
        }
      }
#pragma GCC unroll 4
      for (int j = 0; j < count; ++j)
        odd[j] = _mm512_srai_epi32(odd[j], 4);
    }
    __m512 xs = _mm512_set1_ps(job->x.scales[b]);
    __m512 xsum = _mm512_set1_ps(job->x.scales[b] * (float)job->x.sums[b]);
    if (is_k_with_min(format)) {
      /* A super-block's d and dmin scale its blocks' sums once: each
       * block's products add up by its 6-bit scale (and minimum) first. */
#pragma GCC unroll 4
      for (int j = 0; j < count; ++j) {
        __m512 products = _mm512_mul_ps(
            _mm512_cvtepi32_ps(_mm512_add_epi32(even[j], odd[j])), xs);
        by_scale[j] = _mm512_fmadd_ps(
            products, bytes16_vnni(parts[j].block_scales + b * kRows),
            by_scale[j]);
        by_min[j] = _mm512_fmadd_ps(
            bytes16_vnni(parts[j].block_mins + b * kRows), xsum, by_min[j]);
      }
      end_super_block_vnni(format, parts, count, b, acc, by_scale, by_min);
      continue;
    }
    __m512i correction = _mm512_set1_epi32(offset * job->x.sums[b]);
#pragma GCC unroll 4
    for (int j = 0; j < count; ++j) {
      __m512 ws = scales16_vnni(format, &parts[j], b);
      __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(even[j], odd[j]),
                                     correction);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(ws, xs),
                               acc[j]);
      if (with_min)
        acc[j] = _mm512_fmadd_ps(mins16_vnni(format, &parts[j], b), xsum,
                                 acc[j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < count; ++j)
    _mm512_storeu_ps(out + j * kRows, acc[j]);
}

/* Panels [p0, p1) for one row of A, `format` a constant at each call (as
 * row_format_avx2's). */
TFM_VNNI_INLINE void row_format_vnni(const block_job *job, int format,
                                     int64_t p0, int64_t p1) {
  float tile[kRowPanels * kRows];
  for (int64_t p = p0; p < p1; p += kRowPanels) {
    int count = p1 - p < kRowPanels ? (int)(p1 - p) : kRowPanels;
    switch (count) {
    case 4: row_panels_vnni(job, format, p, 4, tile); break;
    case 3: row_panels_vnni(job, format, p, 3, tile); break;
    case 2: row_panels_vnni(job, format, p, 2, tile); break;
    default: row_panels_vnni(job, format, p, 1, tile); break;
    }
    for (int j = 0; j < count; ++j)
      store_tile(job, p + j, 0, 1, tile + j * kRows);
  }
}

TFM_VNNI void tfm_blocks_row_vnni(const block_job *job, int64_t p0, int64_t p1) {
  switch (job->format) {
  case TFM_FORMAT_Q8_0:
    row_format_vnni(job, TFM_FORMAT_Q8_0, p0, p1);
    break;
  case TFM_FORMAT_Q4_0:
    row_format_vnni(job, TFM_FORMAT_Q4_0, p0, p1);
    break;
  case TFM_FORMAT_Q4_1:
    row_format_vnni(job, TFM_FORMAT_Q4_1, p0, p1);
    break;
  case TFM_FORMAT_Q4_K:
    row_format_vnni(job, TFM_FORMAT_Q4_K, p0, p1);
    break;
  case TFM_FORMAT_Q5_K:
    row_format_vnni(job, TFM_FORMAT_Q5_K, p0, p1);
    break;
  case TFM_FORMAT_MXFP4:
    row_format_vnni(job, TFM_FORMAT_MXFP4, p0, p1);
    break;
  default:
    row_format_vnni(job, TFM_FORMAT_Q6_K, p0, p1);
    break;
  }
}

/* q8_channel's rows [i0, i0 + rows) (at most kChannelTile) against
 * panels [p, p + np), an instance for each count. */
TFM_VNNI_INLINE void channel_tiles_vnni(const block_job *job, int64_t p,
                                        int64_t i0, int rows, int np) {
  float tile[2][kChannelTile * kRows];
  switch (rows * 2 + np - 1) {
  case 16:
    channel_tile_vnni(job, p, i0, 8, 1, tile);
    break;
  case 17:
    channel_tile_vnni(job, p, i0, 8, 2, tile);
    break;
  case 14:
    channel_tile_vnni(job, p, i0, 7, 1, tile);
    break;
  case 15:
    channel_tile_vnni(job, p, i0, 7, 2, tile);
    break;
  case 12:
    channel_tile_vnni(job, p, i0, 6, 1, tile);
    break;
  case 13:
    channel_tile_vnni(job, p, i0, 6, 2, tile);
    break;
  case 10:
    channel_tile_vnni(job, p, i0, 5, 1, tile);
    break;
  case 11:
    channel_tile_vnni(job, p, i0, 5, 2, tile);
    break;
  case 8:
    channel_tile_vnni(job, p, i0, 4, 1, tile);
    break;
  case 9:
    channel_tile_vnni(job, p, i0, 4, 2, tile);
    break;
  case 6:
    channel_tile_vnni(job, p, i0, 3, 1, tile);
    break;
  case 7:
    channel_tile_vnni(job, p, i0, 3, 2, tile);
    break;
  case 4:
    channel_tile_vnni(job, p, i0, 2, 1, tile);
    break;
  case 5:
    channel_tile_vnni(job, p, i0, 2, 2, tile);
    break;
  case 2:
    channel_tile_vnni(job, p, i0, 1, 1, tile);
    break;
  default:
    channel_tile_vnni(job, p, i0, 1, 2, tile);
    break;
  }
  for (int j = 0; j < np; ++j)
    store_tile(job, p + j, i0, rows, tile[j]);
}

/* Rows [i0, i0 + rows) of A against panels [p, p + np), np 1 or 2. Each
 * format has instances of its own, as the row kernel's: with one instance
 * for all, testing the format in the block loop, the 124M LLaMA shape
 * prefilled Q8_0 and Q4_0 files 0.8x as fast (2350 against 2970 tokens/s
 * on an Intel Xeon), and Q4_K_M 0.75x once Q6_K's halves joined the loop. */
TFM_VNNI void tfm_blocks_tile_vnni(const block_job *job, int64_t p, int64_t i0,
                               int rows, int np) {
  if (job->channel) {
    channel_tiles_vnni(job, p, i0, rows, np);
    return;
  }
  float tile[2][kTile * kRows];
#define TFM_TILE_ROWS(FORMAT, NP)                                              \
  switch (rows) {                                                              \
  case 6: panel_tile_vnni(job, FORMAT, p, i0, 6, NP, tile); break;             \
  case 5: panel_tile_vnni(job, FORMAT, p, i0, 5, NP, tile); break;             \
  case 4: panel_tile_vnni(job, FORMAT, p, i0, 4, NP, tile); break;             \
  case 3: panel_tile_vnni(job, FORMAT, p, i0, 3, NP, tile); break;             \
  case 2: panel_tile_vnni(job, FORMAT, p, i0, 2, NP, tile); break;             \
  default: panel_tile_vnni(job, FORMAT, p, i0, 1, NP, tile); break;            \
  }
#define TFM_TILE_CASES(FORMAT)                                                 \
  if (np == 2)                                                                 \
    TFM_TILE_ROWS(FORMAT, 2)                                                   \
  else                                                                         \
    TFM_TILE_ROWS(FORMAT, 1)
  switch (job->format) {
  case TFM_FORMAT_Q4_K:
    TFM_TILE_CASES(TFM_FORMAT_Q4_K) break;
  case TFM_FORMAT_Q5_K:
    TFM_TILE_CASES(TFM_FORMAT_Q5_K) break;
  case TFM_FORMAT_Q6_K:
    TFM_TILE_CASES(TFM_FORMAT_Q6_K) break;
  case TFM_FORMAT_Q8_0:
    TFM_TILE_CASES(TFM_FORMAT_Q8_0) break;
  case TFM_FORMAT_Q4_0:
    TFM_TILE_CASES(TFM_FORMAT_Q4_0) break;
  case TFM_FORMAT_MXFP4:
    TFM_TILE_CASES(TFM_FORMAT_MXFP4) break;
  default:
    TFM_TILE_CASES(TFM_FORMAT_Q4_1) break;
  }
#undef TFM_TILE_CASES
#undef TFM_TILE_ROWS
  for (int j = 0; j < np; ++j)
    store_tile(job, p + j, i0, rows, tile[j]);
}
