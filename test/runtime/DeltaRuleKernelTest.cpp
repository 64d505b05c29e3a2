//===- DeltaRuleKernelTest.cpp - Gated DeltaNet's recurrence kernel -----===//
//
// tfm_rt_gated_delta_rule against the delta rule written out in double
// precision (test/e2e/reference/qwen3_next.py's recurrent form): grouped
// and tiled key heads, key and value head sizes that differ, queries and
// keys read as strided slices of the convolution's output, a starting
// state carried in, and two calls chained through their states giving what
// one call over all positions gives.
//
//===----------------------------------------------------------------------===//

#include "test/runtime/RandomValues.h"
#include "tfm/runtime_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using tfm_test::randomValues;

struct DeltaCase {
  int64_t positions, keyHeads, valueHeads, dk, dv;
  bool tiled;
};

/// The inputs of one call: q and k as slices of one [s, 2·Hk·dk + extra]
/// row (as the convolution's output holds them), the rest dense.
struct DeltaInputs {
  DeltaCase c;
  int64_t rowWidth;
  std::vector<float> mixed, value, alpha, beta, decay, start;

  DeltaInputs(DeltaCase c, unsigned seed) : c(c) {
    rowWidth = 2 * c.keyHeads * c.dk + 5;
    mixed = randomValues(size_t(c.positions * rowWidth), seed, 0.5f);
    value = randomValues(size_t(c.positions * c.valueHeads * c.dv), seed + 1);
    alpha = randomValues(size_t(c.positions * c.valueHeads), seed + 2);
    beta = randomValues(size_t(c.positions * c.valueHeads), seed + 3, 0.5f);
    for (float &b : beta)
      b += 0.5f; // a sigmoid's (0, 1)
    decay = randomValues(size_t(c.valueHeads), seed + 4, 1.5f);
    for (float &d : decay)
      d = -std::fabs(d) - 0.25f; // −exp(A_log) < 0
    start = randomValues(size_t(c.valueHeads * c.dk * c.dv), seed + 5, 0.3f);
  }
  float query(int64_t t, int64_t h, int64_t i) const {
    return mixed[size_t(t * rowWidth + h * c.dk + i)];
  }
  float key(int64_t t, int64_t h, int64_t i) const {
    return mixed[size_t(t * rowWidth + (c.keyHeads + h) * c.dk + i)];
  }
};

/// The recurrence in double over positions [first, first + count),
/// continuing from `state` ([Hv, dk, dv]); appends each position's read.
void referenceRule(const DeltaInputs &in, int64_t first, int64_t count,
                   float scale, std::vector<double> &state,
                   std::vector<double> &reads) {
  const DeltaCase &c = in.c;
  for (int64_t t = first; t < first + count; ++t)
    for (int64_t h = 0; h < c.valueHeads; ++h) {
      int64_t kh = c.tiled ? h % c.keyHeads : h / (c.valueHeads / c.keyHeads);
      double a = in.alpha[size_t(t * c.valueHeads + h)];
      double g = in.decay[size_t(h)] * std::log1p(std::exp(a));
      double factor = std::exp(g), b = in.beta[size_t(t * c.valueHeads + h)];
      double *s = &state[size_t(h * c.dk * c.dv)];
      for (int64_t j = 0; j < c.dv; ++j) {
        double recalled = 0;
        for (int64_t i = 0; i < c.dk; ++i)
          recalled += factor * s[i * c.dv + j] * in.key(t, kh, i);
        double delta =
            b * (in.value[size_t((t * c.valueHeads + h) * c.dv + j)] - recalled);
        for (int64_t i = 0; i < c.dk; ++i)
          s[i * c.dv + j] = factor * s[i * c.dv + j] + in.key(t, kh, i) * delta;
      }
      for (int64_t j = 0; j < c.dv; ++j) {
        double read = 0;
        for (int64_t i = 0; i < c.dk; ++i)
          read += s[i * c.dv + j] * in.query(t, kh, i) * scale;
        reads.push_back(read);
      }
    }
}

/// The kernel over positions [first, first + count) from `start` (from
/// zeros where `reset`); returns the reads and leaves the final state in
/// `state`.
std::vector<float> runKernel(DeltaInputs &in, int64_t first, int64_t count,
                             float scale, std::vector<float> &start,
                             std::vector<float> &state, bool reset = false) {
  const DeltaCase &c = in.c;
  int64_t hv = c.valueHeads, hk = c.keyHeads;
  std::vector<float> out(size_t(count * hv * c.dv));
  state.assign(size_t(hv * c.dk * c.dv), NAN);
  tfm_memref3d_f32 q = {in.mixed.data(), in.mixed.data(), first * in.rowWidth,
                        {count, hk, c.dk}, {in.rowWidth, c.dk, 1}};
  tfm_memref3d_f32 k = q;
  k.offset += hk * c.dk;
  tfm_memref3d_f32 v = {in.value.data(), in.value.data(), first * hv * c.dv,
                        {count, hv, c.dv}, {hv * c.dv, c.dv, 1}};
  tfm_memref2d_f32 alpha = {in.alpha.data(), in.alpha.data(), first * hv,
                            {count, hv}, {hv, 1}};
  tfm_memref2d_f32 beta = {in.beta.data(), in.beta.data(), first * hv,
                           {count, hv}, {hv, 1}};
  tfm_memref1d_f32 decay = {in.decay.data(), in.decay.data(), 0, {hv}, {1}};
  tfm_memref3d_f32 from = {start.data(), start.data(), 0, {hv, c.dk, c.dv},
                           {c.dk * c.dv, c.dv, 1}};
  tfm_memref3d_f32 o = {out.data(), out.data(), 0, {count, hv, c.dv},
                        {hv * c.dv, c.dv, 1}};
  tfm_memref3d_f32 to = {state.data(), state.data(), 0, {hv, c.dk, c.dv},
                         {c.dk * c.dv, c.dv, 1}};
  _mlir_ciface_tfm_rt_gated_delta_rule(&q, &k, &v, &alpha, &decay, &beta, &from,
                                       &o, &to, scale, c.tiled, reset);
  return out;
}

void expectNear(const std::vector<float> &actual,
                const std::vector<double> &expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
}

void checkCase(DeltaCase c, unsigned seed) {
  DeltaInputs in(c, seed);
  float scale = 1.0f / std::sqrt(float(c.dk));
  std::vector<double> state(in.start.begin(), in.start.end()), reads;
  referenceRule(in, 0, c.positions, scale, state, reads);
  std::vector<float> finalState;
  std::vector<float> out =
      runKernel(in, 0, c.positions, scale, in.start, finalState);
  expectNear(out, reads, 1e-4);
  expectNear(finalState, state, 1e-4);

  // The same positions in two calls, the second starting from the first's
  // final state.
  int64_t split = c.positions / 3 + 1;
  std::vector<float> middle, last;
  std::vector<float> head = runKernel(in, 0, split, scale, in.start, middle);
  std::vector<float> tail =
      runKernel(in, split, c.positions - split, scale, middle, last);
  head.insert(head.end(), tail.begin(), tail.end());
  expectNear(head, reads, 1e-4);
  expectNear(last, state, 1e-4);

  // Reset: the state given is ignored, as if it were zeros (a cache slot
  // that held another sequence).
  std::vector<double> fromZeros(state.size(), 0.0), zeroReads;
  referenceRule(in, 0, c.positions, scale, fromZeros, zeroReads);
  std::vector<float> stale(in.start.size(), 1e3f), resetState;
  std::vector<float> resetOut =
      runKernel(in, 0, c.positions, scale, stale, resetState, /*reset=*/true);
  expectNear(resetOut, zeroReads, 1e-4);
  expectNear(resetState, fromZeros, 1e-4);
}

TEST(DeltaRuleKernel, GroupedKeyHeads) {
  checkCase({9, 2, 4, 8, 8, false}, 11);
}

TEST(DeltaRuleKernel, TiledKeyHeadsAndWiderValues) {
  checkCase({7, 2, 6, 8, 12, true}, 21);
}

TEST(DeltaRuleKernel, QwenSizedHeadsOverManyPositions) {
  checkCase({40, 2, 4, 128, 128, false}, 31);
}

} // namespace
