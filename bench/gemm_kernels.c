/* bench/gemm_kernels.c: the runtime's x·Wᵀ engines on transformer
 * shapes, GFLOP/s with the runtime's threads: OpenBLAS on the checkpoint
 * layout (tfm_rt_matmul_nt), the micro-kernel on compile-time f32 panels
 * (tfm_rt_linear_panels), and on bf16 panels: with activations rounded to
 * bf16 for vdpbf16ps where the CPU has it and it pays
 * (tfm_rt_linear_panels_bf16, --compute-dtype bf16), and always widened
 * (_bf16_widened, --compute-dtype f32), on int8 blocks of 32 (q8_0:
 * tfm_rt_linear_blocks, --weights-dtype int8; the activations quantized
 * per block at each call, vpdpbusd where the CPU has VNNI) and on int8
 * per channel (q8_channel, --compute-dtype int8: a scale a row for
 * weights and activations, a row's sums int32 to its end). Set their
 * GFLOP/s (GOP/s for int8) against bench/hwlimits.c's FP32, BF16 and int8
 * peaks.
 *
 *   cc -O2 bench/gemm_kernels.c -Iruntime/include build/lib/libtfmrt.a \
 *      -lopenblas -lutf8proc -lz -lm -lpthread -o gemm_kernels
 */
#include "tfm/half_floats.h"
#include "tfm/runtime_kernels.h"
#include "tfm/tfm_model_abi.h"
#include "tfm/weight_formats.h"

#include <math.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kEngines = 6 };

/* W [n, k] (k a multiple of 32) as q8_0 block panels (weight_formats.h):
 * each row's block of 32 scaled by its peak / 127, or with `per_row`
 * (q8_channel's layout) by the row's; `dequantized` gets the weights the
 * panels hold. */
static int8_t *q8_panels(const float *w, int64_t n, int64_t k, int per_row,
                         float *dequantized) {
  int64_t blocks = k / TFM_BLOCK_SIZE, panels = (n + 15) / 16;
  int64_t panel_bytes = tfm_block_panel_bytes(TFM_FORMAT_Q8_0, k);
  uint8_t *out = calloc(panels, panel_bytes);
  for (int64_t row = 0; row < panels * 16; ++row)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t *panel = out + row / 16 * panel_bytes;
      int r = (int)(row % 16);
      float peak = 0;
      for (int64_t e = per_row ? -32 * b : 0;
           e < (per_row ? k - 32 * b : 32) && row < n; ++e) {
        float v = w[row * k + 32 * b + e];
        peak = v > peak ? v : -v > peak ? -v : peak;
      }
      uint16_t scale = tfm_float_to_f16(peak > 0 ? peak / 127 : 1);
      memcpy(panel + 2 * (b * 16 + r), &scale, 2);
      uint8_t *codes = panel + blocks * tfm_block_meta_bytes(TFM_FORMAT_Q8_0) +
                       b * tfm_block_code_bytes(TFM_FORMAT_Q8_0);
      for (int e = 0; e < 32; ++e) {
        int q = 0;
        if (row < n) {
          float v = w[row * k + 32 * b + e] / tfm_f16_to_float(scale);
          q = (int)(v + (v < 0 ? -0.5f : 0.5f));
          q = q > 127 ? 127 : q < -127 ? -127 : q;
          dequantized[row * k + 32 * b + e] = tfm_f16_to_float(scale) * q;
        }
        codes[e / 4 * 64 + 4 * r + e % 4] = (uint8_t)(q + 128);
      }
    }
  return (int8_t *)out;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static tfm_memref2d_f32 matrix(float *data, int64_t rows, int64_t cols) {
  tfm_memref2d_f32 m = {data, data, 0, {rows, cols}, {cols, 1}};
  return m;
}

int main(void) {
  static const int64_t shapes[][3] = {
      {1, 2304, 768},   {1, 3072, 768},  {1, 768, 3072},  {128, 2304, 768},
      {128, 768, 768},  {128, 3072, 768}, {128, 768, 3072}, {512, 2304, 768},
      {512, 3072, 768}, {512, 768, 3072}};
  printf("%5s %5s %5s %10s %10s %10s %12s %10s %10s\n", "m", "n", "k",
         "openblas", "panels", "bf16", "bf16-widened", "q8_0", "q8_channel");
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s) {
    int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    int64_t count = (n + 31) / 32;
    float *a = aligned_alloc(64, m * k * 4), *w = aligned_alloc(64, n * k * 4);
    float *p = aligned_alloc(64, count * 32 * k * 4);
    uint16_t *p16 = aligned_alloc(64, count * 32 * k * 2);
    float *c = aligned_alloc(64, m * n * 4);
    for (int64_t i = 0; i < m * k; ++i)
      a[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < n * k; ++i)
      w[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t j = 0; j < count * 32; ++j)
      for (int64_t q = 0; q < k; ++q)
        p[(j / 32) * k * 32 + q * 32 + j % 32] = j < n ? w[j * k + q] : 0;
    tfm_memref2d_f32 ma = matrix(a, m, k), mw = matrix(w, n, k),
                     mc = matrix(c, m, n);
    for (int64_t i = 0; i < count * 32 * k; ++i)
      p16[i] = tfm_float_to_bf16(p[i]);
    tfm_memref3d_f32 mp = {p, p, 0, {count, k, 32}, {k * 32, 32, 1}};
    tfm_memref3d_u16 mp16 = {p16, p16, 0, {count, k, 32}, {k * 32, 32, 1}};
    float *w8 = aligned_alloc(64, n * k * 4);
    float *wc = aligned_alloc(64, n * k * 4);
    int8_t *q8 = q8_panels(w, n, k, 0, w8);
    int8_t *qc = q8_panels(w, n, k, 1, wc);
    int64_t q8_bytes = tfm_block_matrix_bytes(TFM_FORMAT_Q8_0, n, k);
    tfm_memref1d_i8 mq8 = {q8, q8, 0, {q8_bytes}, {1}};
    tfm_memref1d_i8 mqc = {qc, qc, 0, {q8_bytes}, {1}};
    double best[kEngines] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
    /* Enough repeats for ~0.2 s per engine; weights exceed L2 in most. */
    int repeats = (int)(2e10 / (2.0 * m * n * k + 1e8)) + 3;
    for (int engine = 0; engine < kEngines; ++engine)
      for (int r = 0; r < repeats; ++r) {
        double t = now();
        if (engine == 0)
          _mlir_ciface_tfm_rt_matmul_nt(&ma, &mw, &mc);
        else if (engine == 1)
          _mlir_ciface_tfm_rt_linear_panels(&ma, &mp, &mc);
        else if (engine == 2)
          _mlir_ciface_tfm_rt_linear_panels_bf16(&ma, &mp16, &mc);
        else if (engine == 3)
          _mlir_ciface_tfm_rt_linear_panels_bf16_widened(&ma, &mp16, &mc);
        else if (engine == 4)
          _mlir_ciface_tfm_rt_linear_blocks(&ma, &mq8, &mc, TFM_FORMAT_Q8_0);
        else
          _mlir_ciface_tfm_rt_linear_blocks(&ma, &mqc, &mc,
                                            TFM_FORMAT_Q8_CHANNEL);
        t = now() - t;
        if (t < best[engine])
          best[engine] = t;
      }
    /* Both engines must agree before their speeds mean anything. */
    float *check = aligned_alloc(64, m * n * 4);
    tfm_memref2d_f32 mcheck = matrix(check, m, n);
    for (int64_t i = 0; i < m * n; ++i)
      c[i] = check[i] = 0;
    _mlir_ciface_tfm_rt_matmul_nt(&ma, &mw, &mc);
    _mlir_ciface_tfm_rt_linear_panels(&ma, &mp, &mcheck);
    double worst = 0;
    for (int64_t i = 0; i < m * n; ++i) {
      double d = c[i] > check[i] ? c[i] - check[i] : check[i] - c[i];
      worst = d > worst ? d : worst;
    }
    /* q8_0 and q8_channel against OpenBLAS on the weights they hold,
     * within what rounding the activations to 8 bits a block (a row) moves. */
    for (int channel = 0; channel < 2; ++channel) {
      tfm_memref2d_f32 mw8 = matrix(channel ? wc : w8, n, k);
      for (int64_t i = 0; i < m * n; ++i)
        c[i] = 0; /* tfm_rt_matmul_nt adds to C */
      _mlir_ciface_tfm_rt_matmul_nt(&ma, &mw8, &mc);
      _mlir_ciface_tfm_rt_linear_blocks(&ma, channel ? &mqc : &mq8, &mcheck,
                                        channel ? TFM_FORMAT_Q8_CHANNEL
                                                : TFM_FORMAT_Q8_0);
      double worst8 = 0;
      for (int64_t i = 0; i < m * n; ++i) {
        double d = c[i] > check[i] ? c[i] - check[i] : check[i] - c[i];
        worst8 = d > worst8 ? d : worst8;
      }
      if (worst8 > 0.004 * sqrt((double)k)) {
        fprintf(stderr, "%s is %g off at %ldx%ldx%ld\n",
                channel ? "q8_channel" : "q8_0", worst8, (long)m, (long)n,
                (long)k);
        return 1;
      }
    }
    free(check);
    if (worst > 1e-3) {
      fprintf(stderr, "engines disagree by %g at %ldx%ldx%ld\n", worst,
              (long)m, (long)n, (long)k);
      return 1;
    }
    double flop = 2.0 * m * n * k;
    printf("%5ld %5ld %5ld %10.1f %10.1f %10.1f %12.1f %10.1f %10.1f\n",
           (long)m, (long)n, (long)k, flop / best[0] / 1e9,
           flop / best[1] / 1e9, flop / best[2] / 1e9, flop / best[3] / 1e9,
           flop / best[4] / 1e9, flop / best[5] / 1e9);
    free(a), free(w), free(p), free(p16), free(c), free(w8), free(q8);
    free(wc), free(qc);
  }
  return 0;
}
