//===- KernelTest.cpp - the kernels generated code calls ---------------===//
//
// tfm_rt_attention and tfm_rt_matmul_nt against plain double-precision
// loops, over the shapes that exercise their paths: several query blocks
// and key tiles, the causal diagonal inside a tile, sliding windows,
// grouped-query heads, head sizes that are not a multiple of the vector
// width, strided views (a fused QKV projection's slices), single-query
// decode, and work split over threads.
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/buffer_cache.h"
#include "runtime/tfm_model_abi.h"
void _mlir_ciface_tfm_rt_attention(tfm_memref3d_f32 *q, tfm_memref3d_f32 *k,
                                   tfm_memref3d_f32 *v, tfm_memref3d_f32 *out,
                                   float scale, int64_t causal, int64_t window);
void _mlir_ciface_tfm_rt_matmul_nt(tfm_memref2d_f32 *a, tfm_memref2d_f32 *b,
                                   tfm_memref2d_f32 *c);
}

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

/// A [rows, heads, dim] view into `storage` whose rows are `rowStride`
/// floats apart (>= heads * dim: a slice of something wider).
tfm_memref3d_f32 view3d(std::vector<float> &storage, int64_t rows,
                        int64_t heads, int64_t dim, int64_t rowStride,
                        int64_t offset = 0) {
  return {storage.data(), storage.data(), offset, {rows, heads, dim},
          {rowStride, dim, 1}};
}

std::vector<float> randomValues(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> values(n);
  for (float &x : values)
    x = dist(rng);
  return values;
}

struct AttentionCase {
  int64_t s, t, heads, kvHeads, d, dv, window;
  bool causal;
};

/// Runs the kernel on one case and compares with the reference.
void checkAttention(const AttentionCase &c) {
  SCOPED_TRACE(testing::Message()
               << "s=" << c.s << " t=" << c.t << " heads=" << c.heads << "/"
               << c.kvHeads << " d=" << c.d << " dv=" << c.dv
               << " causal=" << c.causal << " window=" << c.window);
  // q sits in a wider buffer (offset 3, 5 spare floats per row).
  int64_t qRow = c.heads * c.d + 5;
  std::vector<float> q = randomValues(3 + c.s * qRow, 1);
  std::vector<float> k = randomValues(c.t * c.kvHeads * c.d, 2);
  std::vector<float> v = randomValues(c.t * c.kvHeads * c.dv, 3);
  std::vector<float> out(c.s * c.heads * c.dv, NAN);
  tfm_memref3d_f32 qm = view3d(q, c.s, c.heads, c.d, qRow, 3);
  tfm_memref3d_f32 km = view3d(k, c.t, c.kvHeads, c.d, c.kvHeads * c.d);
  tfm_memref3d_f32 vm = view3d(v, c.t, c.kvHeads, c.dv, c.kvHeads * c.dv);
  tfm_memref3d_f32 om = view3d(out, c.s, c.heads, c.dv, c.heads * c.dv);
  float scale = 1.0f / std::sqrt(float(c.d));
  _mlir_ciface_tfm_rt_attention(&qm, &km, &vm, &om, scale, c.causal,
                                c.window);

  int64_t group = c.heads / c.kvHeads;
  double worst = 0;
  for (int64_t i = 0; i < c.s; ++i)
    for (int64_t h = 0; h < c.heads; ++h) {
      int64_t kh = h / group, position = i + c.t - c.s;
      std::vector<double> p(c.t, 0.0);
      double maximum = -INFINITY, total = 0;
      for (int64_t j = 0; j < c.t; ++j) {
        bool visible = !c.causal || (j <= position &&
                                     (!c.window || j > position - c.window));
        if (!visible) {
          p[j] = -INFINITY;
          continue;
        }
        double dot = 0;
        for (int64_t e = 0; e < c.d; ++e)
          dot += double(q[3 + i * qRow + h * c.d + e]) *
                 k[(j * c.kvHeads + kh) * c.d + e];
        p[j] = dot * scale;
        maximum = std::max(maximum, p[j]);
      }
      for (double &x : p)
        total += x = std::isinf(x) ? 0.0 : std::exp(x - maximum);
      for (int64_t e = 0; e < c.dv; ++e) {
        double expected = 0;
        for (int64_t j = 0; j < c.t; ++j)
          expected += p[j] / total * v[(j * c.kvHeads + kh) * c.dv + e];
        double got = out[(i * c.heads + h) * c.dv + e];
        worst = std::max(worst, std::fabs(got - expected));
      }
    }
  EXPECT_LT(worst, 2e-5);
}

TEST(AttentionKernel, CausalPrefillOverSeveralBlocksAndTiles) {
  checkAttention({150, 150, 4, 4, 64, 64, 0, true});
  checkAttention({70, 200, 2, 2, 32, 32, 0, true}); // after a cached prefix
}

TEST(AttentionKernel, GroupedQueryOddHeadSizes) {
  checkAttention({45, 45, 6, 2, 20, 20, 0, true});
  checkAttention({33, 90, 3, 1, 8, 24, 0, true});
}

TEST(AttentionKernel, SlidingWindow) {
  checkAttention({130, 130, 2, 1, 16, 16, 17, true});
  checkAttention({1, 300, 2, 2, 16, 16, 100, true});
}

TEST(AttentionKernel, BidirectionalCrossAttention) {
  checkAttention({5, 70, 4, 2, 16, 16, 0, false});
  checkAttention({97, 97, 2, 2, 48, 48, 0, false});
}

TEST(AttentionKernel, SingleQueryDecode) {
  for (int64_t t : {1, 2, 17, 64, 65, 300, 5000})
    checkAttention({1, t, 12, 4, 64, 64, 0, true});
  checkAttention({1, 33, 4, 4, 10, 10, 0, true});
}

TEST(MatmulKernel, RowsTimesTransposedWeightAccumulates) {
  for (int64_t m : {1, 3, 70})
    for (int64_t n : {1, 63, 200}) {
      SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n);
      int64_t k = 37;
      std::vector<float> a = randomValues(m * k, 4), b = randomValues(n * k, 5);
      std::vector<float> c = randomValues(m * n, 6), before = c;
      tfm_memref2d_f32 am = {a.data(), a.data(), 0, {m, k}, {k, 1}};
      tfm_memref2d_f32 bm = {b.data(), b.data(), 0, {n, k}, {k, 1}};
      tfm_memref2d_f32 cm = {c.data(), c.data(), 0, {m, n}, {n, 1}};
      _mlir_ciface_tfm_rt_matmul_nt(&am, &bm, &cm);
      double worst = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double expected = before[i * n + j];
          for (int64_t p = 0; p < k; ++p)
            expected += double(a[i * k + p]) * b[j * k + p];
          worst = std::max(worst, std::fabs(expected - c[i * n + j]));
        }
      EXPECT_LT(worst, 1e-4);
    }
}

TEST(BufferCache, ReusesFreedBlocksOfTheSameSizeAligned) {
  size_t before = tfm_buffer_cache_bytes();
  void *a = _mlir_memref_to_llvm_alloc(1000);
  void *b = _mlir_memref_to_llvm_aligned_alloc(256, 3000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 256, 0u);
  std::memset(a, 1, 1000);
  std::memset(b, 2, 3000);
  _mlir_memref_to_llvm_free(a);
  _mlir_memref_to_llvm_free(b);
  EXPECT_GT(tfm_buffer_cache_bytes(), before + 4000);
  // The same sizes come back from the cache; another size does not.
  void *c = _mlir_memref_to_llvm_aligned_alloc(256, 3000);
  void *d = _mlir_memref_to_llvm_alloc(1000);
  void *e = _mlir_memref_to_llvm_alloc(1001);
  EXPECT_EQ(c, b);
  EXPECT_EQ(d, a);
  EXPECT_NE(e, a);
  _mlir_memref_to_llvm_free(c);
  _mlir_memref_to_llvm_free(d);
  tfm_buffer_release(e);
  _mlir_memref_to_llvm_free(nullptr);
}

} // namespace
