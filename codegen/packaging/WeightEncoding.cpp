//===- WeightEncoding.cpp - f32 values into a stored weight format -------===//

#include "codegen/packaging/WeightEncoding.h"
#include "tfm/half_floats.h"
#include "tfm/runtime_kernels.h"
#include "tfm/weight_formats.h"

#include <algorithm>
#include <cassert>
#include <tuple>
#include <cmath>
#include <cstring>

using namespace mlir::tfm;

namespace {

void append16(std::vector<uint8_t> &out, uint16_t value) {
  out.push_back(uint8_t(value));
  out.push_back(uint8_t(value >> 8));
}

/// A row's block `block`, zero past the row's `cols` elements.
void blockValues(const float *row, int64_t cols, int64_t block,
                 float values[TFM_BLOCK_SIZE]) {
  int64_t first = block * TFM_BLOCK_SIZE;
  for (int64_t i = 0; i < TFM_BLOCK_SIZE; ++i)
    values[i] = first + i < cols ? row[first + i] : 0.0f;
}

/// Codes of `values` for the f16 `scale` (rounded to nearest, clamped to
/// the format's range) and their squared error.
double codesFor(WeightFormat format, const float *values, uint16_t scale,
                int8_t codes[TFM_BLOCK_SIZE]) {
  float rounded = tfm_f16_to_float(scale);
  float inverse = rounded != 0 ? 1.0f / rounded : 0.0f;
  double error = 0;
  for (int i = 0; i < TFM_BLOCK_SIZE; ++i) {
    float q = std::nearbyint(values[i] * inverse);
    float restored;
    if (codeBits(format) == 8) { // q8_0, q8_channel
      q = std::clamp(q, -127.0f, 127.0f);
      codes[i] = int8_t(q);
      restored = q * rounded;
    } else {
      q = std::clamp(q, -8.0f, 7.0f);
      codes[i] = int8_t(q + 8.0f);
      restored = q * rounded;
    }
    error += double(values[i] - restored) * (values[i] - restored);
  }
  return error;
}

/// One row's block `block` as integer codes: q8_0 in [-127, 127], q4_0 in
/// [0, 15]. Returns the f16 scale. q8_0 takes llama.cpp's scale (the
/// largest magnitude maps to 127); q4_0 tries 21 scales around llama.cpp's
/// (which maps the element of largest magnitude to -8): smaller ones clip
/// that element but resolve the rest finer. It keeps the one of least
/// squared error (stories260K's perplexity over f32: +11.1% with
/// llama.cpp's scale, +8.8% so; 41 scales measured +9.3% and took twice as
/// long, weighting the error by the value's square +9.8%). The codes use
/// the stored f16 scale.
uint16_t quantizeBlock(WeightFormat format, const float *row, int64_t cols,
                       int64_t block, int8_t codes[TFM_BLOCK_SIZE]) {
  float values[TFM_BLOCK_SIZE];
  blockValues(row, cols, block, values);
  float extreme = 0;
  for (float v : values)
    if (std::fabs(v) > std::fabs(extreme))
      extreme = v;
  if (format == WeightFormat::Q8_0) {
    uint16_t scale = tfm_float_to_f16(std::fabs(extreme) / 127.0f);
    codesFor(format, values, scale, codes);
    return scale;
  }
  uint16_t best = tfm_float_to_f16(extreme / -8.0f);
  double bestError = codesFor(format, values, best, codes);
  if (bestError == 0)
    return best; // exact: a Q4_0 checkpoint's own block
  int8_t trial[TFM_BLOCK_SIZE];
  for (int step = -4; step <= 16; ++step) {
    uint16_t scale = tfm_float_to_f16(extreme / (-8.0f - 0.125f * step));
    double error = codesFor(format, values, scale, trial);
    if (error < bestError) {
      bestError = error, best = scale;
      std::copy(trial, trial + TFM_BLOCK_SIZE, codes);
    }
  }
  return best;
}

/// A row's q8_channel scale: its largest magnitude maps to 127 (every
/// block of the row stores it).
uint16_t rowScale(const float *row, int64_t cols) {
  float peak = 0;
  for (int64_t i = 0; i < cols; ++i)
    peak = std::max(peak, std::fabs(row[i]));
  return tfm_float_to_f16(peak / 127.0f);
}

/// One row's block `block` as q8_channel codes in [-127, 127] for the
/// row's `scale`.
void quantizeRowBlock(const float *row, int64_t cols, int64_t block,
                      uint16_t scale, int8_t codes[TFM_BLOCK_SIZE]) {
  float values[TFM_BLOCK_SIZE];
  blockValues(row, cols, block, values);
  codesFor(WeightFormat::Q8_CHANNEL, values, scale, codes);
}

/// The step of the grid `values` already lie on (a block of a Q4_1 or
/// Q4_K checkpoint: least + step · q for q in [0, 15], whether or not its
/// codes reach 15), or 0 when they lie on none that fits 16 levels: the
/// smallest gap between distinct values, if every value is a whole number
/// of such steps from the least.
float gridStep(const float *values, float least, float range) {
  float sorted[TFM_BLOCK_SIZE];
  std::copy(values, values + TFM_BLOCK_SIZE, sorted);
  std::sort(sorted, sorted + TFM_BLOCK_SIZE);
  float step = 0, tiny = range * 1e-4f;
  for (int i = 1; i < TFM_BLOCK_SIZE; ++i) {
    float gap = sorted[i] - sorted[i - 1];
    if (gap > tiny && (step == 0 || gap < step))
      step = gap;
  }
  if (step == 0 || range / step > 15.01f)
    return 0;
  for (float v : sorted) {
    float steps = (v - least) / step;
    if (std::fabs(steps - std::nearbyint(steps)) > 0.01f)
      return 0;
  }
  return step;
}

/// One row's block `block` in Q4_1: codes in [0, 15] for the f16 scale
/// and minimum. The minimum is the block's least value; the scale is the
/// step of the grid its values already lie on if they do (a quantized
/// checkpoint's block, kept to within the f16 rounding of its scale, where
/// spreading the range over 15 steps would move every value up to half a
/// step), else llama.cpp's: the range in 15 steps. The codes use the
/// stored f16 values.
std::pair<uint16_t, uint16_t> quantizeBlockWithMin(const float *row,
                                                   int64_t cols, int64_t block,
                                                   int8_t codes[TFM_BLOCK_SIZE]) {
  float values[TFM_BLOCK_SIZE];
  blockValues(row, cols, block, values);
  float least = *std::min_element(values, values + TFM_BLOCK_SIZE);
  float most = *std::max_element(values, values + TFM_BLOCK_SIZE);
  float grid = gridStep(values, least, most - least);
  uint16_t scale = tfm_float_to_f16(grid != 0 ? grid : (most - least) / 15.0f);
  uint16_t min = tfm_float_to_f16(least);
  float step = tfm_f16_to_float(scale), offset = tfm_f16_to_float(min);
  float inverse = step != 0 ? 1.0f / step : 0.0f;
  for (int i = 0; i < TFM_BLOCK_SIZE; ++i)
    codes[i] = int8_t(std::clamp(
        std::nearbyint((values[i] - offset) * inverse), 0.0f, 15.0f));
  return {scale, min};
}

/// Appends a block's codes (q4 formats) for a panel's 16 rows, `code(r,
/// e)` giving element e of row r: four 64-byte vectors, the low nibbles of
/// vector v elements 8v + i and the high ones 8v + 4 + i
/// (weight_formats.h).
template <typename Code>
void appendNibbleCodes(std::vector<uint8_t> &out, Code code) {
  for (int v = 0; v < TFM_BLOCK_SIZE / 8; ++v)
    for (int64_t r = 0; r < TFM_BLOCK_PANEL_ROWS; ++r)
      for (int i = 0; i < 4; ++i)
        out.push_back(uint8_t(code(r, 8 * v + i) | code(r, 8 * v + 4 + i) << 4));
}

void encodeBlockPanel(WeightFormat format, const float *rows, int64_t cols,
                      std::vector<uint8_t> &out) {
  constexpr int64_t kRows = TFM_BLOCK_PANEL_ROWS;
  int64_t blocks = tfm_blocks_per_row(cols);
  std::vector<int8_t> codes(kRows * blocks * TFM_BLOCK_SIZE);
  std::vector<uint16_t> scales(kRows * blocks), mins;
  bool withMin = format == WeightFormat::Q4_1;
  if (withMin)
    mins.resize(kRows * blocks);
  for (int64_t r = 0; r < kRows; ++r) {
    uint16_t channelScale = format == WeightFormat::Q8_CHANNEL
                                ? rowScale(rows + r * cols, cols)
                                : 0;
    for (int64_t b = 0; b < blocks; ++b) {
      int8_t *blockCodes = &codes[(r * blocks + b) * TFM_BLOCK_SIZE];
      if (format == WeightFormat::Q8_CHANNEL) {
        quantizeRowBlock(rows + r * cols, cols, b, channelScale, blockCodes);
        scales[b * kRows + r] = channelScale;
      } else if (withMin)
        std::tie(scales[b * kRows + r], mins[b * kRows + r]) =
            quantizeBlockWithMin(rows + r * cols, cols, b, blockCodes);
      else
        scales[b * kRows + r] =
            quantizeBlock(format, rows + r * cols, cols, b, blockCodes);
    }
  }
  for (uint16_t scale : scales)
    append16(out, scale);
  for (uint16_t min : mins)
    append16(out, min);
  auto code = [&](int64_t r, int64_t b, int64_t i) {
    return codes[(r * blocks + b) * TFM_BLOCK_SIZE + i];
  };
  for (int64_t b = 0; b < blocks; ++b) {
    if (codeBits(format) == 8) { // q8_0, q8_channel
      for (int g = 0; g < TFM_BLOCK_SIZE / 4; ++g)
        for (int64_t r = 0; r < kRows; ++r)
          for (int i = 0; i < 4; ++i)
            out.push_back(uint8_t(code(r, b, 4 * g + i) + 128));
      continue;
    }
    appendNibbleCodes(out, [&](int64_t r, int e) { return code(r, b, e); });
  }
}

} // namespace

namespace {

/// The file's blocks of a panel's 16 rows: block `s` of row `r`.
struct PanelBlocks {
  const uint8_t *rowBlocks;
  int64_t perRow, blockBytes; // blocks per row, bytes per block
  const uint8_t *operator()(int64_t r, int64_t s) const {
    return rowBlocks + (r * perRow + s) * blockBytes;
  }
};

/// Appends a Q4_K or Q5_K panel (the same metadata; Q5_K's nibbles are
/// 32 bytes further into its blocks, after the fifth bits, which follow
/// each block's nibbles in the panel).
void appendQ4KOrQ5KPanel(const PanelBlocks &blockOf, bool fifthBits,
                         std::vector<uint8_t> &out) {
  constexpr int64_t kRows = TFM_BLOCK_PANEL_ROWS;
  int64_t blocks = blockOf.perRow * TFM_K_SUPER_BLOCKS;
  // d, then dmin, [super-block][row]: the file's f16 bits.
  for (int half = 0; half < 2; ++half)
    for (int64_t s = 0; s < blockOf.perRow; ++s)
      for (int64_t r = 0; r < kRows; ++r) {
        const uint8_t *at = blockOf(r, s) + 2 * half;
        out.push_back(at[0]);
        out.push_back(at[1]);
      }
  // The 6-bit scales, then minimums, [block][row].
  for (int which = 0; which < 2; ++which)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t r = 0; r < kRows; ++r) {
        int scale, min;
        tfm_q4k_scale_min(int(b % TFM_K_SUPER_BLOCKS),
                          blockOf(r, b / TFM_K_SUPER_BLOCKS) + 4, &scale,
                          &min);
        out.push_back(uint8_t(which == 0 ? scale : min));
      }
  // Sub-block j of a Q4_K block is the low (j even) or high nibbles of its
  // bytes 32 · (j / 2) .. + 31 of nibbles; Q5_K's fifth bit of element e of
  // sub-block j is bit j of qh[e].
  int64_t nibbles = fifthBits ? 48 : 16;
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t j = b % TFM_K_SUPER_BLOCKS;
    auto block = [&](int64_t r) { return blockOf(r, b / TFM_K_SUPER_BLOCKS); };
    appendNibbleCodes(out, [&](int64_t r, int e) {
      uint8_t byte = block(r)[nibbles + 32 * (j / 2) + e];
      return j % 2 ? byte >> 4 : byte & 0x0F;
    });
    if (!fifthBits)
      continue;
    // Bit 2v (+ 1) of byte 4r + i: element 8v + i (8v + 4 + i).
    for (int64_t r = 0; r < kRows; ++r)
      for (int i = 0; i < 4; ++i) {
        int bits = 0;
        for (int part = 0; part < 8; ++part) {
          int e = 8 * (part / 2) + 4 * (part % 2) + i;
          bits |= ((block(r)[16 + e] >> j) & 1) << part;
        }
        out.push_back(uint8_t(bits));
      }
  }
}

/// Element n (0..255) of a Q6_K block, as its 6-bit code: element
/// 128h + 32k + l has its low 4 bits in ql[64h + 32(k % 2) + l] (the low
/// nibble for k < 2) and its high 2 bits at bit 2k of qh[32h + l].
int q6KCode(const uint8_t *block, int n) {
  int h = n / 128, k = n % 128 / 32, l = n % 32;
  uint8_t low = block[64 * h + 32 * (k % 2) + l];
  uint8_t high = block[128 + 32 * h + l];
  return (k < 2 ? low & 0x0F : low >> 4) | ((high >> (2 * k)) & 3) << 4;
}

void appendQ6KPanel(const PanelBlocks &blockOf, std::vector<uint8_t> &out) {
  constexpr int64_t kRows = TFM_BLOCK_PANEL_ROWS;
  int64_t blocks = blockOf.perRow * TFM_K_SUPER_BLOCKS;
  for (int64_t s = 0; s < blockOf.perRow; ++s)
    for (int64_t r = 0; r < kRows; ++r) {
      const uint8_t *d = blockOf(r, s) + 208;
      out.push_back(d[0]);
      out.push_back(d[1]);
    }
  // The scales of elements 16j .. 16j + 15 of a super-block are at 192 + j.
  for (int64_t b = 0; b < blocks; ++b)
    for (int half = 0; half < 2; ++half)
      for (int64_t r = 0; r < kRows; ++r)
        out.push_back(blockOf(r, b / TFM_K_SUPER_BLOCKS)
                          [192 + 2 * (b % TFM_K_SUPER_BLOCKS) + half]);
  for (int64_t b = 0; b < blocks; ++b) {
    auto code = [&](int64_t r, int e) {
      return q6KCode(blockOf(r, b / TFM_K_SUPER_BLOCKS),
                     int(b % TFM_K_SUPER_BLOCKS * TFM_BLOCK_SIZE + e));
    };
    appendNibbleCodes(out, [&](int64_t r, int e) { return code(r, e) & 0x0F; });
    // Nibble vector v holds elements 8v + i (low) and 8v + 4 + i (high).
    for (int h = 0; h < 2; ++h)
      for (int64_t r = 0; r < kRows; ++r)
        for (int i = 0; i < 4; ++i) {
          int bits = 0;
          for (int part = 0; part < 4; ++part) {
            int v = 2 * h + part / 2, e = 8 * v + 4 * (part % 2) + i;
            bits |= (code(r, e) >> 4) << (2 * part);
          }
          out.push_back(uint8_t(bits));
        }
  }
}

/// Appends an MXFP4 panel: each block's 16 exponent bytes [row], then its
/// E2M1 codes as Q4_0's nibbles (element j of a file block is the low
/// nibble of byte j, element j + 16 its high one).
void appendMxfp4Panel(const PanelBlocks &blockOf, std::vector<uint8_t> &out) {
  constexpr int64_t kRows = TFM_BLOCK_PANEL_ROWS;
  int64_t blocks = blockOf.perRow;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t r = 0; r < kRows; ++r)
      out.push_back(blockOf(r, b)[0]);
  for (int64_t b = 0; b < blocks; ++b)
    appendNibbleCodes(out, [&](int64_t r, int e) {
      uint8_t byte = blockOf(r, b)[1 + e % 16];
      return e < 16 ? byte & 0x0F : byte >> 4;
    });
}

} // namespace

void mlir::tfm::encodeCheckpointPanel(WeightFormat format,
                                      const uint8_t *rowBlocks, int64_t cols,
                                      std::vector<uint8_t> &out) {
  PanelBlocks blocks{rowBlocks, cols / checkpointBlockElements(format),
                     checkpointBlockBytes(format)};
  if (format == WeightFormat::MXFP4)
    appendMxfp4Panel(blocks, out);
  else if (format == WeightFormat::Q6_K)
    appendQ6KPanel(blocks, out);
  else
    appendQ4KOrQ5KPanel(blocks, format == WeightFormat::Q5_K, out);
}

void mlir::tfm::encodeRowMajor(WeightFormat format, const float *values,
                               int64_t count, std::vector<uint8_t> &out) {
  if (format == WeightFormat::F32) {
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(values);
    out.insert(out.end(), bytes, bytes + count * 4);
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    append16(out, format == WeightFormat::BF16 ? tfm_float_to_bf16(values[i])
                                               : tfm_float_to_f16(values[i]));
}

void mlir::tfm::encodePanel(WeightFormat format, const float *rows,
                            int64_t cols, std::vector<uint8_t> &out) {
  assert(!isCopiedFromCheckpoint(format) &&
         "K-quant and MXFP4 panels come from their blocks");
  if (isBlockFormat(format))
    return encodeBlockPanel(format, rows, cols, out);
  std::vector<float> transposed(TFM_PANEL_WIDTH * cols);
  for (int64_t j = 0; j < TFM_PANEL_WIDTH; ++j)
    for (int64_t k = 0; k < cols; ++k)
      transposed[k * TFM_PANEL_WIDTH + j] = rows[j * cols + k];
  encodeRowMajor(format, transposed.data(), transposed.size(), out);
}
