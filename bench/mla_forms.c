/* bench/mla_forms.c: multi-head latent attention's two forms, timed on the
 * runtime's own kernels, to choose one per phase (issue 73, part D).
 *
 * Absorbed (what tfmc compiles): each head's query is taken into the latent
 * space (q_nope · W_ukᵀ, 128 -> 512 a head), attention is multi-query over
 * the cached 576-wide latent rows (the value their first 512 columns), and
 * each head's 512-wide result is taken back to its value width (· W_uvᵀ).
 * Unabsorbed: every cached latent row is expanded to each head's key
 * (nope + rope) and value (one GEMM over the rows), and attention is
 * ordinary multi-head attention of width 192 over those.
 *
 * Per query-key pair the absorbed form multiplies H · (576 + 512) numbers,
 * the unabsorbed H · (192 + 128); the unabsorbed pays the expansion,
 * T · H · 512 · 256, for all T keys, and the absorbed two per-query
 * projections, 2 · t · H · 512 · 128. Both forms' projections run here as
 * f32 GEMMs (tfm_rt_matmul_nt); attention is tfm_rt_attention. Shapes are
 * Moonlight-16B-A3B's (16 heads) or, with `v3`, DeepSeek-V3's (128).
 *
 *   cc -O2 -I. -Iruntime/include bench/mla_forms.c build/lib/libtfmrt.a \
 *      -lopenblas -lutf8proc -lm -lpthread -o /tmp/mla_forms
 *   TFM_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 /tmp/mla_forms [v3]
 */
#include "tfm/runtime_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kRank = 512, kNope = 128, kRope = 64, kValue = 128, kRepeats = 3 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *values(int64_t count) {
  float *data = malloc((size_t)count * sizeof(float));
  if (!data) {
    fprintf(stderr, "mla_forms: out of memory\n");
    exit(1);
  }
  for (int64_t i = 0; i < count; ++i)
    data[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  return data;
}

static tfm_memref2d_f32 matrix(float *data, int64_t rows, int64_t cols,
                               int64_t stride) {
  return (tfm_memref2d_f32){data, data, 0, {rows, cols}, {stride, 1}};
}

static tfm_memref3d_f32 rows3(float *data, int64_t s, int64_t h, int64_t d,
                              int64_t s_stride, int64_t h_stride) {
  return (tfm_memref3d_f32){data, data, 0, {s, h, d}, {s_stride, h_stride, 1}};
}

/* Per head h: out[:, h, :] = in[:, h, :] · W_hᵀ, W [heads·n, k]. */
static void per_head(float *in, int64_t t, int64_t heads, int64_t k,
                     float *weight, int64_t n, float *out) {
  for (int64_t h = 0; h < heads; ++h) {
    tfm_memref2d_f32 a = matrix(in + h * k, t, k, heads * k);
    tfm_memref2d_f32 b = matrix(weight + h * n * k, n, k, k);
    tfm_memref2d_f32 c = matrix(out + h * n, t, n, heads * n);
    _mlir_ciface_tfm_rt_matmul_nt(&a, &b, &c);
  }
}

static tfm_memref1d_f32 no_sinks = {NULL, NULL, 0, {0}, {1}};

/* t queries after T - t cached positions, absorbed; seconds. */
static double absorbed(int64_t heads, int64_t t, int64_t total) {
  int64_t width = kRank + kRope;
  float *q_nope = values(t * heads * kNope), *w_uk = values(heads * kRank * kNope);
  float *w_uv = values(heads * kValue * kRank), *latent = values(total * width);
  float *query = values(t * heads * width), *attended = values(t * heads * kRank);
  float *out = values(t * heads * kValue);
  double best = 1e30;
  for (int r = 0; r < kRepeats; ++r) {
    double start = now();
    /* q_abs into the query's first 512 columns (its rope part stays). */
    for (int64_t h = 0; h < heads; ++h) {
      tfm_memref2d_f32 a = matrix(q_nope + h * kNope, t, kNope, heads * kNope);
      tfm_memref2d_f32 b = matrix(w_uk + h * kRank * kNope, kRank, kNope, kNope);
      tfm_memref2d_f32 c = matrix(query + h * width, t, kRank, heads * width);
      _mlir_ciface_tfm_rt_matmul_nt(&a, &b, &c);
    }
    tfm_memref3d_f32 q = rows3(query, t, heads, width, heads * width, width);
    tfm_memref3d_f32 k = rows3(latent, total, 1, width, width, width);
    tfm_memref3d_f32 v = rows3(latent, total, 1, kRank, width, width);
    tfm_memref3d_f32 o = rows3(attended, t, heads, kRank, heads * kRank, kRank);
    _mlir_ciface_tfm_rt_attention(&q, &k, &v, &no_sinks, &o, 0.07f, 1, 0, 0.0f);
    per_head(attended, t, heads, kRank, w_uv, kValue, out);
    double seconds = now() - start;
    best = seconds < best ? seconds : best;
  }
  free(q_nope), free(w_uk), free(w_uv), free(latent), free(query);
  free(attended), free(out);
  return best;
}

/* The same, unabsorbed; seconds. */
static double unabsorbed(int64_t heads, int64_t t, int64_t total) {
  int64_t width = kNope + kRope, expanded = kNope + kValue;
  float *query = values(t * heads * width), *latent = values(total * kRank);
  float *k_rope = values(total * kRope), *w_ukv = values(heads * expanded * kRank);
  float *kv = values(total * heads * expanded), *key = values(total * heads * width);
  float *out = values(t * heads * kValue);
  double best = 1e30;
  for (int r = 0; r < kRepeats; ++r) {
    double start = now();
    tfm_memref2d_f32 a = matrix(latent, total, kRank, kRank);
    tfm_memref2d_f32 b = matrix(w_ukv, heads * expanded, kRank, kRank);
    tfm_memref2d_f32 c = matrix(kv, total, heads * expanded, heads * expanded);
    _mlir_ciface_tfm_rt_matmul_nt(&a, &b, &c);
    /* Each head's key: its expanded nope part, then the shared rope part. */
    for (int64_t i = 0; i < total; ++i)
      for (int64_t h = 0; h < heads; ++h) {
        float *row = key + (i * heads + h) * width;
        memcpy(row, kv + (i * heads + h) * expanded, kNope * sizeof(float));
        memcpy(row + kNope, k_rope + i * kRope, kRope * sizeof(float));
      }
    tfm_memref3d_f32 q = rows3(query, t, heads, width, heads * width, width);
    tfm_memref3d_f32 k = rows3(key, total, heads, width, heads * width, width);
    tfm_memref3d_f32 v = rows3(kv + kNope, total, heads, kValue,
                               heads * expanded, expanded);
    tfm_memref3d_f32 o = rows3(out, t, heads, kValue, heads * kValue, kValue);
    _mlir_ciface_tfm_rt_attention(&q, &k, &v, &no_sinks, &o, 0.07f, 1, 0, 0.0f);
    double seconds = now() - start;
    best = seconds < best ? seconds : best;
  }
  free(query), free(latent), free(k_rope), free(w_ukv), free(kv), free(key);
  free(out);
  return best;
}

int main(int argc, char **argv) {
  int v3 = argc > 1 && !strcmp(argv[1], "v3");
  int64_t heads = v3 ? 128 : 16;
  /* (queries, keys): prefills of a fresh prompt, a chunk after a long
   * prefix, and decode. */
  static const int64_t cases[][2] = {
      {128, 128}, {512, 512}, {2048, 2048}, {64, 4096}, {256, 4096}, {1, 4096}};
  printf("%s: %lld heads, latent %d, nope %d, rope %d, value %d\n",
         v3 ? "DeepSeek-V3" : "Moonlight-16B-A3B", (long long)heads, kRank,
         kNope, kRope, kValue);
  printf("| queries | keys | absorbed (ms) | unabsorbed (ms) | unabsorbed / absorbed |\n");
  printf("|---|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    int64_t t = cases[i][0], total = cases[i][1];
    if (v3 && total > 2048)
      continue; /* keeps the run to minutes on 2 cores */
    double a = absorbed(heads, t, total), u = unabsorbed(heads, t, total);
    printf("| %lld | %lld | %.2f | %.2f | %.2f |\n", (long long)t,
           (long long)total, a * 1e3, u * 1e3, u / a);
  }
  return 0;
}
