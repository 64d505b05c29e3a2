/* hwlimits.c - the machine's limits, measured in the benchmark's own run:
 * memory read bandwidth (all threads summing their shares of a 1 GiB
 * buffer with vector loads; the best of 10 passes), FP32 peak
 * (independent AVX-512/AVX2 FMA chains on all threads), the BF16 and int8
 * peaks where the CPU has them (vdpbf16ps, and vpdpbusd of AVX512-VNNI or
 * AVX-VNNI: a product and a sum count two operations, as an FMA's do;
 * null elsewhere), and OpenBLAS SGEMM
 * on a transformer shape (128x2304x768, QKV of GPT-2 small). Prints JSON;
 * with --bandwidth, only the read bandwidth.
 *
 *   cc -O3 -march=native -fopenmp bench/hwlimits.c -lopenblas -o hwlimits
 */
#include <cblas.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* 32-byte vectors: on a CPU without AVX-512 GCC splits 64-byte generic
 * vectors through the stack, which measured a quarter less than the
 * weight streams of compiled models (23.8 against 31 GB/s on a Zen 2). */
typedef float v8 __attribute__((vector_size(32)));

/* Streams the calling thread's [begin, end) of `data` with four
 * independent vector sums: loads, not adds, are the limit. */
static float stream_sum(const float *data, size_t begin, size_t end) {
  v8 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
  for (size_t i = begin; i + 32 <= end; i += 32) {
    s0 += *(const v8 *)(data + i);
    s1 += *(const v8 *)(data + i + 8);
    s2 += *(const v8 *)(data + i + 16);
    s3 += *(const v8 *)(data + i + 24);
  }
  v8 s = (s0 + s1) + (s2 + s3);
  float total = 0;
  for (int i = 0; i < 8; ++i)
    total += s[i];
  return total;
}

static double read_bandwidth(void) {
  size_t n = (size_t)1 << 28; /* 1 GiB of floats */
  /* 2 MiB aligned and advised into transparent huge pages, as compiled
   * models map their weights: on 4 KiB pages (where THP is madvise-only)
   * TLB misses and the prefetchers' stops at page boundaries measured
   * two thirds of what a model's GEMV streams. */
  float *data = aligned_alloc(2 << 20, n * sizeof *data);
  madvise(data, n * sizeof *data, MADV_HUGEPAGE);
  /* Each thread touches, then reads, its own contiguous share. */
#pragma omp parallel
  {
    size_t share = n / omp_get_num_threads(), begin = share * omp_get_thread_num();
    for (size_t i = begin; i < begin + share; ++i)
      data[i] = 1.0f;
  }
  double best = 0;
  for (int r = 0; r < 10; ++r) {
    float total = 0;
    double t = now();
#pragma omp parallel reduction(+ : total)
    {
      size_t share = n / omp_get_num_threads(), begin = share * omp_get_thread_num();
      total += stream_sum(data, begin, begin + share);
    }
    t = now() - t;
    if (total > 0) /* keeps the sum, and so the reads, alive */
      best = best > n * 4.0 / t ? best : n * 4.0 / t;
  }
  free(data);
  return best / 1e9;
}

/* Independent FMA chains: at least latency x pipes (Zen 2: 5 x 2; with
 * 8 the probe read 80% of the machine, below what the GEMMs reached). */
enum { kChains = 12 };

/* Runs kChains independent accumulations `body` (one instruction on
 * accumulator a[j] and operands x and y) on all threads, the best of 20
 * short runs into `best` (the best is the machine, the rest is noise from
 * whatever else shares it); `ops` is what one instruction does. */
#define CHAIN_PEAK(vector, operand, xinit, yinit, zero, body, reduce, ops)     \
  do {                                                                         \
    long iterations = 50000000 / 16;                                           \
    for (int r = 0; r < 20; ++r) {                                             \
      double t = now();                                                        \
      float sink = 0;                                                          \
      _Pragma("omp parallel reduction(+ : sink)") {                            \
        /* the thread's own operands: a shared one would be stored to */       \
        operand x = (xinit), y = (yinit);                                      \
        vector a[kChains];                                                     \
        for (int j = 0; j < kChains; ++j)                                      \
          a[j] = zero;                                                         \
        for (long i = 0; i < iterations; ++i) {                                \
          /* x unknown each time: integer sums of constants would fold */      \
          __asm__("" : "+v"(x));                                               \
          for (int j = 0; j < kChains; ++j)                                    \
            body;                                                              \
        }                                                                      \
        for (int j = 0; j < kChains; ++j)                                      \
          sink += (float)reduce(a[j]);                                         \
      }                                                                        \
      t = now() - t;                                                           \
      double done =                                                            \
          (double)iterations * kChains * (ops) * omp_get_max_threads();        \
      if (sink != 12345.0f)                                                    \
        best = best > done / t ? best : done / t;                              \
    }                                                                          \
  } while (0)

#ifndef __AVX512F__
/* The first lane of an AVX2 sum: what keeps the chains alive. */
static float first_lane(__m256 v) {
  return _mm_cvtss_f32(_mm256_castps256_ps128(v));
}
#endif

/* GFLOP/s of FMAs (16 or 8 lanes an instruction, two operations each). */
static double fma_peak(void) {
  double best = 0;
#ifdef __AVX512F__
  CHAIN_PEAK(__m512, __m512, _mm512_set1_ps(1.0000001f), _mm512_set1_ps(1e-7f),
             _mm512_setzero_ps(), a[j] = _mm512_fmadd_ps(a[j], x, y),
             _mm512_reduce_add_ps, 32);
#else
  CHAIN_PEAK(__m256, __m256, _mm256_set1_ps(1.0000001f), _mm256_set1_ps(1e-7f),
             _mm256_setzero_ps(), a[j] = _mm256_fmadd_ps(a[j], x, y),
             first_lane, 16);
#endif
  return best / 1e9;
}

/* GFLOP/s of vdpbf16ps (32 bf16 pairs an instruction: 64 operations);
 * 0 without AVX512_BF16. */
static double bf16_peak(void) {
  double best = 0;
#ifdef __AVX512BF16__
  CHAIN_PEAK(__m512, __m512bh, (__m512bh)_mm512_set1_epi16(0x3f80),
             (__m512bh)_mm512_set1_epi16(0x3f80), _mm512_setzero_ps(),
             a[j] = _mm512_dpbf16_ps(a[j], x, y), _mm512_reduce_add_ps, 64);
#endif
  return best / 1e9;
}

#if !defined(__AVX512VNNI__) && defined(__AVXVNNI__)
static int reduce_add_256(__m256i v) {
  int lanes[8], sum = 0;
  _mm256_storeu_si256((__m256i *)lanes, v);
  for (int i = 0; i < 8; ++i)
    sum += lanes[i];
  return sum;
}
#endif

/* GOP/s of vpdpbusd (64 u8 x s8 products an instruction on AVX-512, 32 on
 * AVX-VNNI: two operations each); 0 without either. */
static double int8_peak(void) {
  double best = 0;
#if defined(__AVX512VNNI__)
  CHAIN_PEAK(__m512i, __m512i, _mm512_set1_epi8(1), _mm512_set1_epi8(2),
             _mm512_setzero_si512(), a[j] = _mm512_dpbusd_epi32(a[j], x, y),
             _mm512_reduce_add_epi32, 128);
#elif defined(__AVXVNNI__)
  CHAIN_PEAK(__m256i, __m256i, _mm256_set1_epi8(1), _mm256_set1_epi8(2),
             _mm256_setzero_si256(), a[j] = _mm256_dpbusd_avx_epi32(a[j], x, y),
             reduce_add_256, 64);
#endif
  return best / 1e9;
}

static double sgemm_rate(void) {
  int m = 128, n = 2304, k = 768;
  float *a = calloc((size_t)m * k, 4), *b = calloc((size_t)n * k, 4),
        *c = calloc((size_t)m * n, 4);
  double best = 0;
  for (int r = 0; r < 20; ++r) {
    double t = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1, a, k, b,
                k, 0, c, n);
    t = now() - t;
    double rate = 2.0 * m * n * k / t;
    best = best > rate ? best : rate;
  }
  free(a);
  free(b);
  free(c);
  return best / 1e9;
}

int main(int argc, char **argv) {
  /* --bandwidth: that alone, to measure it again beside each decode run
   * (on a shared host it drifts by 2x within minutes). */
  if (argc > 1 && !strcmp(argv[1], "--bandwidth")) {
    printf("{\"read_gb_per_s\": %.1f}\n", read_bandwidth());
    return 0;
  }
  double bf16 = bf16_peak(), int8 = int8_peak();
  char bf16_text[32] = "null", int8_text[32] = "null";
  if (bf16 > 0)
    snprintf(bf16_text, sizeof bf16_text, "%.1f", bf16);
  if (int8 > 0)
    snprintf(int8_text, sizeof int8_text, "%.1f", int8);
  printf(
      "{\"threads\": %d, \"read_gb_per_s\": %.1f, \"fp32_peak_gflops\": %.1f, "
      "\"bf16_peak_gflops\": %s, \"int8_peak_gops\": %s, "
      "\"openblas_sgemm_128x2304x768_gflops\": %.1f}\n",
      omp_get_max_threads(), read_bandwidth(), fma_peak(), bf16_text, int8_text,
      sgemm_rate());
  return 0;
}
