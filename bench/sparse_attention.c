/* bench/sparse_attention.c: the runtime's fused attention kernel
 * (tfm_rt_attention) on GPT-Neo-shaped causal self-attention (12 heads of
 * 64) at 1k to 16k tokens, full against a sliding window of 512 (a local
 * layer), ms per call with the runtime's threads. The windowed kernel
 * visits only the key tiles the window reaches, so its time grows with n;
 * full attention's with n^2. Built and run by bench/sparse_attention.sh. */
#include "tfm/tfm_model_abi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void _mlir_ciface_tfm_rt_attention(tfm_memref3d_f32 *, tfm_memref3d_f32 *,
                                   tfm_memref3d_f32 *, tfm_memref3d_f32 *,
                                   float, int64_t, int64_t);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static tfm_memref3d_f32 rows(float *data, int64_t n, int64_t heads,
                             int64_t dim) {
  tfm_memref3d_f32 m = {data, data, 0, {n, heads, dim}, {heads * dim, dim, 1}};
  return m;
}

/* The best of `runs` calls, in ms. */
static double time_attention(float *q, float *k, float *v, float *out,
                             int64_t n, int64_t heads, int64_t dim,
                             int64_t window, int runs) {
  tfm_memref3d_f32 mq = rows(q, n, heads, dim), mk = rows(k, n, heads, dim),
                   mv = rows(v, n, heads, dim), mo = rows(out, n, heads, dim);
  double best = INFINITY;
  for (int r = 0; r < runs; ++r) {
    double start = now();
    _mlir_ciface_tfm_rt_attention(&mq, &mk, &mv, &mo, 0.125f, 1, window);
    double took = (now() - start) * 1e3;
    if (took < best)
      best = took;
  }
  return best;
}

int main(int argc, char **argv) {
  const int64_t heads = 12, dim = 64, window = 512;
  int64_t longest = argc > 1 ? atoll(argv[1]) : 16384;
  printf("%7s %12s %12s %8s %14s %14s\n", "tokens", "full ms", "window ms",
         "ratio", "full/token us", "window/token us");
  for (int64_t n = 1024; n <= longest; n *= 2) {
    size_t count = (size_t)(n * heads * dim);
    float *q = malloc(count * 4), *k = malloc(count * 4),
          *v = malloc(count * 4), *out = malloc(count * 4);
    if (!q || !k || !v || !out)
      return fprintf(stderr, "out of memory at %lld tokens\n", (long long)n), 1;
    for (size_t i = 0; i < count; ++i) {
      q[i] = (float)rand() / RAND_MAX - 0.5f;
      k[i] = (float)rand() / RAND_MAX - 0.5f;
      v[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    int runs = n <= 4096 ? 3 : 1;
    double full = time_attention(q, k, v, out, n, heads, dim, 0, runs);
    double windowed = time_attention(q, k, v, out, n, heads, dim, window, runs);
    printf("%7lld %12.1f %12.1f %8.1f %14.2f %14.2f\n", (long long)n, full,
           windowed, full / windowed, full * 1e3 / n, windowed * 1e3 / n);
    fflush(stdout);
    free(q);
    free(k);
    free(v);
    free(out);
  }
  return 0;
}
