/*===- kernels_panel_gemm.c - x·Wᵀ over weights packed in panels --------===//
 *
 * Called where tfm-lower-to-linalg found a weight packed at compile time:
 * C[m, n] = A[m, k] · W[n, k] (+ bias[n]), with W stored as panels of 32
 * output features, panels[p][k][j] = W[32p + j][k] (linalg.pack with inner
 * tile 32 on dim 0; the last panel zero-padded).
 *
 * Why panels: a GEMM kernel wants, for each k, a contiguous run of output
 * features to multiply by one broadcast input. OpenBLAS repacks the
 * [out, in] weight into that shape on every call, which in profiles cost
 * as much as the multiplication itself; packed once by the compiler, the
 * weight is read as is. Decode (one row) streams each panel front to back,
 * which is what the memory system does fastest.
 *
 * The micro-kernel keeps an 8 × 32 tile of C in 16 vector registers and
 * adds one rank-1 update per k: two panel vectors, eight broadcast inputs,
 * sixteen FMAs. Depth is blocked so that a panel's slice stays in L1 while
 * every row block of A passes over it. Panels are split over the runtime's
 * threads.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/simd.h"
#include "runtime/thread_pool.h"
#include "runtime/runtime_kernels.h"

enum {
  kPanel = TFM_PANEL_WIDTH, /* output features per panel: two vectors */
  kRowBlock = 8,     /* rows of A per micro-kernel call */
  kDepthBlock = 256, /* k per pass: a 32 KiB panel slice, in L1 */
  kRowPanel = 128,   /* rows per pass over the panels: 128 KiB of A's depth
                        block, in L2 */
};

typedef struct {
  int64_t m, n, k;
  const float *a, *panels, *bias; /* bias: NULL for none */
  float *c;
  int64_t lda, ldc;
} panel_job;

/* C[rows, 32] = start + A[rows, depth] · panel[depth, 32], rows <= 8,
 * where `start` is the bias (or zeros) on the first depth block, and NULL
 * on later ones, which add to C. `rows` is a constant at every call, so the
 * tile lives in registers. */
TFM_INLINE void panel_tile(int rows, int64_t depth, const float *a,
                           int64_t lda, const float *panel, float *c,
                           int64_t ldc, const float *start) {
  v16 acc[kRowBlock][2];
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    acc[r][0] = start ? load16(start) : load16(c + r * ldc);
    acc[r][1] = start ? load16(start + 16) : load16(c + r * ldc + 16);
  }
  for (int64_t k = 0; k < depth; ++k) {
    v16 b0 = load16(panel + k * kPanel), b1 = load16(panel + k * kPanel + 16);
#pragma GCC unroll 8
    for (int r = 0; r < rows; ++r) {
      float x = a[r * lda + k];
      acc[r][0] += x * b0;
      acc[r][1] += x * b1;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < rows; ++r) {
    store16(c + r * ldc, acc[r][0]);
    store16(c + r * ldc + 16, acc[r][1]);
  }
}

/* One row: y[32] = start + x[depth] · panel, with four independent
 * accumulator pairs so that FMA latency never stalls the stream. */
TFM_INLINE void panel_row(int64_t depth, const float *x, const float *panel,
                          float *y, const float *start) {
  v16 acc[4][2] = {{load16(start), load16(start + 16)},
                   {splat(0), splat(0)},
                   {splat(0), splat(0)},
                   {splat(0), splat(0)}};
  int64_t k = 0;
  for (; k + 4 <= depth; k += 4)
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      const float *b = panel + (k + u) * kPanel;
      acc[u][0] += x[k + u] * load16(b);
      acc[u][1] += x[k + u] * load16(b + 16);
    }
  for (; k < depth; ++k) {
    acc[0][0] += x[k] * load16(panel + k * kPanel);
    acc[0][1] += x[k] * load16(panel + k * kPanel + 16);
  }
  store16(y, (acc[0][0] + acc[1][0]) + (acc[2][0] + acc[3][0]));
  store16(y + 16, (acc[0][1] + acc[1][1]) + (acc[2][1] + acc[3][1]));
}

/* The start of a panel's outputs: its 32 bias values, or zeros. A last,
 * partial panel's bias is copied so that no read passes its end. */
TFM_INLINE const float *panel_start(const panel_job *job, int64_t p,
                                    float *scratch) {
  int64_t cols = job->n - p * kPanel < kPanel ? job->n - p * kPanel : kPanel;
  if (job->bias && cols == kPanel)
    return job->bias + p * kPanel;
  for (int64_t j = 0; j < kPanel; ++j)
    scratch[j] = job->bias && j < cols ? job->bias[p * kPanel + j] : 0;
  return scratch;
}

/* Rows [i, i + rows) of one panel over depth [k0, k0 + depth): the switch
 * gives each row count its own register-resident tile. */
TFM_INLINE void panel_rows(const panel_job *job, int64_t i, int64_t rows,
                           const float *panel, int64_t k0, int64_t depth,
                           float *c, int64_t ldc, const float *start) {
  const float *a = job->a + i * job->lda + k0;
  int64_t lda = job->lda;
  switch (rows) {
  case 8: panel_tile(8, depth, a, lda, panel, c, ldc, start); break;
  case 7: panel_tile(7, depth, a, lda, panel, c, ldc, start); break;
  case 6: panel_tile(6, depth, a, lda, panel, c, ldc, start); break;
  case 5: panel_tile(5, depth, a, lda, panel, c, ldc, start); break;
  case 4: panel_tile(4, depth, a, lda, panel, c, ldc, start); break;
  case 3: panel_tile(3, depth, a, lda, panel, c, ldc, start); break;
  case 2: panel_tile(2, depth, a, lda, panel, c, ldc, start); break;
  default: panel_tile(1, depth, a, lda, panel, c, ldc, start); break;
  }
}

TFM_CLONED
static void panel_gemm_range(const panel_job *job, int64_t p0, int64_t p1) {
  int64_t k = job->k, m = job->m;
  float start_scratch[kPanel], tile[kRowBlock * kPanel];
  /* Rows a pass at a time (measured: 5-15% off a 512-row prefill), so
   * that the rows' depth block stays in L2 while the thread's panels pass
   * over it. */
  for (int64_t i0 = 0; i0 < m; i0 += kRowPanel) {
    int64_t i1 = m - i0 < kRowPanel ? m : i0 + kRowPanel;
    for (int64_t p = p0; p < p1; ++p) {
      const float *panel = job->panels + p * k * kPanel;
      const float *start = panel_start(job, p, start_scratch);
      int64_t cols =
          job->n - p * kPanel < kPanel ? job->n - p * kPanel : kPanel;
      float *c = job->c + p * kPanel;
      if (m == 1 && cols == kPanel) {
        panel_row(k, job->a, panel, c, start);
        continue;
      }
      if (cols < kPanel) {
        /* The zero-padded last panel: whole depth into a 32-wide tile,
         * then the valid columns out. */
        for (int64_t i = i0; i < i1; i += kRowBlock) {
          int64_t rows = i1 - i < kRowBlock ? i1 - i : kRowBlock;
          panel_rows(job, i, rows, panel, 0, k, tile, kPanel, start);
          for (int64_t r = 0; r < rows; ++r)
            memcpy(c + (i + r) * job->ldc, tile + r * kPanel,
                   (size_t)cols * sizeof(float));
        }
        continue;
      }
      /* Depth blocks: a panel slice stays in L1 while the rows pass. */
      for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
        int64_t depth = k - k0 < kDepthBlock ? k - k0 : kDepthBlock;
        for (int64_t i = i0; i < i1; i += kRowBlock)
          panel_rows(job, i, i1 - i < kRowBlock ? i1 - i : kRowBlock,
                     panel + k0 * kPanel, k0, depth, c + i * job->ldc,
                     job->ldc, k0 == 0 ? start : NULL);
      }
    }
  }
}

static void panel_gemm_chunk(void *context, int64_t begin, int64_t end,
                             int thread) {
  (void)thread;
  panel_gemm_range(context, begin, end);
}

/* Panels per chunk: about four chunks per thread so that a slower core
 * takes fewer; for one row, at least 64 KiB of weight per chunk. */
static int64_t panels_per_chunk(int64_t panels, int64_t m, int64_t k) {
  int64_t chunk = panels / (4 * tfm_thread_count());
  int64_t minimum = m == 1 ? (16384 + k * kPanel - 1) / (k * kPanel) : 1;
  return chunk > minimum ? chunk : minimum;
}

static void linear_panels(tfm_memref2d_f32 *a, tfm_memref3d_f32 *panels,
                          tfm_memref1d_f32 *bias, tfm_memref2d_f32 *c) {
  int64_t m = a->sizes[0], k = a->sizes[1], n = c->sizes[1];
  int64_t count = panels->sizes[0];
  const float *pa = a->aligned + a->offset;
  const float *pb = bias ? bias->aligned + bias->offset : NULL;
  float *pc = c->aligned + c->offset;
  if (m == 0 || n == 0)
    return;
  int contiguous = panels->strides[2] == 1 && panels->strides[1] == kPanel &&
                   panels->strides[0] == k * kPanel &&
                   panels->sizes[2] == kPanel && panels->sizes[1] == k;
  if (!contiguous || a->strides[1] != 1 || c->strides[1] != 1 ||
      (bias && bias->strides[0] != 1) || n > count * kPanel) {
    /* Not a layout tfm produces: plain loops over the logical weight. */
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n && j < count * kPanel; ++j) {
        float sum = bias ? bias->aligned[bias->offset + j * bias->strides[0]]
                         : 0;
        for (int64_t p = 0; p < k; ++p)
          sum += pa[i * a->strides[0] + p * a->strides[1]] *
                 panels->aligned[panels->offset +
                                 (j / kPanel) * panels->strides[0] +
                                 p * panels->strides[1] +
                                 (j % kPanel) * panels->strides[2]];
        pc[i * c->strides[0] + j * c->strides[1]] = sum;
      }
    return;
  }
  panel_job job = {m,  n,  k, pa, panels->aligned + panels->offset,
                   pb, pc, a->strides[0], c->strides[0]};
  int64_t used = (n + kPanel - 1) / kPanel;
  tfm_parallel_for(used, panels_per_chunk(used, m, k), panel_gemm_chunk, &job);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels(tfm_memref2d_f32 *a,
                                       tfm_memref3d_f32 *panels,
                                       tfm_memref2d_f32 *c) {
  linear_panels(a, panels, NULL, c);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_bias(tfm_memref2d_f32 *a,
                                            tfm_memref3d_f32 *panels,
                                            tfm_memref1d_f32 *bias,
                                            tfm_memref2d_f32 *c) {
  linear_panels(a, panels, bias, c);
}
