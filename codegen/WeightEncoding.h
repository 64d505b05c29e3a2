//===- WeightEncoding.h - f32 values into a stored weight format -*- C++ -*-===//
//
// The formats a weight may be stored in and the encoding of f32 values into
// each (runtime/weight_formats.h documents the byte layouts). Free of MLIR,
// so that the runtime's kernel tests encode weights exactly as the packager
// does.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_WEIGHTENCODING_H
#define TFM_CODEGEN_WEIGHTENCODING_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace mlir::tfm {

enum class StoredFormat { F32, BF16, F16, Q8_0, Q4_0, Q4_1 };

/// Whether the format is block-quantized (always stored as block panels).
bool isBlockFormat(StoredFormat format);
/// The runtime's tfm_block_format (runtime/weight_formats.h) of a block
/// format: what the block kernels are told they read.
int blockFormatCode(StoredFormat format);
/// Rows per panel: 32 for floats, 16 for block formats.
int64_t panelRows(StoredFormat format);
/// Bytes of a [rows, cols] matrix in `format`, as panels or row-major.
int64_t storedMatrixBytes(StoredFormat format, int64_t rows, int64_t cols,
                          bool panels);

/// IEEE binary16 and bfloat16 from f32, rounding to nearest even.
uint16_t floatToHalf(float value);
uint16_t floatToBFloat16(float value);
/// f32 from IEEE binary16, exactly (inline, so that the frontend decodes
/// F16 checkpoints with it without linking codegen).
inline float halfToFloat(uint16_t half) {
  uint32_t sign = uint32_t(half & 0x8000) << 16;
  uint32_t exponent = (half >> 10) & 0x1F, mantissa = half & 0x3FF;
  if (exponent == 0) { // zero or subnormal: mantissa * 2^-24
    float magnitude = float(mantissa) / 16777216.0f;
    return sign ? -magnitude : magnitude;
  }
  uint32_t bits = exponent == 31 ? sign | 0x7F800000 | mantissa << 13
                                 : sign | (exponent + 112) << 23 |
                                       mantissa << 13;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// Appends `count` f32 values in `format` (F32, BF16 or F16) to `out`.
void encodeRowMajor(StoredFormat format, const float *values, int64_t count,
                    std::vector<uint8_t> &out);
/// Appends one panel (panelRows(format) rows of `cols` values, row-major,
/// missing rows zero) in `format` to `out`.
void encodePanel(StoredFormat format, const float *rows, int64_t cols,
                 std::vector<uint8_t> &out);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_WEIGHTENCODING_H
