//===- NarrowKernelTest.cpp - kernels over weights stored narrower -------===//
//
// The bf16/f16 panel GEMM and the block kernels (runtime/kernels/kernels_blocks.c)
// over weights encoded as the packager encodes them (WeightEncoding.h),
// against double loops over the values the layout documented in
// runtime/include/tfm/weight_formats.h decodes to (a decoder written here from that
// description, not the runtime's). Block products quantize the activations
// to int8 per block: their error is bounded by half an activation step per
// element times the weights, which is what the checks allow; every
// instruction set the machine runs (plain C, AVX2, AVX-512 VNNI) must stay
// inside the bound and agree with the others. bf16 panels of several rows
// go through vdpbf16ps where the CPU has it, with the activations rounded
// to bf16: allowed a bf16 rounding per element times the weight.
//
//===----------------------------------------------------------------------===//

#include "codegen/packaging/WeightEncoding.h"
#include "runtime/kernels/kernels_blocks.h"
#include "runtime/kernels/kernels_panel_bf16_dot.h"
#include "runtime/kernels/vector_width.h"
#include "test/runtime/RandomValues.h"
#include "tfm/half_floats.h"
#include "tfm/runtime_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

using mlir::tfm::WeightFormat;

namespace {

using tfm_test::randomValues;

/// W [n, k] encoded panel by panel, as the packager writes it.
std::vector<uint8_t> encode(WeightFormat format, const std::vector<float> &w,
                            int64_t n, int64_t k) {
  int64_t height = mlir::tfm::panelRows(format);
  std::vector<uint8_t> bytes;
  for (int64_t first = 0; first < n; first += height) {
    std::vector<float> rows(height * k, 0.0f);
    for (int64_t r = 0; r < height && first + r < n; ++r)
      std::copy_n(&w[(first + r) * k], k, &rows[r * k]);
    mlir::tfm::encodePanel(format, rows.data(), k, bytes);
  }
  EXPECT_EQ(int64_t(bytes.size()),
            mlir::tfm::storedMatrixBytes(format, n, k, /*panels=*/true));
  return bytes;
}

/// GGUF Q4_K (`fifthBits` false) or Q5_K blocks of a random W [n, k] (k a
/// multiple of 256): f16 d and dmin, then random bytes for the packed 6-bit
/// scales and minimums, Q5_K's fifth bits and the nibbles; each row's
/// blocks in turn. Q4_K's d and dmin are a few thousandths, Q5_K's (codes
/// up to 31) a few ten thousandths: weights within ±4, for Q6_K's reason
/// below.
std::vector<uint8_t> randomKMinBlocks(int64_t n, int64_t k, unsigned seed,
                                      bool fifthBits) {
  int64_t bytes = fifthBits ? 176 : 144;
  std::vector<uint8_t> blocks(n * k / 256 * bytes);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(fifthBits ? 2e-4f : 1e-3f,
                                              fifthBits ? 2e-3f : 2e-2f);
  for (size_t at = 0; at < blocks.size(); at += bytes) {
    for (int half = 0; half < 2; ++half) {
      uint16_t bits = tfm_float_to_f16(scale(rng));
      blocks[at + 2 * half] = uint8_t(bits);
      blocks[at + 2 * half + 1] = uint8_t(bits >> 8);
    }
    for (int64_t i = 4; i < bytes; ++i)
      blocks[at + i] = uint8_t(rng());
  }
  return blocks;
}

/// Element (row, col) of the Q4_K or Q5_K blocks above, decoded as ggml's
/// dequantize_row_q4_K and dequantize_row_q5_K do (written here from
/// ggml-common.h's block_q4_K, d, dmin, scales[12], qs[128], and
/// block_q5_K, qh[32] before qs; not from the packager's code).
double kMinValue(const std::vector<uint8_t> &blocks, int64_t k, int64_t row,
                 int64_t col, bool fifthBits) {
  int64_t bytes = fifthBits ? 176 : 144;
  const uint8_t *block = blocks.data() + (row * (k / 256) + col / 256) * bytes;
  auto f16At = [](const uint8_t *at) {
    return tfm_f16_to_float(uint16_t(at[0] | at[1] << 8));
  };
  int sub = int(col % 256 / 32), e = int(col % 32);
  const uint8_t *q = block + 4; // the 12 packed bytes
  int scale = sub < 4 ? q[sub] & 63 : (q[sub + 4] & 0xF) | (q[sub - 4] >> 6) << 4;
  int min = sub < 4 ? q[sub + 4] & 63 : (q[sub + 4] >> 4) | (q[sub] >> 6) << 4;
  uint8_t byte = block[(fifthBits ? 48 : 16) + 32 * (sub / 2) + e];
  int code = sub % 2 ? byte >> 4 : byte & 0xF;
  if (fifthBits)
    code |= ((block[16 + e] >> sub) & 1) << 4;
  return f16At(block) * float(scale) * float(code) - f16At(block + 2) * float(min);
}

/// GGUF Q6_K blocks of a random W [n, k]: random bytes for the codes'
/// low 4 and high 2 bits and the int8 scales, an f16 d of a few ten
/// thousandths (weights within ±2, as the other formats' tests draw them:
/// larger ones would make the f32 sums' order differ by more than the
/// cross-instruction-set check allows).
std::vector<uint8_t> randomQ6KBlocks(int64_t n, int64_t k, unsigned seed) {
  std::vector<uint8_t> blocks(n * k / 256 * 210);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(2e-4f, 5e-4f);
  for (size_t at = 0; at < blocks.size(); at += 210) {
    for (int i = 0; i < 208; ++i)
      blocks[at + i] = uint8_t(rng());
    uint16_t bits = tfm_float_to_f16(scale(rng));
    blocks[at + 208] = uint8_t(bits);
    blocks[at + 209] = uint8_t(bits >> 8);
  }
  return blocks;
}

/// Element (row, col) of the Q6_K blocks above, decoded as ggml's
/// dequantize_row_q6_K does.
double q6KValue(const std::vector<uint8_t> &blocks, int64_t k, int64_t row,
                int64_t col) {
  const uint8_t *block = blocks.data() + (row * (k / 256) + col / 256) * 210;
  int n = int(col % 256), h = n / 128, quarter = n % 128 / 32, l = n % 32;
  uint8_t ql = block[64 * h + 32 * (quarter % 2) + l];
  int low = quarter < 2 ? ql & 0xF : ql >> 4;
  int high = (block[128 + 32 * h + l] >> (2 * quarter)) & 3;
  auto scale = int8_t(block[192 + 8 * h + l / 16 + 2 * quarter]);
  float d = tfm_f16_to_float(uint16_t(block[208] | block[209] << 8));
  return d * float(scale) * float((low | high << 4) - 32);
}

/// GGUF MXFP4 blocks (block_mxfp4: an E8M0 exponent, 16 bytes of E2M1
/// nibbles) of a random W [n, k] (k a multiple of 32): exponents 122 to
/// 125 (weights within ±1.5, for Q6_K's reason above), and every seventh
/// block 0 or 1, whose scales are subnormal (2^-127, 2^-126 as ggml's
/// doubled values' 2^-128 and 2^-127).
std::vector<uint8_t> randomMxfp4Blocks(int64_t n, int64_t k, unsigned seed) {
  std::vector<uint8_t> blocks(n * k / 32 * 17);
  std::mt19937 rng(seed);
  for (size_t at = 0, index = 0; at < blocks.size(); at += 17, ++index) {
    blocks[at] = uint8_t(index % 7 == 3 ? index % 2 : 122 + rng() % 4);
    for (int i = 1; i < 17; ++i)
      blocks[at + i] = uint8_t(rng());
  }
  return blocks;
}

/// The E2M1 value of MXFP4 code `code` (OCP Microscaling Formats 5.3.3:
/// a sign bit, two exponent bits, one mantissa bit).
double e2m1Value(int code) {
  static const double magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (code & 8 ? -1 : 1) * magnitudes[code & 7];
}

/// Element (row, col) of the MXFP4 blocks above, decoded as ggml's
/// dequantize_row_mxfp4 does: element j < 16 of a block in the low
/// nibble of qs[j], element j + 16 in its high one, times 2^(e - 127).
double mxfp4Value(const std::vector<uint8_t> &blocks, int64_t k, int64_t row,
                  int64_t col) {
  const uint8_t *block = blocks.data() + (row * (k / 32) + col / 32) * 17;
  int e = int(col % 32);
  uint8_t byte = block[1 + e % 16];
  return std::ldexp(e2m1Value(e < 16 ? byte & 15 : byte >> 4), block[0] - 127);
}

/// Random checkpoint blocks of `format` (Q4_K, Q5_K, Q6_K, MXFP4) for W
/// [n, k].
std::vector<uint8_t> randomCheckpointBlocks(WeightFormat format, int64_t n,
                                            int64_t k, unsigned seed) {
  switch (format) {
  case WeightFormat::Q4_K:
    return randomKMinBlocks(n, k, seed, false);
  case WeightFormat::Q5_K:
    return randomKMinBlocks(n, k, seed, true);
  case WeightFormat::MXFP4:
    return randomMxfp4Blocks(n, k, seed);
  default: return randomQ6KBlocks(n, k, seed);
  }
}

/// Element (row, col) of random checkpoint blocks of `format`, as ggml
/// decodes it.
double checkpointValue(WeightFormat format, const std::vector<uint8_t> &blocks,
                       int64_t k, int64_t row, int64_t col) {
  switch (format) {
  case WeightFormat::Q4_K:
    return kMinValue(blocks, k, row, col, false);
  case WeightFormat::Q5_K:
    return kMinValue(blocks, k, row, col, true);
  case WeightFormat::MXFP4:
    return mxfp4Value(blocks, k, row, col);
  default: return q6KValue(blocks, k, row, col);
  }
}

/// The blocks as q4_k, q5_k, q6_k or mxfp4 panels, as the packager writes
/// them.
std::vector<uint8_t> encodeCheckpointBlocks(WeightFormat format,
                                            const std::vector<uint8_t> &blocks,
                                            int64_t n, int64_t k) {
  int64_t rowBytes = k / mlir::tfm::checkpointBlockElements(format) *
                     mlir::tfm::checkpointBlockBytes(format);
  std::vector<uint8_t> bytes;
  for (int64_t first = 0; first < n; first += 16) {
    std::vector<uint8_t> rows(16 * rowBytes, 0);
    int64_t count = std::min<int64_t>(16, n - first);
    std::copy_n(blocks.begin() + first * rowBytes, count * rowBytes,
                rows.begin());
    mlir::tfm::encodeCheckpointPanel(format, rows.data(), k, bytes);
  }
  EXPECT_EQ(int64_t(bytes.size()),
            mlir::tfm::storedMatrixBytes(format, n, k, true));
  return bytes;
}

/// Element (row, col) of W [n, k] stored as `bytes`, decoded from the
/// layout weight_formats.h describes.
double decoded(WeightFormat format, const std::vector<uint8_t> &bytes,
               int64_t k, int64_t row, int64_t col) {
  if (!mlir::tfm::isBlockFormat(format)) {
    int64_t index = ((row / 32) * k + col) * 32 + row % 32;
    uint16_t bits = uint16_t(bytes[2 * index] | bytes[2 * index + 1] << 8);
    if (format == WeightFormat::F16)
      return tfm_f16_to_float(bits);
    uint32_t wide = uint32_t(bits) << 16;
    float value;
    std::memcpy(&value, &wide, 4);
    return value;
  }
  int64_t blocks = (k + 31) / 32, b = col / 32, e = col % 32, r = row % 16;
  auto f16At = [](const uint8_t *at) {
    return double(tfm_f16_to_float(uint16_t(at[0] | at[1] << 8)));
  };
  if (format == WeightFormat::MXFP4) {
    // E8M0 exponents [block][row]; codes as Q4_0's.
    const uint8_t *panel = bytes.data() + (row / 16) * blocks * (16 + 256);
    const uint8_t *codes = panel + blocks * 16 + b * 256;
    uint8_t byte = codes[(e / 8) * 64 + r * 4 + e % 4];
    return std::ldexp(e2m1Value(e % 8 < 4 ? byte & 15 : byte >> 4),
                      panel[b * 16 + r] - 127);
  }
  if (format == WeightFormat::Q4_K || format == WeightFormat::Q5_K) {
    // d, dmin [super-block][row]; scales, mins [block][row]; codes (q5_k:
    // the nibbles, then a vector of fifth bits).
    bool q5 = format == WeightFormat::Q5_K;
    int64_t supers = blocks / 8, s = b / 8, codeBytes = q5 ? 320 : 256;
    const uint8_t *panel = bytes.data() + (row / 16) * blocks * (40 + codeBytes);
    double d = f16At(panel + (s * 16 + r) * 2);
    double dmin = f16At(panel + supers * 32 + (s * 16 + r) * 2);
    int scale = panel[supers * 64 + b * 16 + r];
    int min = panel[supers * 64 + blocks * 16 + b * 16 + r];
    const uint8_t *codes = panel + blocks * 40 + b * codeBytes;
    uint8_t byte = codes[(e / 8) * 64 + r * 4 + e % 4];
    int q = e % 8 < 4 ? byte & 15 : byte >> 4;
    if (q5)
      q |= ((codes[256 + r * 4 + e % 4] >> ((e / 8) * 2 + (e % 8 >= 4))) & 1) << 4;
    return float(d * scale) * q - float(dmin * min);
  }
  if (format == WeightFormat::Q6_K) {
    // d [super-block][row]; int8 scales [block][half][row]; nibbles, then
    // two vectors of high bits.
    int64_t supers = blocks / 8, s = b / 8;
    const uint8_t *panel = bytes.data() + (row / 16) * blocks * (36 + 384);
    double d = f16At(panel + (s * 16 + r) * 2);
    auto scale = int8_t(panel[supers * 32 + (2 * b + e / 16) * 16 + r]);
    const uint8_t *codes = panel + blocks * 36 + b * 384;
    uint8_t byte = codes[(e / 8) * 64 + r * 4 + e % 4];
    int nibble = e % 8 < 4 ? byte & 15 : byte >> 4;
    int place = (e / 8) % 2 * 2 + (e % 8 >= 4);
    int high = (codes[256 + (e / 16) * 64 + r * 4 + e % 4] >> (2 * place)) & 3;
    return float(d * scale) * ((nibble | high << 4) - 32);
  }
  // q8_channel: q8_0's layout.
  bool q8 = format == WeightFormat::Q8_0 || format == WeightFormat::Q8_CHANNEL;
  bool withMin = format == WeightFormat::Q4_1;
  int64_t codeBytes = q8 ? 512 : 256, metaBytes = withMin ? 64 : 32;
  const uint8_t *panel =
      bytes.data() + (row / 16) * blocks * (metaBytes + codeBytes);
  double scale = f16At(panel + (b * 16 + r) * 2);
  const uint8_t *codes = panel + blocks * metaBytes + b * codeBytes;
  if (q8)
    return scale * (int(codes[(e / 4) * 64 + r * 4 + e % 4]) - 128);
  uint8_t byte = codes[(e / 8) * 64 + r * 4 + e % 4];
  int q = e % 8 < 4 ? byte & 15 : byte >> 4;
  if (withMin) // the minimums follow all the scales
    return scale * q + f16At(panel + blocks * 32 + (b * 16 + r) * 2);
  return scale * (q - 8);
}

/// W [n, k] stored as `bytes` as the runtime widens it: whole
/// (tfm_rt_dequantize_blocks), and rows `ids` times `scale` (an embedding
/// lookup, tfm_rt_embedding_blocks).
std::pair<std::vector<float>, std::vector<float>>
widenedByRuntime(WeightFormat format, std::vector<uint8_t> &bytes, int64_t n,
                 int64_t k, std::vector<int32_t> &ids, float scale) {
  int64_t code = mlir::tfm::blockFormatCode(format);
  int64_t count = int64_t(ids.size());
  auto *data = reinterpret_cast<int8_t *>(bytes.data());
  tfm_memref1d_i8 wm = {data, data, 0, {int64_t(bytes.size())}, {1}};
  std::vector<float> whole(n * k, NAN), rows(count * k, NAN);
  tfm_memref2d_f32 whole_m = {whole.data(), whole.data(), 0, {n, k}, {k, 1}};
  _mlir_ciface_tfm_rt_dequantize_blocks(&wm, &whole_m, code);
  tfm_memref1d_i32 idm = {ids.data(), ids.data(), 0, {count}, {1}};
  tfm_memref2d_f32 rows_m = {rows.data(), rows.data(), 0, {count, k}, {k, 1}};
  _mlir_ciface_tfm_rt_embedding_blocks(&idm, &wm, &rows_m, code, scale);
  return {whole, rows};
}

/// The instruction sets this machine runs, plain C first.
std::vector<tfm_blocks_isa> runnableIsas() {
  std::vector<tfm_blocks_isa> isas = {TFM_BLOCKS_ISA_SCALAR};
  if (tfm_blocks_best_isa() >= TFM_BLOCKS_ISA_AVX2)
    isas.push_back(TFM_BLOCKS_ISA_AVX2);
  if (tfm_blocks_best_isa() >= TFM_BLOCKS_ISA_VNNI)
    isas.push_back(TFM_BLOCKS_ISA_VNNI);
  return isas;
}

struct LinearCase {
  int64_t m, n, k;
  bool bias;
};

/// C = A·Wᵀ (+ bias) over W stored in `format`, against double loops over
/// the decoded W; returns C for comparisons across instruction sets.
std::vector<float> checkLinear(WeightFormat format, const LinearCase &c) {
  SCOPED_TRACE(testing::Message() << "format=" << int(format) << " m=" << c.m
                                  << " n=" << c.n << " k=" << c.k
                                  << " bias=" << c.bias);
  std::vector<float> a = randomValues(c.m * c.k, 3), w = randomValues(c.n * c.k, 4);
  std::vector<float> bias = randomValues(c.n, 5), out(c.m * c.n, NAN);
  std::vector<uint8_t> bytes =
      mlir::tfm::isCopiedFromCheckpoint(format)
          ? encodeCheckpointBlocks(
                format, randomCheckpointBlocks(format, c.n, c.k, 4), c.n, c.k)
          : encode(format, w, c.n, c.k);
  tfm_memref2d_f32 am = {a.data(), a.data(), 0, {c.m, c.k}, {c.k, 1}};
  tfm_memref1d_f32 bm = {bias.data(), bias.data(), 0, {c.n}, {1}};
  tfm_memref2d_f32 cm = {out.data(), out.data(), 0, {c.m, c.n}, {c.n, 1}};
  bool blocks = mlir::tfm::isBlockFormat(format);
  if (blocks) {
    auto *data = reinterpret_cast<int8_t *>(bytes.data());
    tfm_memref1d_i8 wm = {data, data, 0, {int64_t(bytes.size())}, {1}};
    int64_t code = mlir::tfm::blockFormatCode(format);
    if (c.bias)
      _mlir_ciface_tfm_rt_linear_blocks_bias(&am, &wm, &bm, &cm, code);
    else
      _mlir_ciface_tfm_rt_linear_blocks(&am, &wm, &cm, code);
  } else {
    auto *data = reinterpret_cast<uint16_t *>(bytes.data());
    int64_t panels = (c.n + 31) / 32;
    tfm_memref3d_u16 pm = {data, data, 0, {panels, c.k, 32}, {c.k * 32, 32, 1}};
    bool bf16 = format == WeightFormat::BF16;
    if (c.bias)
      (bf16 ? _mlir_ciface_tfm_rt_linear_panels_bf16_bias
            : _mlir_ciface_tfm_rt_linear_panels_f16_bias)(&am, &pm, &bm, &cm);
    else
      (bf16 ? _mlir_ciface_tfm_rt_linear_panels_bf16
            : _mlir_ciface_tfm_rt_linear_panels_f16)(&am, &pm, &cm);
  }
  std::vector<double> rowPeak(c.m, 0.0);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t q = 0; q < c.k; ++q)
      rowPeak[i] = std::max(rowPeak[i], double(std::fabs(a[i * c.k + q])));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double expected = c.bias ? bias[j] : 0.0, bound = 0;
      for (int64_t q = 0; q < c.k; ++q) {
        double wq = decoded(format, bytes, c.k, j, q);
        expected += a[i * c.k + q] * wq;
        if (format == WeightFormat::BF16 && c.m > 1 && tfm_bf16_dot_enabled())
          // The activation rounded to bf16 (8 significant bits).
          bound += std::fabs(wq * a[i * c.k + q]) / 256.0;
        if (blocks && !tfm_blocks_widens(c.m)) {
          // Half a step of the activation's block (q8_channel: its row),
          // times the weight (the widened path multiplies the f32
          // activations: no such term).
          int64_t first = q / 32 * 32;
          double amax = 0;
          for (int64_t e = first; e < std::min(first + 32, c.k); ++e)
            amax = std::max(amax, double(std::fabs(a[i * c.k + e])));
          if (format == WeightFormat::Q8_CHANNEL)
            amax = rowPeak[i];
          bound += std::fabs(wq) * amax / 254.0;
        }
      }
      double got = out[i * c.n + j];
      EXPECT_FALSE(std::isnan(got)) << i << "," << j;
      EXPECT_NEAR(got, expected, bound * 1.001 + 2e-4 * std::sqrt(double(c.k)))
          << i << "," << j;
    }
  return out;
}

TEST(NarrowPanelKernel, BF16AndF16PanelsAreTheirWidenedWeights) {
  // Both tiles: AVX-512's 8 x 32 and AVX2's 3 x 32 (forced here where the
  // CPU has AVX-512), bf16's step order through each.
  int before = tfm_kernels_use_narrow(0);
  int bf16Dot = tfm_bf16_dot_use(0);
  for (int narrow : {0, 1}) {
    SCOPED_TRACE(testing::Message() << "narrow tile=" << narrow);
    tfm_kernels_use_narrow(narrow);
    for (WeightFormat format : {WeightFormat::BF16, WeightFormat::F16})
      // One row: one panel; a pair, a pair and a partial panel; two
      // pairs and a single (panels run two at a time).
      for (LinearCase c : {LinearCase{1, 32, 300, false}, {1, 77, 5, true},
                           {1, 64, 33, true}, {1, 160, 17, false},
                           {2, 64, 9, true}, {3, 50, 40, true},
                           {8, 96, 256, false}, {13, 64, 600, true}})
        checkLinear(format, c);
  }
  tfm_bf16_dot_use(bf16Dot);
  tfm_kernels_use_narrow(before);
}

TEST(NarrowPanelKernel, BF16DotProductsAndWideningAgree) {
  // Rows: partial tiles, whole tiles, past a 128-row pass; depth: odd,
  // in one block, over several blocks with an odd last one; outputs:
  // whole panels and a partial last one. Up to a tile's 8 rows (decode, a
  // speculative step's @verify) the widening tile runs either way, its
  // f32 activations unrounded: the same numbers, bit for bit.
  std::vector<LinearCase> cases = {{2, 32, 7, false},   {9, 40, 64, true},
                                   {16, 96, 513, true}, {130, 64, 300, false},
                                   {5, 33, 1, true},    {8, 40, 64, true},
                                   {11, 33, 1, true}};
  int before = tfm_bf16_dot_use(0);
  for (const LinearCase &c : cases) {
    tfm_bf16_dot_use(0);
    std::vector<float> widened = checkLinear(WeightFormat::BF16, c);
    if (!tfm_bf16_dot_use(1) && !tfm_bf16_dot_enabled())
      GTEST_SKIP() << "this CPU has no AVX512_BF16";
    std::vector<float> dot = checkLinear(WeightFormat::BF16, c);
    if (c.m > 8)
      EXPECT_NE(widened, dot) << "the vdpbf16ps path did not run";
    else
      EXPECT_EQ(widened, dot) << c.m << " rows left the widening tile";
  }
  tfm_bf16_dot_use(before);
}

TEST(NarrowPanelKernel, WidenedBF16EntryKeepsF32Products) {
  // tfmc --compute-dtype f32's entry: with vdpbf16ps on (where the CPU has
  // it), bf16 panels are still widened, so a call of 16 rows gives the
  // widening path's numbers, and each row what it gives alone to f32
  // rounding (one row's GEMV sums in another order than a tile; bf16
  // activations would be off by bf16's rounding, about 1e-3 relative).
  const int64_t m = 16, n = 64, k = 300;
  std::vector<float> a = randomValues(m * k, 3), w = randomValues(n * k, 4);
  std::vector<uint8_t> bytes = encode(WeightFormat::BF16, w, n, k);
  auto *data = reinterpret_cast<uint16_t *>(bytes.data());
  tfm_memref3d_u16 pm = {data, data, 0, {n / 32, k, 32}, {k * 32, 32, 1}};
  auto call = [&](bool widened, int64_t first, int64_t rows) {
    std::vector<float> out(rows * n, NAN);
    tfm_memref2d_f32 am = {a.data(), a.data(), first * k, {rows, k}, {k, 1}};
    tfm_memref2d_f32 cm = {out.data(), out.data(), 0, {rows, n}, {n, 1}};
    (widened ? _mlir_ciface_tfm_rt_linear_panels_bf16_widened
             : _mlir_ciface_tfm_rt_linear_panels_bf16)(&am, &pm, &cm);
    return out;
  };
  int before = tfm_bf16_dot_use(0);
  std::vector<float> reference = call(false, 0, m);
  tfm_bf16_dot_use(1);
  EXPECT_EQ(call(true, 0, m), reference);
  for (int64_t row : {0, 7, 15}) {
    std::vector<float> alone = call(true, row, 1);
    for (int64_t j = 0; j < n; ++j) {
      float batched = reference[row * n + j];
      EXPECT_NEAR(alone[j], batched, 1e-5 * std::max(1.0f, std::fabs(batched)))
          << "row " << row << ", output " << j;
    }
  }
  if (tfm_bf16_dot_enabled())
    EXPECT_NE(call(false, 0, m), reference) << "vdpbf16ps did not run";
  tfm_bf16_dot_use(before);
}

TEST(BlockKernel, EveryInstructionSetWithinTheActivationStep) {
  // Rows: one (decode), a partial tile, a whole tile and a tile plus some;
  // outputs: whole panels and a last partial one; depth: one block, a
  // partial last block, several blocks.
  // Past 48 rows AVX2 widens the blocks (checked against the exact
  // products alone).
  std::vector<LinearCase> cases = {{1, 16, 32, false},  {1, 100, 256, true}, {1, 16, 8, false}, {3, 32, 8, true},
                                   {2, 40, 100, false}, {8, 48, 64, true},
                                   {11, 33, 96, true},  {20, 64, 130, false},
                                   {50, 40, 100, true}, {64, 96, 64, false}};
  // The K-quants' rows are whole super-blocks of 256, MXFP4's whole blocks
  // of 32.
  std::vector<LinearCase> superBlockCases = {
      {1, 16, 256, false}, {1, 100, 512, true}, {2, 40, 256, false},
      {8, 48, 512, true},  {11, 33, 256, true}, {50, 40, 256, true},
      {12, 32, 256, false}};
  std::vector<LinearCase> wholeBlockCases = {
      {1, 16, 32, false},  {1, 100, 256, true}, {2, 40, 96, false},
      {8, 48, 64, true},   {11, 33, 96, true},  {20, 64, 160, false},
      {50, 40, 96, true},  {64, 96, 64, false}};
  tfm_blocks_isa before = tfm_blocks_use_isa(TFM_BLOCKS_ISA_SCALAR);
  for (WeightFormat format :
       {WeightFormat::Q8_0, WeightFormat::Q8_CHANNEL, WeightFormat::Q4_0,
        WeightFormat::Q4_1, WeightFormat::Q4_K, WeightFormat::Q5_K,
        WeightFormat::Q6_K, WeightFormat::MXFP4})
    for (const LinearCase &c : mlir::tfm::isKQuant(format)     ? superBlockCases
                               : format == WeightFormat::MXFP4 ? wholeBlockCases
                                                               : cases) {
      std::vector<float> first;
      // Activations quantized in 16- and 8-float vectors (vector_width.h)
      // give the same codes.
      for (tfm_blocks_isa isa : runnableIsas())
      for (int narrow : {0, 1}) {
        SCOPED_TRACE(testing::Message() << "isa=" << int(isa)
                                        << " narrow=" << narrow);
        tfm_blocks_use_isa(isa);
        int narrowBefore = tfm_kernels_use_narrow(narrow);
        std::vector<float> out = checkLinear(format, c);
        tfm_kernels_use_narrow(narrowBefore);
        if (tfm_blocks_widens(c.m))
          continue;
        if (first.empty()) {
          first = out;
          continue;
        }
        // The same integer sums: only the order of f32 additions differs.
        for (size_t i = 0; i < out.size(); ++i)
          EXPECT_NEAR(out[i], first[i], 1e-5 * (1 + std::fabs(first[i])))
              << "output " << i;
      }
    }
  tfm_blocks_use_isa(before);
}

TEST(BlockKernel, ChannelRowsTooLongForInt32SumsTakeThePerBlockPath) {
  // Every code at its largest (127): 140000 products of 16129 pass 2^31,
  // which a row's int32 sums across the whole row would wrap; such rows
  // are summed per block.
  int64_t m = 2, n = 16, k = 140000;
  std::vector<float> a(m * k, 0.5f), w(n * k, 0.25f), out(m * n, NAN);
  std::vector<uint8_t> bytes = encode(WeightFormat::Q8_CHANNEL, w, n, k);
  auto *data = reinterpret_cast<int8_t *>(bytes.data());
  tfm_memref1d_i8 wm = {data, data, 0, {int64_t(bytes.size())}, {1}};
  tfm_memref2d_f32 am = {a.data(), a.data(), 0, {m, k}, {k, 1}};
  tfm_memref2d_f32 cm = {out.data(), out.data(), 0, {m, n}, {n, 1}};
  tfm_blocks_isa before = tfm_blocks_use_isa(TFM_BLOCKS_ISA_SCALAR);
  for (tfm_blocks_isa isa : runnableIsas()) {
    tfm_blocks_use_isa(isa);
    _mlir_ciface_tfm_rt_linear_blocks(
        &am, &wm, &cm, mlir::tfm::blockFormatCode(WeightFormat::Q8_CHANNEL));
    for (float got : out) // the f16 scale's rounding: within 2^-11
      EXPECT_NEAR(got, 0.125 * k, 0.125 * k / 1024) << "isa=" << int(isa);
  }
  tfm_blocks_use_isa(before);
}

TEST(BlockKernel, ManyRowsOnAvx2MultiplyTheWidenedWeights) {
  if (tfm_blocks_best_isa() < TFM_BLOCKS_ISA_AVX2)
    GTEST_SKIP() << "this CPU has no AVX2";
  tfm_blocks_isa before = tfm_blocks_use_isa(TFM_BLOCKS_ISA_AVX2);
  EXPECT_FALSE(tfm_blocks_widens(8)) << "a decode batch multiplies codes";
  EXPECT_TRUE(tfm_blocks_widens(512)) << "a prefill widens";
  // A partial last pair of panels (n = 40: one whole block panel, one
  // half), a padding panel (n = 16), a partial last block (k = 100).
  for (WeightFormat format : {WeightFormat::Q8_0, WeightFormat::Q8_CHANNEL,
                              WeightFormat::Q4_0, WeightFormat::Q4_1})
    for (LinearCase c : {LinearCase{48, 40, 100, true}, {70, 16, 32, false},
                         {96, 64, 300, true}})
      checkLinear(format, c); // within f32 rounding of the exact products
  for (WeightFormat format : {WeightFormat::Q4_K, WeightFormat::Q5_K,
                              WeightFormat::Q6_K, WeightFormat::MXFP4})
    for (LinearCase c : {LinearCase{48, 40, 256, true}, {70, 16, 512, false}})
      checkLinear(format, c);
  tfm_blocks_use_isa(TFM_BLOCKS_ISA_VNNI);
  EXPECT_FALSE(tfm_blocks_widens(512) && tfm_blocks_best_isa() ==
                                            TFM_BLOCKS_ISA_VNNI)
      << "VNNI multiplies codes at every size";
  tfm_blocks_use_isa(before);
}

/// tfm_rt_head_linear_blocks over A [m, heads, k] (rows `pitch` floats
/// apart, a head's columns k + 3 apart, so neither is dense) and W
/// [heads·n, k], against tfm_rt_linear_blocks run head by head on the
/// head's own rows of A, copied dense, and its own panels: the same
/// quantized rows and the same kernels, so the same bits.
void checkHeadLinear(WeightFormat format, int64_t m, int64_t heads, int64_t n,
                     int64_t k) {
  SCOPED_TRACE(testing::Message() << "format=" << int(format) << " m=" << m
                                  << " heads=" << heads << " n=" << n
                                  << " k=" << k);
  int64_t headPitch = k + 3, pitch = heads * headPitch + 5;
  std::vector<float> a = randomValues(m * pitch, 7);
  std::vector<uint8_t> bytes =
      mlir::tfm::isCopiedFromCheckpoint(format)
          ? encodeCheckpointBlocks(
                format, randomCheckpointBlocks(format, heads * n, k, 8),
                heads * n, k)
          : encode(format, randomValues(heads * n * k, 8), heads * n, k);
  int64_t code = mlir::tfm::blockFormatCode(format);
  std::vector<float> out(m * heads * n, NAN);
  auto *data = reinterpret_cast<int8_t *>(bytes.data());
  tfm_memref1d_i8 wm = {data, data, 0, {int64_t(bytes.size())}, {1}};
  tfm_memref3d_f32 am = {
      a.data(), a.data(), 0, {m, heads, k}, {pitch, headPitch, 1}};
  tfm_memref3d_f32 cm = {
      out.data(), out.data(), 0, {m, heads, n}, {heads * n, n, 1}};
  _mlir_ciface_tfm_rt_head_linear_blocks(&am, &wm, &cm, code);
  int64_t headBytes = int64_t(bytes.size()) / heads;
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<float> rows(m * k), expected(m * n, NAN);
    for (int64_t i = 0; i < m; ++i)
      std::copy_n(a.begin() + i * pitch + h * headPitch, k,
                  rows.begin() + i * k);
    std::vector<int8_t> own(data + h * headBytes, data + (h + 1) * headBytes);
    tfm_memref1d_i8 om = {own.data(), own.data(), 0, {headBytes}, {1}};
    tfm_memref2d_f32 rm = {rows.data(), rows.data(), 0, {m, k}, {k, 1}};
    tfm_memref2d_f32 em = {expected.data(), expected.data(), 0, {m, n}, {n, 1}};
    _mlir_ciface_tfm_rt_linear_blocks(&rm, &om, &em, code);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        EXPECT_EQ(out[(i * heads + h) * n + j], expected[i * n + j])
            << "row " << i << " head " << h << " output " << j;
  }
}

TEST(BlockKernel, HeadLinearIsEachHeadsOwnProduct) {
  // One row (decode), a partial tile, and past AVX2's widening; heads of
  // one panel (n = 16, a pair widened only half) and of several.
  tfm_blocks_isa before = tfm_blocks_use_isa(TFM_BLOCKS_ISA_SCALAR);
  for (tfm_blocks_isa isa : runnableIsas()) {
    SCOPED_TRACE(testing::Message() << "isa=" << int(isa));
    tfm_blocks_use_isa(isa);
    for (int64_t m : {1, 5, 60})
      for (auto [heads, n] : {std::pair<int64_t, int64_t>{3, 16}, {4, 48}}) {
        checkHeadLinear(WeightFormat::Q8_0, m, heads, n, 96);
        checkHeadLinear(WeightFormat::Q8_0, m, heads, n, 8);
        checkHeadLinear(WeightFormat::Q8_CHANNEL, m, heads, n, 96);
        checkHeadLinear(WeightFormat::Q4_0, m, heads, n, 64);
        checkHeadLinear(WeightFormat::Q4_K, m, heads, n, 256);
        checkHeadLinear(WeightFormat::MXFP4, m, heads, n, 128);
      }
  }
  tfm_blocks_use_isa(before);
}

TEST(BlockKernel, EncodingKeepsEachValueWithinItsBlocksStep) {
  int64_t n = 20, k = 70;
  std::vector<float> w = randomValues(n * k, 6, 3.0f);
  w[5] = 0; // a zero, and a whole zero block below
  std::fill(w.begin() + 2 * k, w.begin() + 2 * k + 32, 0.0f);
  for (WeightFormat format : {WeightFormat::Q8_0, WeightFormat::Q8_CHANNEL,
                              WeightFormat::Q4_0, WeightFormat::Q4_1}) {
    std::vector<uint8_t> bytes = encode(format, w, n, k);
    // q8_0: half a step of amax/127 (q8_channel: of its row's amax); q4_0
    // may clip its largest value to resolve the rest: within a step of
    // amax/8; q4_1: half a step of its range (at most 2 amax) / 15, plus
    // the f16 rounding of its minimum.
    bool channel = format == WeightFormat::Q8_CHANNEL;
    bool q8 = format == WeightFormat::Q8_0 || channel;
    bool q4 = format == WeightFormat::Q4_0;
    double steps = q8 ? 127.0 : q4 ? 8.0 : 15.0;
    double slack = q8 ? 0.51 : q4 ? 1.0 : 1.01;
    for (int64_t row = 0; row < n; ++row)
      for (int64_t col = 0; col < k; ++col) {
        int64_t first = channel ? 0 : col / 32 * 32;
        double amax = 0;
        for (int64_t e = first; e < (channel ? k : std::min(first + 32, k));
             ++e)
          amax = std::max(amax, double(std::fabs(w[row * k + e])));
        EXPECT_NEAR(decoded(format, bytes, k, row, col), w[row * k + col],
                    slack * amax / steps * 1.002 + 1e-7)
            << int(format) << ": " << row << "," << col;
      }
    // The runtime's own widening agrees with the layout's description,
    // whole (tfm_rt_dequantize_blocks) and by rows (an embedding lookup,
    // scaled).
    std::vector<int32_t> ids = {19, 0, 7};
    auto [whole, rows] = widenedByRuntime(format, bytes, n, k, ids, 0.5f);
    for (int64_t row = 0; row < n; ++row)
      for (int64_t col = 0; col < k; ++col)
        EXPECT_EQ(whole[row * k + col], decoded(format, bytes, k, row, col));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t col = 0; col < k; ++col)
        EXPECT_FLOAT_EQ(rows[i * k + col],
                        0.5 * decoded(format, bytes, k, ids[i], col));
  }
}

/// A GGUF file's Q8_0, Q4_0 and Q4_1 blocks (llama.cpp's quantizers: the
/// value of largest magnitude is ±127 or -8 steps of an f16 scale; Q4_1's
/// codes span 0 to 15 above an f16 minimum) are read as their values and
/// encoded again: the packager must find the same scale (and minimum) and
/// codes, so that a quantized checkpoint keeps its numbers exactly.
TEST(BlockKernel, QuantizedCheckpointBlocksEncodeToThemselves) {
  int64_t n = 16, k = 96;
  std::vector<float> noise = randomValues(n * k, 11, 1.0f);
  std::vector<float> scales = randomValues(n * k / 32, 12, 0.05f);
  for (WeightFormat format :
       {WeightFormat::Q8_0, WeightFormat::Q4_0, WeightFormat::Q4_1}) {
    bool q8 = format == WeightFormat::Q8_0, q4 = format == WeightFormat::Q4_0;
    std::vector<float> w(n * k);
    for (int64_t b = 0; b < n * k / 32; ++b) {
      float d = tfm_f16_to_float(
          tfm_float_to_f16(std::fabs(scales[b]) + 1e-3f));
      // Q4_1's minimum: an f16 below zero, the codes spanning 0 to 15.
      float min = tfm_f16_to_float(tfm_float_to_f16(-8.25f * d));
      for (int64_t i = 0; i < 32; ++i) {
        // Codes spread over the range, with the block's extremes first.
        float code = std::round(noise[b * 32 + i] * (q8 ? 127 : 7.4f));
        if (i == 0)
          code = q8 ? (b % 2 ? 127 : -127) : -8;
        if (q8)
          w[b * 32 + i] = d * code;
        else if (q4)
          w[b * 32 + i] = d * std::min(code, 7.0f);
        else
          w[b * 32 + i] = d * (i == 1 ? 15 : std::clamp(code + 8, 0.0f, 15.0f)) + min;
      }
    }
    std::vector<uint8_t> bytes = encode(format, w, n, k);
    for (int64_t row = 0; row < n; ++row)
      for (int64_t col = 0; col < k; ++col)
        ASSERT_EQ(decoded(format, bytes, k, row, col), w[row * k + col])
            << int(format) << ": " << row << "," << col;
  }
}

/// A Q4_K checkpoint's sub-block of 32 is a grid d·s·q - dmin·m whose
/// codes need not reach 0 or 15 (llama.cpp's quantizer clips and shifts
/// them); spreading its range over 15 steps would move its values by up
/// to half a step. The q4_1 encoder finds the grid instead: every value
/// comes back within the f16 rounding of its step (2^-11 of it per code).
TEST(BlockKernel, Q4KSubBlocksKeepTheirGrid) {
  int64_t n = 16, k = 64;
  std::vector<float> noise = randomValues(n * k, 21, 1.0f);
  std::vector<float> steps = randomValues(n * k / 32, 22, 0.01f);
  std::vector<float> w(n * k), tolerance(n * k);
  for (int64_t b = 0; b < n * k / 32; ++b) {
    // d·s: an f16 super-block scale times a 6-bit sub-block scale, which
    // f16 cannot hold exactly.
    float step = tfm_f16_to_float(tfm_float_to_f16(
                     std::fabs(steps[b]) + 1e-3f)) * float(37 + b % 20);
    float offset = -step * float(3 + b % 5) / 1.7f;
    for (int64_t i = 0; i < 32; ++i) {
      // Codes 2 to 12: the block reaches neither end of the range.
      float code = 2 + std::round((noise[b * 32 + i] + 1) * 5);
      if (i < 2)
        code = i ? 12 : 2;
      w[b * 32 + i] = step * code + offset;
      tolerance[b * 32 + i] = step * 12 * 1.0f / 2048 + 1e-6f;
    }
  }
  std::vector<uint8_t> bytes = encode(WeightFormat::Q4_1, w, n, k);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < k; ++col)
      EXPECT_NEAR(decoded(WeightFormat::Q4_1, bytes, k, row, col),
                  w[row * k + col], tolerance[row * k + col])
          << row << "," << col;
}

/// A GGUF file's Q4_K, Q5_K, Q6_K and MXFP4 blocks are kept, not
/// requantized: the q4_k, q5_k, q6_k and mxfp4 panels hold every weight
/// exactly as ggml decodes the file's blocks (up to the order of d · scale
/// · q's two products, and f32 rounding), and the runtime's own widening (a
/// dequantized matrix, an embedding lookup) reads the same values back.
TEST(BlockKernel, CheckpointPanelsHoldTheFilesBlocks) {
  int64_t n = 40, k = 512; // a partial last panel, two super-blocks a row
  for (WeightFormat format : {WeightFormat::Q4_K, WeightFormat::Q5_K,
                              WeightFormat::Q6_K, WeightFormat::MXFP4}) {
    SCOPED_TRACE(testing::Message() << "format=" << int(format));
    std::vector<uint8_t> blocks = randomCheckpointBlocks(format, n, k, 31);
    std::vector<uint8_t> bytes = encodeCheckpointBlocks(format, blocks, n, k);
    auto fileValue = [&](int64_t row, int64_t col) {
      return checkpointValue(format, blocks, k, row, col);
    };
    for (int64_t row = 0; row < n; ++row)
      for (int64_t col = 0; col < k; ++col)
        ASSERT_FLOAT_EQ(decoded(format, bytes, k, row, col),
                        fileValue(row, col))
            << row << "," << col;
    std::vector<int32_t> ids = {39, 5};
    auto [whole, rows] = widenedByRuntime(format, bytes, n, k, ids, 2.0f);
    for (int64_t row = 0; row < n; ++row)
      for (int64_t col = 0; col < k; ++col)
        ASSERT_FLOAT_EQ(whole[row * k + col], fileValue(row, col))
            << row << "," << col;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t col = 0; col < k; ++col)
        ASSERT_FLOAT_EQ(rows[i * k + col], 2 * fileValue(ids[i], col));
  }
}

} // namespace
