//===- WeightEncoding.h - f32 values into a stored weight format -*- C++ -*-===//
//
// The formats a weight may be stored in and the encoding of f32 values into
// each (runtime/include/tfm/weight_formats.h documents the byte layouts). Free of MLIR,
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

/// Q4_K, Q5_K and Q6_K are GGUF's, copied from a checkpoint's blocks
/// (encodeKQuantPanel); the others are encoded from f32 values.
enum class StoredFormat { F32, BF16, F16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K };

/// Whether the format's panels are copied from a checkpoint's blocks.
inline bool isKQuant(StoredFormat format) {
  return format == StoredFormat::Q4_K || format == StoredFormat::Q5_K ||
         format == StoredFormat::Q6_K;
}

/// Whether the format is block-quantized (always stored as block panels).
bool isBlockFormat(StoredFormat format);
/// The runtime's tfm_block_format (runtime/include/tfm/weight_formats.h) of a block
/// format: what the block kernels are told they read.
int blockFormatCode(StoredFormat format);
/// Rows per panel: 32 for floats, 16 for block formats.
int64_t panelRows(StoredFormat format);
/// Bytes of a [rows, cols] matrix in `format`, as panels or row-major.
int64_t storedMatrixBytes(StoredFormat format, int64_t rows, int64_t cols,
                          bool panels);

/// GGUF's K-quant blocks (ggml-common.h) of 256 elements: block_q4_K, 144
/// bytes (f16 d and dmin, 12 bytes of packed 6-bit scales and minimums for
/// 8 sub-blocks of 32, then 128 bytes of nibbles); block_q5_K, 176 bytes
/// (Q4_K's 16 bytes of d, dmin and scales, 32 of fifth bits, 128 of
/// nibbles); block_q6_K, 210 bytes (128 bytes of low 4 bits, 64 of high 2
/// bits, 16 int8 scales, f16 d).
constexpr int64_t kKQuantElements = 256, kQ4KBytes = 144, kQ5KBytes = 176,
                  kQ6KBytes = 210;
/// Bytes of one K-quant block in the file.
inline int64_t kQuantBlockBytes(StoredFormat format) {
  return format == StoredFormat::Q4_K   ? kQ4KBytes
         : format == StoredFormat::Q5_K ? kQ5KBytes
                                        : kQ6KBytes;
}
/// GGUF's name of a K-quant ("Q4_K", "Q5_K", "Q6_K").
inline const char *kQuantName(StoredFormat format) {
  return format == StoredFormat::Q4_K   ? "Q4_K"
         : format == StoredFormat::Q5_K ? "Q5_K"
                                        : "Q6_K";
}

/// Appends one Q4_K, Q5_K or Q6_K panel to `out`: 16 rows of `cols` elements (a
/// multiple of 256), given as each row's blocks in the file's format one
/// after another (cols / 256 blocks a row; rows missing from the matrix
/// all zero bytes). The numbers stay the file's exactly.
void encodeKQuantPanel(StoredFormat format, const uint8_t *rowBlocks,
                       int64_t cols, std::vector<uint8_t> &out);

/// Appends `count` f32 values in `format` (F32, BF16 or F16) to `out`.
void encodeRowMajor(StoredFormat format, const float *values, int64_t count,
                    std::vector<uint8_t> &out);
/// Appends one panel (panelRows(format) rows of `cols` values, row-major,
/// missing rows zero) in `format` (not a K-quant) to `out`.
void encodePanel(StoredFormat format, const float *rows, int64_t cols,
                 std::vector<uint8_t> &out);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_WEIGHTENCODING_H
