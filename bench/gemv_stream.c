/* bench/gemv_stream.c: decode's weight stream in isolation. One row times
 * every weight of a GPT-2-small-shaped model in turn (12 layers of QKV,
 * attention output, MLP up and down, then the 50257-row LM head), each
 * matrix its own memory so that nothing is reused from cache, as in a
 * decode step. Prints GB/s of weight read by each engine of the runtime:
 * the panel kernel (packed f32 and bf16 weights), the block kernels (int8
 * and int4 blocks) and the row-major path (a tied LM head, or
 * --no-pack-weights). Compare with bench/hwlimits' read bandwidth. With
 * `tinyllama`, TinyLlama-1.1B's shapes instead of GPT-2 small's: a CPU
 * with a large last-level cache (260 MB on an Intel Xeon seen here) holds
 * GPT-2 small's int8 or int4 weights whole, so only the larger shape
 * measures their stream from memory.
 *
 *   cc -O2 -I. bench/gemv_stream.c build/lib/libtfmrt.a -lopenblas -lutf8proc -lm \
 *      -lpthread -o /tmp/gemv_stream && /tmp/gemv_stream [gpt2|tinyllama]
 */
#include "tfm/runtime_kernels.h"
#include "tfm/weight_formats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void _mlir_ciface_tfm_rt_matmul_nt(tfm_memref2d_f32 *, tfm_memref2d_f32 *,
                                   tfm_memref2d_f32 *);
void _mlir_ciface_tfm_rt_linear_panels(tfm_memref2d_f32 *, tfm_memref3d_f32 *,
                                       tfm_memref2d_f32 *);

enum { kPanel = 32, kRepeats = 20 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
  int64_t n, k;
  float *data; /* panels or [n, k] rows, 2 MiB aligned */
} weight;

/* How the layers' weights are stored: as f32 rows or panels, bf16 panels,
 * or blocks of tfm_weight_format f (kBlocks + f: the same memory,
 * reinterpreted: the values do not matter). */
enum { kRows, kPanels, kBF16Panels, kBlocks };

static int is_blocks(int format) { return format >= kBlocks; }

static double stored_bytes(const weight *w, int format) {
  if (is_blocks(format))
    return (double)tfm_block_matrix_bytes(format - kBlocks, w->n, w->k);
  return (double)w->n * w->k * (format == kBF16Panels ? 2 : 4);
}

static float *filled(size_t count) {
  size_t bytes = (count * sizeof(float) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  float *p = aligned_alloc(2u << 20, bytes);
  for (size_t i = 0; i < count; ++i)
    p[i] = (float)(i % 97) * 0.01f - 0.5f;
  return p;
}

static void gemv(const weight *w, int format, float *x, float *y) {
  tfm_memref2d_f32 a = {x, x, 0, {1, w->k}, {w->k, 1}};
  tfm_memref2d_f32 c = {y, y, 0, {1, w->n}, {w->n, 1}};
  if (is_blocks(format)) {
    int8_t *bytes = (int8_t *)w->data;
    tfm_memref1d_i8 b = {bytes, bytes, 0, {(int64_t)stored_bytes(w, format)}, {1}};
    _mlir_ciface_tfm_rt_linear_blocks(&a, &b, &c, format - kBlocks);
  } else if (format == kBF16Panels) {
    int64_t count = (w->n + kPanel - 1) / kPanel;
    uint16_t *half = (uint16_t *)w->data;
    tfm_memref3d_u16 p = {half, half, 0, {count, w->k, kPanel},
                          {w->k * kPanel, kPanel, 1}};
    _mlir_ciface_tfm_rt_linear_panels_bf16(&a, &p, &c);
  } else if (format == kPanels) {
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
static double stream(const weight *w, int count, int format, float *x, float *y) {
  double best = 1e30, bytes = 0;
  for (int i = 0; i < count; ++i)
    bytes += stored_bytes(&w[i], format);
  for (int r = 0; r < kRepeats; ++r) {
    double t0 = now();
    for (int i = 0; i < count; ++i)
      gemv(&w[i], format, x, y);
    double t = now() - t0;
    best = t < best ? t : best;
  }
  return bytes / best / 1e9;
}

/* The layers' shapes [n, k]: QKV, attention output, MLP up (gate and up
 * fused where the model has both) and down. */
typedef struct {
  const char *name;
  int layers;
  int64_t shapes[4][2];
  int64_t vocab, width;
} model_shape;

static const model_shape kShapes[] = {
    {"gpt2", 12, {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}}, 50257, 768},
    /* TinyLlama-1.1B: 32 query heads and 4 KV heads of 64, SwiGLU 5632:
     * ten times GPT-2 small's weights, past any last-level cache. */
    {"tinyllama", 22, {{2560, 2048}, {2048, 2048}, {11264, 2048}, {2048, 5632}},
     32000, 2048},
};

int main(int argc, char **argv) {
  const model_shape *shape = &kShapes[0];
  for (size_t i = 0; argc > 1 && i < sizeof kShapes / sizeof kShapes[0]; ++i)
    if (!strcmp(argv[1], kShapes[i].name))
      shape = &kShapes[i];
  if (argc > 2 || (argc > 1 && strcmp(argv[1], shape->name))) {
    fprintf(stderr, "usage: gemv_stream [gpt2|tinyllama]\n");
    return 2;
  }
  int count = 0;
  weight *w = calloc((size_t)shape->layers * 4, sizeof *w);
  for (int l = 0; l < shape->layers; ++l)
    for (int s = 0; s < 4; ++s, ++count) {
      w[count].n = shape->shapes[s][0];
      w[count].k = shape->shapes[s][1];
      w[count].data = filled((size_t)((w[count].n + kPanel - 1) / kPanel * kPanel) * w[count].k);
    }
  weight head = {shape->vocab, shape->width,
                 filled((size_t)shape->vocab * shape->width)};
  float *x = filled(16384), *y = filled(16384 + kPanel);
  printf("%s shape\n", shape->name);
  printf("layers' weights, panels:      %6.1f GB/s\n", stream(w, count, kPanels, x, y));
  printf("layers' weights, bf16 panels: %6.1f GB/s\n", stream(w, count, kBF16Panels, x, y));
  /* The K-quants' rows are whole super-blocks of 256: both shapes' are. */
  static const struct {
    const char *name;
    int format;
  } kBlockFormats[] = {
      {"int8 (q8_0)", TFM_FORMAT_Q8_0}, {"int4 (q4_0)", TFM_FORMAT_Q4_0},
      {"q4_k", TFM_FORMAT_Q4_K},        {"q5_k", TFM_FORMAT_Q5_K},
      {"q6_k", TFM_FORMAT_Q6_K},        {"mxfp4", TFM_FORMAT_MXFP4}};
  for (size_t f = 0; f < sizeof kBlockFormats / sizeof kBlockFormats[0]; ++f)
    printf("layers' weights, %-12s  %6.1f GB/s\n", kBlockFormats[f].name,
           stream(w, count, kBlocks + kBlockFormats[f].format, x, y));
  printf("layers' weights, row-major:   %6.1f GB/s\n", stream(w, count, kRows, x, y));
  printf("LM head %lldx%lld, row-major: %6.1f GB/s\n", (long long)shape->vocab,
         (long long)shape->width, stream(&head, 1, kRows, x, y));
  return 0;
}
