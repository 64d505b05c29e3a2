/*===- kernels_gemm.c - x·Wᵀ for generated code, through OpenBLAS -------===//
 *
 * Called by code that tfm-lower-matmul-to-runtime rewrote: C[m, n] +=
 * A[m, k] · B[n, k] with B a weight in the checkpoint's [out, in] layout.
 * The output features (rows of B) are split over the runtime's threads and
 * each chunk calls single-threaded OpenBLAS: sgemm for prefill, sgemv for
 * the single row of a decode step (memory-bound: each thread streams its
 * own rows of the weight once). A few rows (a decode step of several
 * beams or sequences) go to few_rows_range instead: sgemm would repack
 * the weight on every call, which then costs more than the product.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/thread_pool.h"
#include "runtime/kernels/simd.h"
#include "runtime/kernels/vector_width.h"
#include "tfm/runtime_kernels.h"

#include <cblas.h>

typedef struct {
  int64_t m, k;
  const float *a, *b;
  float *c;
  int64_t lda, ldb, ldc;
} gemm_job;

/* Output features per chunk: several chunks per thread so that a slower
 * core takes fewer, each a multiple of 64 (cache lines of C, whole
 * OpenBLAS kernel widths) and not so small that call overhead shows. */
static int64_t chunk_size(int64_t n, int64_t m) {
  int64_t minimum = m == 1 ? 256 : 64;
  int64_t chunk = n / (4 * tfm_thread_count()) / 64 * 64;
  return chunk > minimum ? chunk : minimum;
}

/* Rows of A up to which few_rows_range beats OpenBLAS's sgemm, and how
 * many of them one pass over a weight row takes. */
enum { kFewRows = 8, kTileRows = 4 };

/* C[r, 0] += A[r, :] · w for r < rows (at most 4, a constant at every call,
 * so that the accumulators stay in registers): one weight row, read once,
 * two vectors a step for every row of A. One weight row at a time
 * streams the weight faster than tiles of several rows and outputs
 * (measured through tfm_rt_matmul_nt on a 58112 x 512 weight, 4 rows:
 * 49-55 GB/s against 32-38 for 4 x 4 tiles). Defined for 16-float vectors
 * (AVX-512) and 8-float ones (AVX2, where GCC keeps 16-float vectors in
 * memory: vector_width.h). */
#define TFM_DEFINE_DOT_ROWS(NAME, VF, LANES, LOAD, HSUM)                       \
  TFM_INLINE void NAME(int rows, int64_t k, const float *a, int64_t lda,       \
                       const float *w, float *c, int64_t ldc) {                \
    VF acc[kTileRows][2] = {{{0}}};                                            \
    int64_t p = 0;                                                             \
    for (; p + 2 * LANES <= k; p += 2 * LANES) {                               \
      VF w0 = LOAD(w + p), w1 = LOAD(w + p + LANES);                           \
      _Pragma("GCC unroll 4") for (int r = 0; r < rows; ++r) {                 \
        acc[r][0] += LOAD(a + r * lda + p) * w0;                               \
        acc[r][1] += LOAD(a + r * lda + p + LANES) * w1;                       \
      }                                                                        \
    }                                                                          \
    for (; p + LANES <= k; p += LANES) {                                       \
      VF w0 = LOAD(w + p);                                                     \
      _Pragma("GCC unroll 4") for (int r = 0; r < rows; ++r)                   \
          acc[r][0] += LOAD(a + r * lda + p) * w0;                             \
    }                                                                          \
    for (int r = 0; r < rows; ++r) {                                           \
      float sum = HSUM(acc[r][0] + acc[r][1]);                                 \
      for (int64_t t = p; t < k; ++t)                                          \
        sum += a[r * lda + t] * w[t];                                          \
      c[r * ldc] += sum;                                                       \
    }                                                                          \
  }
TFM_DEFINE_DOT_ROWS(dot_rows, v16, 16, load16, hsum)
TFM_DEFINE_DOT_ROWS(dot_rows8, v8, 8, load8, hsum8)
#undef TFM_DEFINE_DOT_ROWS

/* Output features [begin, end) of C += A · Wᵀ for m <= kFewRows: each
 * weight row is read from memory once, for every row of A (which stays in
 * L1). */
#define TFM_DEFINE_FEW_ROWS_RANGE(NAME, DOT_ROWS)                              \
  TFM_CLONED                                                                   \
  static void NAME(const gemm_job *job, int64_t begin, int64_t end) {          \
    for (int64_t j = begin; j < end; ++j) {                                    \
      const float *w = job->b + j * job->ldb;                                  \
      for (int64_t i = 0; i < job->m; i += kTileRows) {                        \
        const float *a = job->a + i * job->lda;                                \
        float *c = job->c + i * job->ldc + j;                                  \
        switch (job->m - i < kTileRows ? job->m - i : kTileRows) {             \
        case 4: DOT_ROWS(4, job->k, a, job->lda, w, c, job->ldc); break;       \
        case 3: DOT_ROWS(3, job->k, a, job->lda, w, c, job->ldc); break;       \
        case 2: DOT_ROWS(2, job->k, a, job->lda, w, c, job->ldc); break;       \
        default: DOT_ROWS(1, job->k, a, job->lda, w, c, job->ldc); break;      \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }
TFM_DEFINE_FEW_ROWS_RANGE(few_rows_range, dot_rows)
TFM_DEFINE_FEW_ROWS_RANGE(few_rows_range8, dot_rows8)
#undef TFM_DEFINE_FEW_ROWS_RANGE

static void gemm_chunk(void *context, int64_t begin, int64_t end, int thread) {
  (void)thread;
  const gemm_job *job = context;
  if (job->m > 1 && job->m <= kFewRows) {
    if (tfm_kernels_narrow())
      few_rows_range8(job, begin, end);
    else
      few_rows_range(job, begin, end);
    return;
  }
  blasint n = (blasint)(end - begin);
  const float *b = job->b + begin * job->ldb;
  if (job->m == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, (blasint)job->k, 1.0f, b,
                (blasint)job->ldb, job->a, 1, 1.0f, job->c + begin, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)job->m, n,
              (blasint)job->k, 1.0f, job->a, (blasint)job->lda, b,
              (blasint)job->ldb, 1.0f, job->c + begin, (blasint)job->ldc);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_matmul_nt(tfm_memref2d_f32 *a, tfm_memref2d_f32 *b,
                                   tfm_memref2d_f32 *c) {
  int64_t m = a->sizes[0], k = a->sizes[1], n = b->sizes[0];
  const float *pa = a->aligned + a->offset;
  const float *pb = b->aligned + b->offset;
  float *pc = c->aligned + c->offset;
  if (m == 0 || n == 0)
    return;
  int unit = a->strides[1] == 1 && b->strides[1] == 1 && c->strides[1] == 1;
  if (!unit) {
    /* Not a layout BLAS takes: plain loops (not produced by tfm today). */
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += pa[i * a->strides[0] + p * a->strides[1]] *
                 pb[j * b->strides[0] + p * b->strides[1]];
        pc[i * c->strides[0] + j * c->strides[1]] += sum;
      }
    return;
  }
  gemm_job job = {m, k, pa, pb, pc, a->strides[0], b->strides[0], c->strides[0]};
  tfm_parallel_for(n, chunk_size(n, m), gemm_chunk, &job);
}
