/* bench/sparse_attention.c: the runtime's fused attention kernels at 1k
 * to 16k tokens (12 heads of 64), ms per call with the runtime's threads:
 *   - causal (GPT-Neo, Mistral): full against a sliding window of 512 (a
 *     local layer), tfm_rt_attention;
 *   - bidirectional (Longformer): full against Longformer's pattern, a
 *     window of 512 (256 on either side) plus one global token (the
 *     classifiers' <s>), tfm_rt_sparse_attention.
 * The windowed kernels visit only the key tiles the window reaches (and
 * the global keys), so their time grows with n; full attention's with n^2.
 * Built and run by bench/sparse_attention.sh. */
#include "tfm/tfm_model_abi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tfm/runtime_kernels.h"

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

/* The best of `runs` calls, in ms: tfm_rt_attention (causal or not, with
 * a window or none), or with `longformer` tfm_rt_sparse_attention (a
 * window on either side and the first token global). */
static double time_attention(float *q, float *k, float *v, float *out,
                             int64_t n, int64_t heads, int64_t dim, int causal,
                             int64_t window, int longformer, int runs) {
  tfm_memref3d_f32 mq = rows(q, n, heads, dim), mk = rows(k, n, heads, dim),
                   mv = rows(v, n, heads, dim), mo = rows(out, n, heads, dim);
  int32_t none = 0;
  tfm_memref1d_i32 no_mask = {&none, &none, 0, {0}, {1}};
  tfm_memref1d_f32 no_sinks = {NULL, NULL, 0, {0}, {1}};
  double best = INFINITY;
  for (int r = 0; r < runs; ++r) {
    double start = now();
    if (longformer)
      _mlir_ciface_tfm_rt_sparse_attention(&mq, &mk, &mv, &mq, &mk, &mv,
                                           &no_mask, &mo, 0.125f, window, 1);
    else
      _mlir_ciface_tfm_rt_attention(&mq, &mk, &mv, &no_sinks, &mo, 0.125f,
                                    causal, window, 0.0f);
    double took = (now() - start) * 1e3;
    if (took < best)
      best = took;
  }
  return best;
}

int main(int argc, char **argv) {
  const int64_t heads = 12, dim = 64, window = 512;
  int64_t longest = argc > 1 ? atoll(argv[1]) : 16384;
  printf("%7s %11s %11s %8s %11s %11s %8s %9s %9s\n", "tokens", "causal ms",
         "window ms", "ratio", "bidir ms", "longf. ms", "ratio", "win us/t",
         "longf us/t");
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
    double causal = time_attention(q, k, v, out, n, heads, dim, 1, 0, 0, runs);
    double windowed =
        time_attention(q, k, v, out, n, heads, dim, 1, window, 0, runs);
    double full = time_attention(q, k, v, out, n, heads, dim, 0, 0, 0, runs);
    double longformer =
        time_attention(q, k, v, out, n, heads, dim, 0, window / 2, 1, runs);
    printf("%7lld %11.1f %11.1f %8.1f %11.1f %11.1f %8.1f %9.2f %9.2f\n",
           (long long)n, causal, windowed, causal / windowed, full, longformer,
           full / longformer, windowed * 1e3 / n, longformer * 1e3 / n);
    fflush(stdout);
    free(q);
    free(k);
    free(v);
    free(out);
  }
  return 0;
}
