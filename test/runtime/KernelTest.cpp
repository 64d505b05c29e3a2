//===- KernelTest.cpp - the kernels generated code calls ---------------===//
//
// tfm_rt_attention[_packed|_biased][_rows_i8|_rows_bf16|_rows_f16] and
// [_packed]_bf16_dot,
// tfm_widen_rows, tfm_rt_matmul_nt and
// tfm_rt_linear_panels[_bias] against plain double-precision loops, over
// the shapes that exercise their paths: several query blocks and key
// tiles, the causal diagonal inside a tile, sliding windows, grouped-query
// heads, head sizes that are not a multiple of the vector width, strided
// views (a fused QKV projection's slices), single-query decode, keys and
// values stored as int8, bf16 or f16 rows, GEMM row blocks, depth blocks and a
// zero-padded last panel, and work split over threads.
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/core/buffer_cache.h"
#include "runtime/kernels/kernels_panel_bf16_dot.h"
#include "runtime/kernels/vector_width.h"
}
#include "runtime/kernels/widen_rows.h"
#include "test/runtime/RandomValues.h"
#include "tfm/runtime_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

using tfm_test::randomValues;

struct AttentionCase {
  int64_t s, t, heads, kvHeads, d, dv, window;
  bool causal;
  /// Relative-position terms by distance (tfm_rt_attention_biased), held
  /// in rows of s + t - 1 + this many floats (a strided view).
  bool distanceBias = false;
  int64_t biasRowPadding = 0;
  /// Keys and values as a narrow cache stores them (the _rows_i8,
  /// _rows_bf16 and _rows_f16 kernels); the reference reads the values
  /// they hold.
  tfm_row_storage storedRows = TFM_ROWS_F32;
  /// Scores soft-capped to softcap · tanh(score / softcap); 0: none.
  float softcap = 0;
  /// A sink logit per head (gpt-oss) in every softmax's denominator.
  bool sinks = false;
  /// tfm_rt_attention_bf16_dot: where the wide kernel runs vdpbf16ps
  /// (tfm_bf16_dot_enabled), the scores are products of the scaled
  /// queries and the keys rounded to bf16, which the reference rounds too,
  /// and the weighted values products of probabilities and values rounded
  /// to bf16, which it does not: those within bf16's step.
  bool bf16Dot = false;
};

/// `value` rounded to bf16, to nearest even.
double bf16Rounded(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
  float rounded;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

/// No sinks: the empty [0] every attention kernel takes then.
tfm_memref1d_f32 noSinks() { return {nullptr, nullptr, 0, {0}, {1}}; }

/// `values` ([rows, n] floats) as rows of n int8 codes and the f32 scale
/// max|x| / 127 (tfm.quantize_rows' layout); `values` become what the rows
/// hold (code · scale).
std::vector<int8_t> quantizeRows(std::vector<float> &values, int64_t n) {
  int64_t rows = int64_t(values.size()) / n;
  std::vector<int8_t> bytes(rows * (n + 4));
  for (int64_t r = 0; r < rows; ++r) {
    float *x = values.data() + r * n;
    int8_t *row = bytes.data() + r * (n + 4);
    float largest = 0;
    for (int64_t c = 0; c < n; ++c)
      largest = std::max(largest, std::fabs(x[c]));
    float scale = largest / 127;
    for (int64_t c = 0; c < n; ++c) {
      row[c] = int8_t(largest > 0 ? std::nearbyint(x[c] * 127 / largest) : 0);
      x[c] = row[c] * scale;
    }
    std::memcpy(row + n, &scale, sizeof scale);
  }
  return bytes;
}

tfm_memref3d_i8 rowsView(std::vector<int8_t> &bytes, int64_t rows,
                         int64_t heads, int64_t n) {
  return {bytes.data(), bytes.data(), 0, {rows, heads, n + 4},
          {heads * (n + 4), n + 4, 1}};
}

/// `values` rounded to bf16 (to nearest, ties to even) or to f16 (the
/// compiler's conversion of _Float16); `values` become what they hold.
std::vector<uint16_t> roundTo16Bits(std::vector<float> &values,
                                    tfm_row_storage storage) {
  std::vector<uint16_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    if (storage == TFM_ROWS_BF16) {
      halves[i] = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      bits = uint32_t(halves[i]) << 16;
      std::memcpy(&values[i], &bits, sizeof bits);
    } else {
      _Float16 half = _Float16(values[i]);
      std::memcpy(&halves[i], &half, sizeof half);
      values[i] = float(half);
    }
  }
  return halves;
}

tfm_memref3d_u16 rowsView16(std::vector<uint16_t> &values, int64_t rows,
                            int64_t heads, int64_t n) {
  return {values.data(), values.data(), 0, {rows, heads, n},
          {heads * n, n, 1}};
}

/// Runs the kernel on one case and compares with the reference.
void checkAttentionAtWidth(const AttentionCase &c);

/// Both variants of the kernel: 16-float vectors (AVX-512) and 8-float
/// ones (AVX2), forced here whatever the CPU has.
void checkAttention(const AttentionCase &c) {
  int before = tfm_kernels_use_narrow(0);
  for (int narrow : {0, 1}) {
    SCOPED_TRACE(testing::Message() << "narrow=" << narrow);
    tfm_kernels_use_narrow(narrow);
    checkAttentionAtWidth(c);
  }
  tfm_kernels_use_narrow(before);
}

void checkAttentionAtWidth(const AttentionCase &c) {
  SCOPED_TRACE(testing::Message()
               << "s=" << c.s << " t=" << c.t << " heads=" << c.heads << "/"
               << c.kvHeads << " d=" << c.d << " dv=" << c.dv
               << " causal=" << c.causal << " window=" << c.window
               << " stored rows=" << c.storedRows << " softcap=" << c.softcap
               << " sinks=" << c.sinks);
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
  int64_t columns = c.s + c.t - 1, biasRow = columns + c.biasRowPadding;
  std::vector<float> bias = randomValues(c.heads * biasRow, 7);
  tfm_memref2d_f32 bm = {bias.data(), bias.data(), 0, {c.heads, columns},
                         {biasRow, 1}};
  // Sinks every other float of a buffer (a strided view), around the
  // scores' range so that they take a real share.
  std::vector<float> sinkStorage = randomValues(2 * c.heads, 11);
  tfm_memref1d_f32 sm = noSinks();
  if (c.sinks)
    sm = {sinkStorage.data(), sinkStorage.data(), 0, {c.heads}, {2}};
  if (c.storedRows == TFM_ROWS_BF16 || c.storedRows == TFM_ROWS_F16) {
    std::vector<uint16_t> kRows = roundTo16Bits(k, c.storedRows);
    std::vector<uint16_t> vRows = roundTo16Bits(v, c.storedRows);
    tfm_memref3d_u16 k16 = rowsView16(kRows, c.t, c.kvHeads, c.d);
    tfm_memref3d_u16 v16 = rowsView16(vRows, c.t, c.kvHeads, c.dv);
    bool bf16 = c.storedRows == TFM_ROWS_BF16;
    if (c.distanceBias)
      (bf16 ? _mlir_ciface_tfm_rt_attention_biased_rows_bf16
            : _mlir_ciface_tfm_rt_attention_biased_rows_f16)(
          &qm, &k16, &v16, &bm, &sm, &om, scale, c.causal, c.window, c.softcap);
    else
      (bf16 ? _mlir_ciface_tfm_rt_attention_rows_bf16
            : _mlir_ciface_tfm_rt_attention_rows_f16)(
          &qm, &k16, &v16, &sm, &om, scale, c.causal, c.window, c.softcap);
  } else if (c.storedRows == TFM_ROWS_I8) {
    std::vector<int8_t> kRows = quantizeRows(k, c.d);
    std::vector<int8_t> vRows = quantizeRows(v, c.dv);
    tfm_memref3d_i8 k8 = rowsView(kRows, c.t, c.kvHeads, c.d);
    tfm_memref3d_i8 v8 = rowsView(vRows, c.t, c.kvHeads, c.dv);
    if (c.distanceBias)
      _mlir_ciface_tfm_rt_attention_biased_rows_i8(
          &qm, &k8, &v8, &bm, &sm, &om, scale, c.causal, c.window, c.softcap);
    else
      _mlir_ciface_tfm_rt_attention_rows_i8(&qm, &k8, &v8, &sm, &om, scale,
                                            c.causal, c.window, c.softcap);
  } else if (c.distanceBias) {
    _mlir_ciface_tfm_rt_attention_biased(&qm, &km, &vm, &bm, &sm, &om, scale,
                                         c.causal, c.window, c.softcap);
  } else if (c.bf16Dot) {
    _mlir_ciface_tfm_rt_attention_bf16_dot(&qm, &km, &vm, &sm, &om, scale,
                                           c.causal, c.window, c.softcap);
  } else {
    _mlir_ciface_tfm_rt_attention(&qm, &km, &vm, &sm, &om, scale, c.causal,
                                  c.window, c.softcap);
  }
  bool rounded = c.bf16Dot && !tfm_kernels_narrow() && tfm_bf16_dot_enabled();

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
        for (int64_t e = 0; e < c.d; ++e) {
          float qe = q[3 + i * qRow + h * c.d + e];
          float ke = k[(j * c.kvHeads + kh) * c.d + e];
          dot += rounded ? bf16Rounded(qe * scale) * bf16Rounded(ke)
                         : double(qe) * ke * scale;
        }
        p[j] = dot;
        if (c.softcap > 0)
          p[j] = c.softcap * std::tanh(p[j] / c.softcap);
        if (c.distanceBias) // column t - 1 + i - j
          p[j] += bias[h * biasRow + c.t - 1 + i - j];
        maximum = std::max(maximum, p[j]);
      }
      double sink = c.sinks ? double(sinkStorage[2 * h]) : -INFINITY;
      maximum = std::max(maximum, sink);
      for (double &x : p)
        total += x = std::isinf(x) ? 0.0 : std::exp(x - maximum);
      if (c.sinks)
        total += std::exp(sink - maximum);
      for (int64_t e = 0; e < c.dv; ++e) {
        double expected = 0;
        for (int64_t j = 0; j < c.t; ++j)
          expected += p[j] / total * v[(j * c.kvHeads + kh) * c.dv + e];
        double got = out[(i * c.heads + h) * c.dv + e];
        worst = std::max(worst, std::fabs(got - expected));
      }
    }
  // bf16 probabilities and values: each within half a step (2^-9) of
  // itself, values up to 2 in magnitude; anything else is f32's rounding.
  EXPECT_LT(worst, rounded ? 2 * 2.0 * std::ldexp(1.0, -9) : 2e-5);
}

TEST(AttentionKernel, CausalPrefillOverSeveralBlocksAndTiles) {
  checkAttention({150, 150, 4, 4, 64, 64, 0, true});
  checkAttention({70, 200, 2, 2, 32, 32, 0, true}); // after a cached prefix
}

TEST(AttentionKernel, GroupedQueryOddHeadSizes) {
  checkAttention({45, 45, 6, 2, 20, 20, 0, true});
  checkAttention({33, 90, 3, 1, 8, 24, 0, true});
}

TEST(AttentionKernel, Bf16ProductsWithinTheirRounding) {
  // Causal over several blocks and tiles (an odd last tile), grouped
  // queries with an odd head size, a window, soft-capping and sinks.
  AttentionCase causal{150, 150, 4, 4, 64, 64, 0, true};
  AttentionCase grouped{45, 90, 6, 2, 21, 20, 0, false};
  AttentionCase windowed{100, 100, 2, 2, 40, 40, 17, true};
  AttentionCase capped{33, 33, 2, 1, 32, 32, 0, true};
  capped.softcap = 5.0f;
  capped.sinks = true;
  for (AttentionCase c : {causal, grouped, windowed, capped}) {
    c.bf16Dot = true;
    checkAttention(c);
  }
  // Where vdpbf16ps runs, the outputs differ from f32's: it ran.
  if (!tfm_bf16_dot_enabled() || tfm_kernels_narrow())
    return;
  std::vector<float> q = randomValues(40 * 64, 1), k = randomValues(40 * 64, 2);
  std::vector<float> v = randomValues(40 * 64, 3);
  std::vector<float> plain(40 * 64), dot(40 * 64);
  tfm_memref3d_f32 qm = view3d(q, 40, 1, 64, 64), km = view3d(k, 40, 1, 64, 64);
  tfm_memref3d_f32 vm = view3d(v, 40, 1, 64, 64);
  tfm_memref3d_f32 pm = view3d(plain, 40, 1, 64, 64);
  tfm_memref3d_f32 dm = view3d(dot, 40, 1, 64, 64);
  tfm_memref1d_f32 none = noSinks();
  _mlir_ciface_tfm_rt_attention(&qm, &km, &vm, &none, &pm, 0.125f, 0, 0, 0.0f);
  _mlir_ciface_tfm_rt_attention_bf16_dot(&qm, &km, &vm, &none, &dm, 0.125f, 0,
                                         0, 0.0f);
  EXPECT_NE(plain, dot) << "vdpbf16ps did not run";
}

/// tfm_rt_window_attention over `windows` windows of L rows: each query
/// sees its own window's keys, plus bias[window mod biases, head] (a
/// strided view), against double loops.
void checkWindowAttention(int64_t windows, int64_t L, int64_t heads, int64_t d,
                          int64_t biases) {
  SCOPED_TRACE(testing::Message()
               << "windows=" << windows << " L=" << L << " heads=" << heads
               << " d=" << d << " biases=" << biases);
  int64_t rows = windows * L, biasRow = L + 3; // 3 spare floats a row
  std::vector<float> q = randomValues(rows * heads * d, 21);
  std::vector<float> k = randomValues(rows * heads * d, 22);
  std::vector<float> v = randomValues(rows * heads * d, 23);
  std::vector<float> bias = randomValues(biases * heads * L * biasRow, 24);
  std::vector<float> out(rows * heads * d, NAN);
  tfm_memref3d_f32 qm = view3d(q, rows, heads, d, heads * d);
  tfm_memref3d_f32 km = view3d(k, rows, heads, d, heads * d);
  tfm_memref3d_f32 vm = view3d(v, rows, heads, d, heads * d);
  tfm_memref3d_f32 om = view3d(out, rows, heads, d, heads * d);
  tfm_memref4d_f32 bm = {bias.data(),
                         bias.data(),
                         0,
                         {biases, heads, L, L},
                         {heads * L * biasRow, L * biasRow, biasRow, 1}};
  float scale = 1.0f / std::sqrt(float(d));
  _mlir_ciface_tfm_rt_window_attention(&qm, &km, &vm, &bm, &om, scale, L);
  double worst = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t w = i / L, first = w * L;
      const float *terms = &bias[((w % biases) * heads + h) * L * biasRow +
                                 (i - first) * biasRow];
      std::vector<double> p(L);
      double maximum = -INFINITY, total = 0;
      for (int64_t j = 0; j < L; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e)
          dot += double(q[(i * heads + h) * d + e]) *
                 k[((first + j) * heads + h) * d + e];
        p[j] = dot * scale + terms[j];
        maximum = std::max(maximum, p[j]);
      }
      for (double &x : p)
        total += x = std::exp(x - maximum);
      for (int64_t e = 0; e < d; ++e) {
        double expected = 0;
        for (int64_t j = 0; j < L; ++j)
          expected += p[j] / total * v[((first + j) * heads + h) * d + e];
        worst =
            std::max(worst, std::fabs(out[(i * heads + h) * d + e] - expected));
      }
    }
  EXPECT_LT(worst, 2e-5);
}

TEST(WindowAttentionKernel, EachWindowsKeysAndBias) {
  // Swin's 7 x 7 windows of 32-wide heads, with a shifted stage's
  // per-window biases; 4 x 4 windows; 8 x 8 of 64; a head width between
  // vectors; and past the four-query path's 64 keys and 64 features.
  checkWindowAttention(4, 49, 3, 32, 2);
  checkWindowAttention(3, 16, 2, 8, 1);
  checkWindowAttention(2, 64, 2, 64, 2);
  checkWindowAttention(2, 49, 2, 40, 1);
  checkWindowAttention(2, 100, 2, 24, 1);
  checkWindowAttention(2, 49, 1, 80, 1);
}

TEST(AttentionKernel, WideHeadsInVectorGroupsAndRemainders) {
  // Values accumulated 64 columns at a time, then 16 at a time.
  checkAttention({100, 100, 2, 2, 128, 128, 0, true});
  checkAttention({40, 40, 2, 1, 80, 80, 0, false});
}

TEST(AttentionKernel, SlidingWindow) {
  checkAttention({130, 130, 2, 1, 16, 16, 17, true});
  checkAttention({1, 300, 2, 2, 16, 16, 100, true});
}

TEST(AttentionKernel, SoftCappedScores) {
  // Gemma 2's cap (50) is far above these scores; a cap of 0.5 squashes
  // most of them. Prefill blocks, a decode step, a window, int8 rows.
  for (float cap : {50.0f, 0.5f}) {
    AttentionCase prefill{70, 70, 4, 2, 16, 16, 0, true};
    prefill.softcap = cap;
    checkAttention(prefill);
    AttentionCase decode{1, 90, 4, 2, 16, 16, 0, true};
    decode.softcap = cap;
    checkAttention(decode);
    AttentionCase window{40, 40, 2, 1, 16, 16, 9, true};
    window.softcap = cap;
    window.storedRows = TFM_ROWS_I8;
    checkAttention(window);
  }
}

TEST(AttentionKernel, SinksInEveryDenominator) {
  // gpt-oss's shape of use: grouped heads, 128-token windows and full
  // layers; prefill blocks, a decode step (chunked keys, merged), stored
  // rows, relative terms, and a query whose window holds one key.
  AttentionCase cases[] = {
      {150, 150, 4, 2, 16, 16, 0, true}, {70, 200, 4, 1, 32, 32, 128, true},
      {1, 300, 4, 2, 16, 16, 0, true},   {1, 300, 4, 2, 16, 16, 128, true},
      {33, 33, 2, 2, 8, 8, 1, true},     {5, 70, 4, 2, 16, 16, 0, false}};
  for (AttentionCase c : cases) {
    c.sinks = true;
    checkAttention(c);
    c.storedRows = TFM_ROWS_I8;
    checkAttention(c);
    c.storedRows = TFM_ROWS_BF16;
    checkAttention(c);
    c.storedRows = TFM_ROWS_F32;
    c.distanceBias = true;
    checkAttention(c);
  }
}

TEST(AttentionKernel, BidirectionalCrossAttention) {
  checkAttention({5, 70, 4, 2, 16, 16, 0, false});
  checkAttention({97, 97, 2, 2, 48, 48, 0, false});
}

TEST(AttentionKernel, SingleQueryDecode) {
  for (int64_t t : {1, 2, 17, 64, 65, 300, 5000})
    checkAttention({1, t, 12, 4, 64, 64, 0, true});
  checkAttention({1, 33, 4, 4, 10, 10, 0, true});
  // Keys and values of different sizes; values in blocks of four vectors
  // and single vectors after them; an odd count of keys per chunk.
  checkAttention({1, 90, 3, 1, 8, 24, 0, true});
  checkAttention({1, 131, 4, 2, 80, 80, 0, true});
}

TEST(AttentionKernel, RelativePositionTermsByDistance) {
  // Whole and partial query blocks, prefill after a cached prefix, and a
  // decode step; bidirectional (T5's encoder) and causal (its decoder).
  for (bool causal : {false, true}) {
    checkAttention({100, 100, 4, 4, 16, 16, 0, causal, true});
    checkAttention({1, 77, 4, 4, 16, 16, 0, causal, true});
  }
  checkAttention({40, 130, 2, 2, 32, 32, 0, true, true});
  checkAttention({5, 70, 2, 2, 8, 8, 0, false, true, /*biasRowPadding=*/3});
}

TEST(AttentionKernel, StoredRowsWidenedInPrefillAndDecode) {
  // Int8, bf16 and f16 rows; prefill over tiles and decode over chunks;
  // head sizes of whole vectors (the vector widening) and not (the scalar
  // one); grouped queries, a window, relative-position terms.
  for (AttentionCase c : std::vector<AttentionCase>{
           {150, 150, 4, 2, 64, 64, 0, true},
           {1, 300, 12, 4, 64, 64, 0, true},
           {1, 5000, 8, 2, 128, 128, 0, true},
           {33, 90, 3, 1, 8, 24, 0, true},
           {1, 33, 4, 4, 10, 10, 0, true},
           {1, 300, 2, 2, 16, 16, 100, true},
           {40, 130, 2, 2, 32, 32, 0, true, true},
           {1, 77, 4, 4, 16, 16, 0, true, true}})
    for (tfm_row_storage storage : {TFM_ROWS_I8, TFM_ROWS_BF16, TFM_ROWS_F16}) {
      c.storedRows = storage;
      checkAttention(c);
    }
}

/// A decode step reads unit-stride bf16 rows of whole vectors where they
/// are, widening them in registers, and other rows (and f16's) through
/// tfm_widen_rows: over the same values, with edges among them (f16's
/// subnormals, its largest finite, a negative zero, a value that rounds to
/// infinity), both give the same bits.
TEST(AttentionKernel, HalfRowsReadInPlaceAsWidened) {
  const int64_t t = 100, heads = 4, kvHeads = 2, d = 64;
  for (tfm_row_storage storage : {TFM_ROWS_BF16, TFM_ROWS_F16})
    for (int narrow : {0, 1}) {
      SCOPED_TRACE(testing::Message() << "storage=" << storage
                                      << " narrow=" << narrow);
      int before = tfm_kernels_use_narrow(narrow);
      std::vector<float> q = randomValues(heads * d, 1);
      std::vector<float> k = randomValues(t * kvHeads * d, 2);
      std::vector<float> v = randomValues(t * kvHeads * d, 3);
      const float edges[] = {3e-6f, -6e-8f, 65504.0f, -0.0f,
                             1e-5f, -2e-7f, 65536.0f};
      for (size_t i = 0; i < sizeof edges / sizeof edges[0]; ++i) {
        k[i * 37] = edges[i] / 65536; // small keys: scores stay finite
        v[i * 53] = edges[i];
      }
      std::vector<uint16_t> kRows = roundTo16Bits(k, storage);
      std::vector<uint16_t> vRows = roundTo16Bits(v, storage);
      // The same rows with every element two apart: the widening path.
      std::vector<uint16_t> kSpread(2 * kRows.size()), vSpread(2 * vRows.size());
      for (size_t i = 0; i < kRows.size(); ++i) {
        kSpread[2 * i] = kRows[i];
        vSpread[2 * i] = vRows[i];
      }
      tfm_memref3d_f32 qm = view3d(q, 1, heads, d, heads * d);
      std::vector<float> inPlace(heads * d), widened(heads * d);
      tfm_memref3d_f32 om = view3d(inPlace, 1, heads, d, heads * d);
      tfm_memref3d_f32 wm = view3d(widened, 1, heads, d, heads * d);
      tfm_memref3d_u16 k16 = rowsView16(kRows, t, kvHeads, d);
      tfm_memref3d_u16 v16 = rowsView16(vRows, t, kvHeads, d);
      tfm_memref3d_u16 kWide = {kSpread.data(), kSpread.data(), 0, {t, kvHeads, d},
                                {2 * kvHeads * d, 2 * d, 2}};
      tfm_memref3d_u16 vWide = {vSpread.data(), vSpread.data(), 0, {t, kvHeads, d},
                                {2 * kvHeads * d, 2 * d, 2}};
      auto attend = storage == TFM_ROWS_BF16 ? _mlir_ciface_tfm_rt_attention_rows_bf16
                                             : _mlir_ciface_tfm_rt_attention_rows_f16;
      tfm_memref1d_f32 none = noSinks();
      attend(&qm, &k16, &v16, &none, &om, 0.125f, 1, 0, 0.0f);
      attend(&qm, &kWide, &vWide, &none, &wm, 0.125f, 1, 0, 0.0f);
      for (int64_t i = 0; i < heads * d; ++i)
        ASSERT_EQ(inPlace[i], widened[i]) << "output " << i;
      tfm_kernels_use_narrow(before);
    }
}

/// tfm_widen_rows of int8 rows alone: whole vectors and a tail (n = 20), unit-stride
/// rows (the vector path) and rows whose codes are two bytes apart (the
/// scalar one), a first row other than 0, a second head, zero padding.
TEST(AttentionKernel, Int8RowsWidenedPerTile) {
  const int64_t rows = 7, heads = 2, n = 20, np = 24, first = 2, count = 4;
  for (int64_t spread : {1, 2}) {
    SCOPED_TRACE(testing::Message() << "code stride=" << spread);
    std::vector<float> values = randomValues(rows * heads * n, 9);
    std::vector<int8_t> packed = quantizeRows(values, n);
    // Each byte of the packed rows at `spread` bytes apart (the gaps hold
    // a value the widening must not read).
    std::vector<int8_t> bytes(packed.size() * spread, 99);
    for (size_t i = 0; i < packed.size(); ++i)
      bytes[i * spread] = packed[i];
    tfm_memref3d_i8 view = {bytes.data(), bytes.data(), 0,
                            {rows, heads, n + 4},
                            {heads * (n + 4) * spread, (n + 4) * spread, spread}};
    std::vector<float> out(count * np, NAN);
    tfm_widen_rows(TFM_ROWS_I8, &view, first, count, /*h=*/1, n, np,
                   out.data());
    for (int64_t r = 0; r < count; ++r)
      for (int64_t c = 0; c < np; ++c)
        EXPECT_EQ(out[r * np + c],
                  c < n ? values[((first + r) * heads + 1) * n + c] : 0.0f)
            << "row " << r << " column " << c;
  }
}

/// The same for bf16 and f16 rows, with values at the edges of their
/// ranges: f16's subnormals, infinities and a NaN widen exactly.
TEST(AttentionKernel, HalfRowsWidenedPerTile) {
  const int64_t rows = 7, heads = 2, n = 20, np = 24, first = 2, count = 4;
  for (tfm_row_storage storage : {TFM_ROWS_BF16, TFM_ROWS_F16})
    for (int64_t spread : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "storage=" << storage
                                      << " element stride=" << spread);
      std::vector<float> values = randomValues(rows * heads * n, 9);
      int64_t edge = ((first + 1) * heads + 1) * n; // widened row 1
      values[edge] = 3e-6f;                         // an f16 subnormal
      values[edge + 1] = -INFINITY;
      values[edge + 9] = 1e30f; // past f16's range: +inf there
      std::vector<uint16_t> stored = roundTo16Bits(values, storage);
      values[edge + 2] = NAN;
      stored[edge + 2] = storage == TFM_ROWS_BF16 ? 0x7fc0 : 0x7e00;
      std::vector<uint16_t> spaced(stored.size() * spread, 0x3c00);
      for (size_t i = 0; i < stored.size(); ++i)
        spaced[i * spread] = stored[i];
      tfm_memref3d_u16 view = {spaced.data(), spaced.data(), 0,
                               {rows, heads, n},
                               {heads * n * spread, n * spread, spread}};
      std::vector<float> out(count * np, -1.0f);
      tfm_widen_rows(storage, &view, first, count, /*h=*/1, n, np, out.data());
      for (int64_t r = 0; r < count; ++r)
        for (int64_t c = 0; c < np; ++c) {
          float expected =
              c < n ? values[((first + r) * heads + 1) * n + c] : 0.0f;
          float got = out[r * np + c];
          if (std::isnan(expected))
            EXPECT_TRUE(std::isnan(got)) << "row " << r << " column " << c;
          else
            EXPECT_EQ(got, expected) << "row " << r << " column " << c;
        }
    }
}

/// Packed sequences of `lengths` against each sequence run alone: the
/// block-diagonal mask keeps every query within its own sequence, with
/// sequences shorter than a query block, longer than a key tile, and of
/// one token.
void checkPackedAttention(std::vector<int32_t> lengths, bool causal,
                          bool bf16Dot = false) {
  SCOPED_TRACE(testing::Message()
               << "sequences=" << lengths.size() << " causal=" << causal
               << " bf16 dot=" << bf16Dot);
  const int64_t heads = 4, kvHeads = 2, d = 24;
  int64_t total = 0;
  for (int32_t n : lengths)
    total += n;
  std::vector<float> q = randomValues(total * heads * d, 4);
  std::vector<float> k = randomValues(total * kvHeads * d, 5);
  std::vector<float> v = randomValues(total * kvHeads * d, 6);
  std::vector<float> packed(total * heads * d, NAN), alone(packed.size(), NAN);
  tfm_memref3d_f32 qm = view3d(q, total, heads, d, heads * d);
  tfm_memref3d_f32 km = view3d(k, total, kvHeads, d, kvHeads * d);
  tfm_memref3d_f32 vm = view3d(v, total, kvHeads, d, kvHeads * d);
  tfm_memref3d_f32 om = view3d(packed, total, heads, d, heads * d);
  tfm_memref1d_i32 lm = {lengths.data(), lengths.data(), 0,
                         {int64_t(lengths.size())}, {1}};
  tfm_memref1d_f32 none = noSinks();
  (bf16Dot ? _mlir_ciface_tfm_rt_attention_packed_bf16_dot
           : _mlir_ciface_tfm_rt_attention_packed)(&qm, &km, &vm, &lm, &none,
                                                   &om, 0.25f, causal, 0, 0.0f);
  int64_t start = 0;
  for (int32_t n : lengths) {
    tfm_memref3d_f32 qs = view3d(q, n, heads, d, heads * d, start * heads * d);
    tfm_memref3d_f32 ks =
        view3d(k, n, kvHeads, d, kvHeads * d, start * kvHeads * d);
    tfm_memref3d_f32 vs =
        view3d(v, n, kvHeads, d, kvHeads * d, start * kvHeads * d);
    tfm_memref3d_f32 os =
        view3d(alone, n, heads, d, heads * d, start * heads * d);
    (bf16Dot ? _mlir_ciface_tfm_rt_attention_bf16_dot
             : _mlir_ciface_tfm_rt_attention)(&qs, &ks, &vs, &none, &os, 0.25f,
                                              causal, 0, 0.0f);
    start += n;
  }
  double worst = 0;
  for (size_t i = 0; i < packed.size(); ++i)
    worst = std::max(worst, double(std::fabs(packed[i] - alone[i])));
  // bf16 probabilities round differently where the key tiles fall
  // differently (a packed sequence's start), within their step.
  EXPECT_LT(worst, bf16Dot ? 2 * 2.0 * std::ldexp(1.0, -9) : 1e-6);
}

TEST(AttentionKernel, PackedSequencesSeeOnlyThemselves) {
  checkPackedAttention({5, 1, 40, 100, 33, 7}, /*causal=*/false);
  checkPackedAttention({70, 2, 31}, /*causal=*/true);
  checkPackedAttention({5, 1, 40, 100, 33, 7}, /*causal=*/false,
                       /*bf16Dot=*/true);
}

TEST(MatmulKernel, RowsTimesTransposedWeightAccumulates) {
  // One row (sgemv), few rows (the streaming kernel: whole and partial
  // tiles of rows and outputs, k with and without a partial vector, in
  // both vector widths), many (sgemm).
  int narrowBefore = tfm_kernels_use_narrow(0);
  for (int narrow : {0, 1})
  for (int64_t m : {1, 3, 4, 6, 8, 70})
    for (int64_t n : {1, 63, 200})
      for (int64_t k : {37, 64}) {
        tfm_kernels_use_narrow(narrow);
        SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n
                                        << " k=" << k << " narrow=" << narrow);
        std::vector<float> a = randomValues(m * k, 4),
                           b = randomValues(n * k, 5);
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
  tfm_kernels_use_narrow(narrowBefore);
}

/// W [n, k] as the packager stores it: panels[p][q][j] = W[32p + j][q],
/// zero-padded to whole panels.
std::vector<float> toPanels(const std::vector<float> &w, int64_t n,
                            int64_t k) {
  int64_t count = (n + 31) / 32;
  std::vector<float> panels(count * 32 * k, 0.0f);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t q = 0; q < k; ++q)
      panels[(row / 32 * k + q) * 32 + row % 32] = w[row * k + q];
  return panels;
}

/// C = A·Wᵀ (+ bias) through the panel kernel, against double loops. C
/// starts as garbage: the kernel must overwrite every element.
void checkPanelLinear(int64_t m, int64_t n, int64_t k, bool withBias,
                      int64_t lda) {
  SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " k=" << k
                                  << " bias=" << withBias << " lda=" << lda);
  std::vector<float> a = randomValues(m * lda, 7), w = randomValues(n * k, 8);
  std::vector<float> bias = randomValues(n, 9), c(m * n, NAN);
  std::vector<float> panels = toPanels(w, n, k);
  tfm_memref2d_f32 am = {a.data(), a.data(), 0, {m, k}, {lda, 1}};
  tfm_memref3d_f32 pm = {panels.data(), panels.data(), 0,
                         {(n + 31) / 32, k, 32}, {k * 32, 32, 1}};
  tfm_memref1d_f32 bm = {bias.data(), bias.data(), 0, {n}, {1}};
  tfm_memref2d_f32 cm = {c.data(), c.data(), 0, {m, n}, {n, 1}};
  if (withBias)
    _mlir_ciface_tfm_rt_linear_panels_bias(&am, &pm, &bm, &cm);
  else
    _mlir_ciface_tfm_rt_linear_panels(&am, &pm, &cm);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double expected = withBias ? bias[j] : 0.0;
      for (int64_t q = 0; q < k; ++q)
        expected += double(a[i * lda + q]) * w[j * k + q];
      double got = c[i * n + j];
      worst = std::isnan(got) ? INFINITY
                              : std::max(worst, std::fabs(expected - got));
    }
  EXPECT_LT(worst, 2e-4 * std::sqrt(double(k)));
}

TEST(PanelLinearKernel, RowBlocksAndDepthBlocks) {
  // Rows: whole blocks of 8 and every remainder; depth: inside one block
  // of 256, and across several with a remainder.
  for (int64_t m : {2, 8, 13, 64})
    for (int64_t k : {5, 256, 600})
      checkPanelLinear(m, 96, k, /*withBias=*/m % 2 == 0, k);
}

TEST(PanelLinearKernel, ZeroPaddedLastPanel) {
  for (int64_t n : {1, 17, 50, 100})
    checkPanelLinear(11, n, 40, /*withBias=*/true, 40);
}

TEST(PanelLinearKernel, SingleRowStreamsPanels) {
  for (int64_t n : {32, 77, 2048})
    for (int64_t k : {3, 300})
      checkPanelLinear(1, n, k, /*withBias=*/n != 32, k);
}

TEST(PanelLinearKernel, NarrowTileOfAvx2) {
  // The 3 x 32 tile CPUs without AVX-512 use (forced here where the CPU
  // has it): one row, every remainder of three, whole and partial depth
  // blocks, a partial last panel.
  int before = tfm_kernels_use_narrow(1);
  for (int64_t m : {1, 2, 3, 4, 8, 13})
    for (int64_t k : {5, 256, 600})
      for (int64_t n : {64, 50, 160}) // one row: panels in pairs, and alone
        checkPanelLinear(m, n, k, /*withBias=*/(m + k) % 2 == 0, k);
  checkPanelLinear(5, 64, 30, /*withBias=*/true, 47);
  tfm_kernels_use_narrow(before);
}

TEST(PanelLinearKernel, StridedRowsOfTheInput) {
  // A slice of a wider activation: rows further apart than k.
  checkPanelLinear(9, 64, 30, /*withBias=*/false, 47);
}

TEST(PanelLinearKernel, NonContiguousPanelsTakeThePlainLoops) {
  // Panels inside a bigger buffer (strides not the packed ones): the
  // kernel falls back to loops over the logical weight.
  int64_t m = 3, n = 40, k = 7;
  std::vector<float> a = randomValues(m * k, 10), w = randomValues(n * k, 11);
  std::vector<float> packed = toPanels(w, n, k);
  // Spread each panel row to a stride of 40 floats.
  std::vector<float> spread(2 * k * 40, 0.0f);
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < 32; ++j)
        spread[(p * k + q) * 40 + j] = packed[(p * k + q) * 32 + j];
  std::vector<float> c(m * n, NAN);
  tfm_memref2d_f32 am = {a.data(), a.data(), 0, {m, k}, {k, 1}};
  tfm_memref3d_f32 pm = {spread.data(), spread.data(), 0, {2, k, 32},
                         {k * 40, 40, 1}};
  tfm_memref2d_f32 cm = {c.data(), c.data(), 0, {m, n}, {n, 1}};
  _mlir_ciface_tfm_rt_linear_panels(&am, &pm, &cm);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (int64_t q = 0; q < k; ++q)
        expected += double(a[i * k + q]) * w[j * k + q];
      EXPECT_NEAR(c[i * n + j], expected, 1e-4) << i << "," << j;
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

// Entry points that take turns (a UNet's steps, then a VAE's decode) hold
// one's buffers at a time: a size the cache cannot serve first returns the
// kept blocks of other sizes while keeping them beside it would pass the
// most ever live at once (at least 1 GiB). Untouched blocks cost no memory.
TEST(BufferCache, AMissReturnsKeptBlocksPastTheBound) {
  const size_t mib = size_t(1) << 20;
  void *unet = _mlir_memref_to_llvm_alloc(700 * mib);
  ASSERT_NE(unet, nullptr);
  _mlir_memref_to_llvm_free(unet);
  EXPECT_GE(tfm_buffer_cache_bytes(), 700 * mib);
  // 700 MiB kept beside 600 live would pass max(peak, 1 GiB).
  void *vae = _mlir_memref_to_llvm_alloc(600 * mib);
  ASSERT_NE(vae, nullptr);
  EXPECT_LT(tfm_buffer_cache_bytes(), 700 * mib);
  // A small miss beside what fits the bound keeps what is kept.
  _mlir_memref_to_llvm_free(vae);
  size_t kept = tfm_buffer_cache_bytes();
  EXPECT_GE(kept, 600 * mib);
  void *small = _mlir_memref_to_llvm_alloc(12345);
  EXPECT_EQ(tfm_buffer_cache_bytes(), kept);
  tfm_buffer_release(small);
}

} // namespace
