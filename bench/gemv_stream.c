/* bench/gemv_stream.c: decode's weight stream in isolation. One row times
 * every weight of a GPT-2-small-shaped model in turn (12 layers of QKV,
 * attention output, MLP up and down, then the 50257-row LM head), each
 * matrix its own memory so that nothing is reused from cache, as in a
 * decode step. Prints GB/s of weight read by each engine of the runtime:
 * the panel kernel (packed weights) and the row-major path (a tied LM
 * head, or --no-pack-weights). Compare with bench/hwlimits' read bandwidth.
 *
 *   cc -O2 -I. bench/gemv_stream.c build/lib/libtfmrt.a -lopenblas -lutf8proc -lm \
 *      -lpthread -o /tmp/gemv_stream && /tmp/gemv_stream
 */
#include "runtime/tfm_model_abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void _mlir_ciface_tfm_rt_matmul_nt(tfm_memref2d_f32 *, tfm_memref2d_f32 *,
                                   tfm_memref2d_f32 *);
void _mlir_ciface_tfm_rt_linear_panels(tfm_memref2d_f32 *, tfm_memref3d_f32 *,
                                       tfm_memref2d_f32 *);

enum { kLayers = 12, kPanel = 32, kRepeats = 20 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
  int64_t n, k;
  float *data; /* panels or [n, k] rows, 2 MiB aligned */
} weight;

static float *filled(size_t count) {
  size_t bytes = (count * sizeof(float) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  float *p = aligned_alloc(2u << 20, bytes);
  for (size_t i = 0; i < count; ++i)
    p[i] = (float)(i % 97) * 0.01f - 0.5f;
  return p;
}

static void gemv(const weight *w, int panels, float *x, float *y) {
  tfm_memref2d_f32 a = {x, x, 0, {1, w->k}, {w->k, 1}};
  tfm_memref2d_f32 c = {y, y, 0, {1, w->n}, {w->n, 1}};
  if (panels) {
    int64_t count = (w->n + kPanel - 1) / kPanel;
    tfm_memref3d_f32 p = {w->data, w->data, 0, {count, w->k, kPanel},
                          {w->k * kPanel, kPanel, 1}};
    _mlir_ciface_tfm_rt_linear_panels(&a, &p, &c);
  } else {
    tfm_memref2d_f32 b = {w->data, w->data, 0, {w->n, w->k}, {w->k, 1}};
    memset(y, 0, (size_t)w->n * sizeof(float)); /* matmul_nt accumulates */
    _mlir_ciface_tfm_rt_matmul_nt(&a, &b, &c);
  }
}

/* GB/s of weight read over `count` matrices, best of kRepeats passes. */
static double stream(const weight *w, int count, int panels, float *x, float *y) {
  double best = 1e30, bytes = 0;
  for (int i = 0; i < count; ++i)
    bytes += (double)w[i].n * w[i].k * sizeof(float);
  for (int r = 0; r < kRepeats; ++r) {
    double t0 = now();
    for (int i = 0; i < count; ++i)
      gemv(&w[i], panels, x, y);
    double t = now() - t0;
    best = t < best ? t : best;
  }
  return bytes / best / 1e9;
}

int main(void) {
  static const int64_t layer[][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
  weight w[kLayers * 4 + 1];
  int count = 0;
  for (int l = 0; l < kLayers; ++l)
    for (int s = 0; s < 4; ++s, ++count) {
      w[count].n = layer[s][0];
      w[count].k = layer[s][1];
      w[count].data = filled((size_t)((w[count].n + kPanel - 1) / kPanel * kPanel) * w[count].k);
    }
  weight head = {50257, 768, filled((size_t)50257 * 768)};
  float *x = filled(3072), *y = filled(50257 + kPanel);
  printf("layers' weights, panels:      %6.1f GB/s\n", stream(w, count, 1, x, y));
  printf("layers' weights, row-major:   %6.1f GB/s\n", stream(w, count, 0, x, y));
  printf("LM head 50257x768, row-major: %6.1f GB/s\n", stream(&head, 1, 0, x, y));
  return 0;
}
